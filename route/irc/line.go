package irc

import (
	"errors"
	"strings"
)

// message is one IRC line, parsed: IRCv3 tags, the prefix (the sender),
// the command and its parameters, the trailing one last.
type message struct {
	tags    map[string]string
	prefix  string
	command string
	params  []string
}

// maxLine is the longest line read: 8191 bytes of tags and 512 of the
// message itself, as IRCv3 allows.
const maxLine = 8191 + 512

// parse reads one line, without its CR LF. It fails on an empty line and
// on one without a command; it never panics.
func parse(line string) (message, error) {
	var m message
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "@") {
		raw, rest, _ := strings.Cut(line[1:], " ")
		m.tags = map[string]string{}
		for _, t := range strings.Split(raw, ";") {
			k, v, _ := strings.Cut(t, "=")
			if k != "" {
				m.tags[k] = unescapeTag(v)
			}
		}
		line = strings.TrimLeft(rest, " ")
	}
	if strings.HasPrefix(line, ":") {
		m.prefix, line, _ = strings.Cut(line[1:], " ")
		line = strings.TrimLeft(line, " ")
	}
	for line != "" {
		if strings.HasPrefix(line, ":") {
			m.params = append(m.params, line[1:])
			break
		}
		var p string
		p, line, _ = strings.Cut(line, " ")
		line = strings.TrimLeft(line, " ")
		if m.command == "" {
			m.command = strings.ToUpper(p)
		} else {
			m.params = append(m.params, p)
		}
	}
	if m.command == "" {
		return message{}, errors.New("an IRC line without a command")
	}
	return m, nil
}

// unescapeTag undoes the escaping of an IRCv3 tag value.
func unescapeTag(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i+1 == len(v) {
			if v[i] != '\\' {
				b.WriteByte(v[i])
			}
			continue
		}
		i++
		switch v[i] {
		case ':':
			b.WriteByte(';')
		case 's':
			b.WriteByte(' ')
		case 'r':
			b.WriteByte('\r')
		case 'n':
			b.WriteByte('\n')
		default:
			b.WriteByte(v[i])
		}
	}
	return b.String()
}

// param is the i-th parameter, "" when there is none.
func (m message) param(i int) string {
	if i < len(m.params) {
		return m.params[i]
	}
	return ""
}

// nick is the nick of a prefix nick!user@host.
func nick(prefix string) string {
	n, _, _ := strings.Cut(prefix, "!")
	n, _, _ = strings.Cut(n, "@")
	return n
}

// clean makes s safe as one parameter of one line: no CR, LF or NUL,
// which would end the line or the protocol's trust in it.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == 0 {
			return ' '
		}
		return r
	}, s)
}

// validTarget reports whether t may be a PRIVMSG target: a nick or a
// channel, with no space, comma, colon at the start, or control byte.
func validTarget(t string) bool {
	if t == "" || strings.HasPrefix(t, ":") || len(t) > 200 {
		return false
	}
	for _, r := range t {
		if r <= ' ' || r == ',' || r == 0x7f {
			return false
		}
	}
	return true
}
