package telegram

import (
	"html"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/bots/route"
)

var (
	strong = regexp.MustCompile(`\*\*([^*\n]+)\*\*|__([^_\n]+)__`)
	code   = regexp.MustCompile("`([^`\n]+)`")
	link   = regexp.MustCompile(`\[([^\]\n]+)\]\((https?://[^)\s]+)\)`)
)

// parts turns markdown into the HTML Telegram renders, in messages of at
// most 4096 characters: text escaped, **bold**, `code`, fenced code as
// <pre>, links to http(s) addresses as links. Every tag a part opens it
// closes. The markdown is split before it is converted, with room for
// what escaping adds; a part that still grows past the limit is sent as
// escaped text alone.
func parts(md string) []string {
	var out []string
	for _, p := range route.Split(md, 3000) {
		h := toHTML(p)
		if utf8.RuneCountInString(h) > limits.MaxText {
			// escaping makes a character at most five (&#34;)
			for _, q := range route.Split(p, limits.MaxText/5) {
				out = append(out, html.EscapeString(q))
			}
			continue
		}
		out = append(out, h)
	}
	return out
}

// toHTML converts one part.
func toHTML(md string) string {
	var b strings.Builder
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			if fence {
				b.WriteString("</pre>")
			} else {
				b.WriteString("<pre>")
			}
			fence = !fence
			continue
		}
		if fence {
			b.WriteString(html.EscapeString(l))
		} else {
			b.WriteString(inline(l))
		}
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	if fence {
		b.WriteString("</pre>")
	}
	return b.String()
}

// inline converts one line outside code fences: a heading is bold, a
// code span is code and holds nothing else, the rest is escaped text with
// bold and links.
func inline(l string) string {
	if h := strings.TrimLeft(l, "#"); h != l && strings.HasPrefix(h, " ") {
		return "<b>" + html.EscapeString(strings.TrimSpace(h)) + "</b>"
	}
	var b strings.Builder
	rest := l
	for {
		loc := code.FindStringSubmatchIndex(rest)
		if loc == nil {
			b.WriteString(styledText(rest))
			return b.String()
		}
		b.WriteString(styledText(rest[:loc[0]]))
		b.WriteString("<code>" + html.EscapeString(rest[loc[2]:loc[3]]) + "</code>")
		rest = rest[loc[1]:]
	}
}

// styledText is text with bold and links, escaped.
func styledText(t string) string {
	t = html.EscapeString(t)
	t = strong.ReplaceAllString(t, "<b>$1$2</b>")
	return link.ReplaceAllStringFunc(t, func(s string) string {
		m := link.FindStringSubmatch(s)
		return `<a href="` + m[2] + `">` + m[1] + "</a>"
	})
}
