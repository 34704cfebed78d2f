package slack

import (
	"regexp"
	"strings"
)

var (
	strong = regexp.MustCompile(`\*\*([^*\n]+)\*\*|__([^_\n]+)__`)
	link   = regexp.MustCompile(`\[([^\]\n|]+)\]\((https?://[^)\s|<>]+)\)`)
	escape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
)

// mrkdwn turns markdown into Slack's mrkdwn: &, < and > escaped (so no
// text makes a mention or a link of its own), bold as *one star*, a
// heading as bold, a link to an http(s) address as <address|text>, code
// as it is.
func mrkdwn(md string) string {
	var out []string
	fence := false
	for _, l := range strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			out = append(out, escape.Replace(l))
			continue
		}
		if fence {
			out = append(out, escape.Replace(l))
			continue
		}
		if h := strings.TrimLeft(l, "#"); h != l && strings.HasPrefix(h, " ") {
			l = "**" + strings.TrimSpace(h) + "**"
		}
		var b strings.Builder
		rest := l
		for {
			loc := link.FindStringSubmatchIndex(rest)
			if loc == nil {
				b.WriteString(bold(escape.Replace(rest)))
				break
			}
			b.WriteString(bold(escape.Replace(rest[:loc[0]])))
			b.WriteString("<" + escape.Replace(rest[loc[4]:loc[5]]) + "|" + escape.Replace(rest[loc[2]:loc[3]]) + ">")
			rest = rest[loc[1]:]
		}
		out = append(out, b.String())
	}
	return strings.Join(out, "\n")
}

func bold(s string) string {
	return strong.ReplaceAllStringFunc(s, func(m string) string {
		g := strong.FindStringSubmatch(m)
		return "*" + g[1] + g[2] + "*"
	})
}
