package telegram

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var tag = regexp.MustCompile(`</?(b|code|pre|a)( href="[^"<>]*")?>`)

// balanced reports whether the tags of h pair up, none inside code or pre,
// and no < or > stands outside a tag.
func balanced(h string) bool {
	var stack []string
	rest := h
	for {
		loc := tag.FindStringSubmatchIndex(rest)
		text := rest
		if loc != nil {
			text = rest[:loc[0]]
		}
		if strings.ContainsAny(text, "<>") {
			return false
		}
		if loc == nil {
			return len(stack) == 0
		}
		t, name := rest[loc[0]:loc[1]], rest[loc[2]:loc[3]]
		if strings.HasPrefix(t, "</") {
			if len(stack) == 0 || stack[len(stack)-1] != name {
				return false
			}
			stack = stack[:len(stack)-1]
		} else {
			if n := len(stack); n > 0 && (stack[n-1] == "code" || stack[n-1] == "pre") {
				return false
			}
			stack = append(stack, name)
		}
		rest = rest[loc[1]:]
	}
}

func TestPartsConvertMarkdownToTelegramHTML(t *testing.T) {
	t.Parallel()
	got := parts("# Plan\n**bold** & `a<b` [docs](https://x.org/?a=1&b=2)\n```\nif a < b {}\n```")
	want := "<b>Plan</b>\n<b>bold</b> &amp; <code>a&lt;b</code> <a href=\"https://x.org/?a=1&amp;b=2\">docs</a>\n<pre>if a &lt; b {}\n</pre>"
	if len(got) != 1 || got[0] != want {
		t.Errorf("parts gave %q, want %q", got, want)
	}
}

func FuzzParts(f *testing.F) {
	for _, s := range []string{"**a `b` c**", "```\n**x**", "[a](https://b)**c**", "<>&\"'", strings.Repeat("&", 5000), "`**`**"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		for _, p := range parts(md) {
			if utf8.RuneCountInString(p) > 4096 {
				t.Errorf("a part of %d characters", utf8.RuneCountInString(p))
			}
			if !balanced(p) {
				t.Errorf("parts(%q) gave %q, whose tags do not pair", md, p)
			}
		}
	})
}
