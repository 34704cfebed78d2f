package irc

import (
	"regexp"
	"strings"

	"github.com/agenthost/bots/route"
)

// bold is IRC's bold toggle.
const bold = "\x02"

var (
	strong = regexp.MustCompile(`\*\*([^*\n]+)\*\*|__([^_\n]+)__`)
	link   = regexp.MustCompile(`\[([^\]\n]+)\]\(([^)\s]+)\)`)
)

// lines turns markdown into the lines of text IRC shows, each at most max
// bytes: bold stays bold, a heading is bold, a link shows its address
// after its text, a code fence's lines stay as they are, empty lines go.
// No line holds CR, LF or NUL.
func lines(md string, max int) []string {
	var out []string
	fence := false
	for _, l := range strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n") {
		l = strings.TrimRight(clean(l), " \t")
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		if !fence {
			if h := strings.TrimLeft(l, "#"); h != l && strings.HasPrefix(h, " ") {
				l = bold + strings.TrimSpace(h) + bold
			}
			l = strong.ReplaceAllStringFunc(l, func(s string) string {
				m := strong.FindStringSubmatch(s)
				return bold + m[1] + m[2] + bold
			})
			l = link.ReplaceAllString(l, "$1 <$2>")
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		out = append(out, route.Split(l, max)...)
	}
	return out
}
