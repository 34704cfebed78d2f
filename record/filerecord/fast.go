package filerecord

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// fast reads a frontmatter written in exactly the form Encode writes into
// d's map, which must be empty, with the values of the fields many bots
// repeat shared (see value): the map the YAML decoder gives for it. It
// answers false for anything else, which the YAML decoder then reads. It
// is what makes a load of many bots fast; a differential fuzz test
// (FuzzFastDecodeAgreesWithYAML) holds it to the YAML decoder's answers.
//
// The form: lines ending in \n; "key: scalar" with a record key at the start
// of the line; or "key:" followed by one or more "- scalar" lines (a list) or
// "  name: scalar" lines (a map). A scalar is plain as isPlain allows, a
// time in record.TimeLayout, or double-quoted with the escapes appendQuoted
// writes. No comments, blank lines, repeated keys or other indentation.
func (d *decoder) fast(front []byte) (map[string]any, bool) {
	if len(front) == 0 || front[len(front)-1] != '\n' || bytes.IndexByte(front, '\r') >= 0 {
		return nil, false
	}
	m := d.front
	rest := front
	for len(rest) > 0 {
		line, after := cut(rest)
		rest = after
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return nil, false
		}
		k, ok := recordKey(line[:colon])
		if !ok {
			return nil, false
		}
		if _, dup := m[k]; dup {
			return nil, false
		}
		switch {
		case colon == len(line)-1:
			var v any
			var ok bool
			v, rest, ok = d.block(k, rest)
			if !ok {
				return nil, false
			}
			m[k] = v
		case line[colon+1] == ' ':
			v, ok := d.value(k, line[colon+2:])
			if !ok {
				return nil, false
			}
			m[k] = v
		default:
			return nil, false
		}
	}
	return m, true
}

// value reads a whole scalar of the field k, boxed. The value of a field
// many bots repeat (sharedKey) is kept, up to maxShared of them, and given
// again for the same bytes: a load of many bots then holds one string for
// each body, model or owner, not one per bot, and boxes it once.
func (d *decoder) value(k string, b []byte) (any, bool) {
	shared := sharedKey(k)
	if shared {
		if v, ok := d.shared[string(b)]; ok {
			return v, true
		}
	}
	s, ok := scalar(b)
	if !ok {
		return nil, false
	}
	var v any = s
	if shared && len(d.shared) < maxShared {
		d.shared[string(b)] = v
	}
	return v, true
}

// sharedKey reports whether the field k is one whose values many bots
// repeat: not the id, name, description, workspace or times, which are
// each bot's own.
func sharedKey(k string) bool {
	switch k {
	case "labels", "body", "color", "template", "provider", "model", "preset",
		"session", "computer", "connectors", "tools", "owner":
		return true
	}
	return false
}

// cut returns the first line of b without its \n, and the rest.
func cut(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	return b[:i], b[i+1:]
}

// recordKey returns the record key b spells, as a constant string so that
// reading it allocates nothing.
func recordKey(b []byte) (string, bool) {
	switch string(b) {
	case "id":
		return "id", true
	case "name":
		return "name", true
	case "labels":
		return "labels", true
	case "description":
		return "description", true
	case "body":
		return "body", true
	case "color":
		return "color", true
	case "instructions":
		return "instructions", true
	case "template":
		return "template", true
	case "provider":
		return "provider", true
	case "model":
		return "model", true
	case "preset":
		return "preset", true
	case "workspace":
		return "workspace", true
	case "session":
		return "session", true
	case "computer":
		return "computer", true
	case "connectors":
		return "connectors", true
	case "tools":
		return "tools", true
	case "owner":
		return "owner", true
	case "createdAt":
		return "createdAt", true
	case "updatedAt":
		return "updatedAt", true
	}
	return "", false
}

// block reads the list or map below a "key:" line of the field k.
func (d *decoder) block(k string, rest []byte) (any, []byte, bool) {
	switch {
	case bytes.HasPrefix(rest, []byte("- ")):
		list := make([]any, 0, 4)
		for bytes.HasPrefix(rest, []byte("- ")) {
			line, after := cut(rest)
			v, ok := d.value(k, line[2:])
			if !ok {
				return nil, nil, false
			}
			list = append(list, v)
			rest = after
		}
		return list, rest, true
	case bytes.HasPrefix(rest, []byte("  ")):
		m := make(map[string]any, 2)
		for bytes.HasPrefix(rest, []byte("  ")) {
			line, after := cut(rest)
			k, v, ok := pair(line[2:])
			if !ok {
				return nil, nil, false
			}
			if _, dup := m[k]; dup {
				return nil, nil, false
			}
			m[k] = v
			rest = after
		}
		return m, rest, true
	}
	return nil, nil, false
}

// pair reads "name: scalar" where name is a plain or double-quoted scalar.
func pair(line []byte) (string, string, bool) {
	var key, val []byte
	if len(line) > 0 && line[0] == '"' {
		end := quotedEnd(line)
		if end < 0 || !bytes.HasPrefix(line[end:], []byte(": ")) {
			return "", "", false
		}
		key, val = line[:end], line[end+2:]
	} else {
		i := bytes.Index(line, []byte(": "))
		if i < 0 {
			return "", "", false
		}
		key, val = line[:i], line[i+2:]
	}
	k, ok := scalar(key)
	if !ok {
		return "", "", false
	}
	v, ok := scalar(val)
	if !ok {
		return "", "", false
	}
	return k, v, true
}

// quotedEnd returns the index just past the double-quoted scalar line
// starts with, or -1.
func quotedEnd(line []byte) int {
	for i := 1; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// scalar reads a whole plain, time or double-quoted scalar.
func scalar(b []byte) (string, bool) {
	if len(b) > 0 && b[0] == '"' {
		return unquote(b)
	}
	s := string(b)
	if isPlain(s) || isStamp(s) {
		return s, true
	}
	return "", false
}

// unquote reads a double-quoted scalar that is all of b, with only the
// characters and escapes appendQuoted writes.
func unquote(b []byte) (string, bool) {
	if len(b) < 2 || b[len(b)-1] != '"' {
		return "", false
	}
	b = b[1 : len(b)-1]
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return "", false
		case c == '\\':
			if i+1 >= len(b) {
				return "", false
			}
			i += 2
			switch b[i-1] {
			case '"', '\\':
				out = append(out, b[i-1])
			case 'n':
				out = append(out, '\n')
			case 't':
				out = append(out, '\t')
			case 'r':
				out = append(out, '\r')
			case 'u', 'U':
				n := 4
				if b[i-1] == 'U' {
					n = 8
				}
				if i+n > len(b) {
					return "", false
				}
				r, ok := hexRune(b[i : i+n])
				if !ok || !utf8.ValidRune(r) {
					return "", false
				}
				out = utf8.AppendRune(out, r)
				i += n
			default:
				return "", false
			}
		case c < utf8.RuneSelf:
			if c < 0x20 || c == 0x7f {
				return "", false
			}
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 || r < 0xa0 || !unicode.IsPrint(r) || r == 0xfeff {
				return "", false
			}
			out = append(out, b[i:i+size]...)
			i += size
		}
	}
	return string(out), true
}

func hexRune(h []byte) (rune, bool) {
	var r rune
	for _, c := range h {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
