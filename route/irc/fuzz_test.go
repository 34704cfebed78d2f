package irc

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseReadsTagsPrefixCommandAndTrailing(t *testing.T) {
	t.Parallel()
	m, err := parse("@msgid=abc\\sdef;time=2026-12-03T10:00:00Z :alice!a@host PRIVMSG motion :hello there: you\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if m.tags["msgid"] != "abc def" || m.prefix != "alice!a@host" || m.command != "PRIVMSG" || m.param(0) != "motion" || m.param(1) != "hello there: you" || nick(m.prefix) != "alice" {
		t.Errorf("parsed %+v", m)
	}
	if _, err := parse(":only.a.prefix"); err == nil {
		t.Error("a line without a command parsed")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"PING :x", ":a!b@c PRIVMSG #x :hi", "@a=b;c :p 001 me :welcome", "", ":", "@", "@=;=;\\ :x y", "CMD  a  b :c d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		m, err := parse(line)
		if err != nil {
			return
		}
		if m.command == "" || strings.Contains(m.command, " ") {
			t.Errorf("parse(%q) gave the command %q", line, m.command)
		}
	})
}

func FuzzLines(f *testing.F) {
	for _, s := range []string{"**bold** and [a link](https://x.org)", "# Heading\n\n```\ncode\n```", "a\r\nb\x00c", strings.Repeat("é", 400)} {
		f.Add(s, 350)
	}
	f.Fuzz(func(t *testing.T, md string, max int) {
		if max < 4 || max > 1000 {
			return
		}
		for _, l := range lines(md, max) {
			if strings.ContainsAny(l, "\r\n\x00") || len(l) > max || l == "" {
				t.Errorf("lines(%q, %d) gave the line %q", md, max, l)
			}
			if utf8.ValidString(md) && !utf8.ValidString(l) {
				t.Errorf("lines(%q) cut a character: %q", md, l)
			}
		}
	})
}
