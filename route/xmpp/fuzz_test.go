package xmpp

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestStyledShowsMarkdownAsMessageStyling(t *testing.T) {
	t.Parallel()
	got := styled("# Plan\n**bold** and __also__, [docs](https://x.org)\n```\n**kept** in code\n```")
	want := "*Plan*\n*bold* and *also*, docs <https://x.org>\n```\n**kept** in code\n```"
	if got != want {
		t.Errorf("styled gave %q, want %q", got, want)
	}
}

func FuzzStyled(f *testing.F) {
	for _, s := range []string{"**b**", "a\x00b\x1bc\uFFFE", "```\n#x\n```", "\xff\xfe", "[a](b)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := styled(md)
		var b strings.Builder
		if err := xml.EscapeText(&b, []byte(out)); err != nil {
			t.Fatal(err)
		}
		var v struct {
			Body string `xml:"body"`
		}
		if err := xml.Unmarshal([]byte("<m><body>"+b.String()+"</body></m>"), &v); err != nil {
			t.Errorf("styled(%q) = %q, which XML cannot carry: %v", md, out, err)
		}
	})
}
