package xmpp

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

var (
	strong = regexp.MustCompile(`\*\*([^*\n]+)\*\*|__([^_\n]+)__`)
	link   = regexp.MustCompile(`\[([^\]\n]+)\]\(([^)\s]+)\)`)
)

// styled turns markdown into the message styling XMPP clients show
// (XEP-0393): bold is *one star*, a heading is bold, a link shows its
// address after its text, code stays as it is. It drops what XML cannot
// carry (control characters but tab and line breaks, invalid UTF-8), so
// no text can break the stream.
func styled(md string) string {
	var out []string
	fence := false
	for _, l := range strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			out = append(out, l)
			continue
		}
		if !fence {
			if h := strings.TrimLeft(l, "#"); h != l && strings.HasPrefix(h, " ") {
				l = "*" + strings.TrimSpace(h) + "*"
			}
			l = strong.ReplaceAllStringFunc(l, func(s string) string {
				m := strong.FindStringSubmatch(s)
				return "*" + m[1] + m[2] + "*"
			})
			l = link.ReplaceAllString(l, "$1 <$2>")
		}
		out = append(out, l)
	}
	return xmlSafe(strings.Join(out, "\n"))
}

// xmlSafe drops the characters XML 1.0 cannot hold, and invalid UTF-8.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n':
			return r
		case r == utf8.RuneError || r < 0x20 || r == 0xFFFE || r == 0xFFFF:
			return -1
		}
		return r
	}, s)
}
