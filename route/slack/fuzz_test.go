package slack

import (
	"regexp"
	"strings"
	"testing"
)

var ours = regexp.MustCompile(`<https?://[^|<>\s]+\|[^<>]*>`)

func TestMrkdwnEscapesAndLinks(t *testing.T) {
	t.Parallel()
	got := mrkdwn("# Plan\n**bold** <!channel> & [docs](https://x.org/?a=1&b=2)\n```\na < b\n```")
	want := "*Plan*\n*bold* &lt;!channel&gt; &amp; <https://x.org/?a=1&amp;b=2|docs>\n```\na &lt; b\n```"
	if got != want {
		t.Errorf("mrkdwn gave %q, want %q", got, want)
	}
}

func FuzzMrkdwn(f *testing.F) {
	for _, s := range []string{"<@U1>", "[a](https://b)", "**[a](http://b)**", "&amp;", "[<!here>](https://x)", "```\n<x>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := ours.ReplaceAllString(mrkdwn(md), "")
		if strings.ContainsAny(out, "<>") {
			t.Errorf("mrkdwn(%q) = %q: a < or > outside a link it made", md, mrkdwn(md))
		}
	})
}
