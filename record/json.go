package record

import (
	"slices"
	"time"
	"unicode/utf8"
)

// appendJSON appends the record's JSON, as MarshalJSON answers it, to b.
// It writes exactly what encoding/json writes for the wire struct (HTML
// characters escaped, invalid UTF-8 replaced) without reflection: a read
// answers this on every request.
func (r Record) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"name":`...)
	b = appendString(b, r.Name)
	if len(r.Labels) > 0 {
		b = append(b, `,"labels":[`...)
		for i, l := range r.Labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, l)
		}
		b = append(b, ']')
	}
	b = appendField(b, "description", r.Description)
	b = appendField(b, "body", r.Body)
	b = appendField(b, "color", r.Color)
	b = appendField(b, "instructions", r.Instructions)
	b = appendField(b, "template", r.Template)
	b = appendField(b, "provider", r.Provider)
	b = appendField(b, "model", r.Model)
	b = appendField(b, "preset", r.Preset)
	b = appendField(b, "workspace", r.Workspace)
	b = appendField(b, "session", r.SessionName())
	b = appendField(b, "computer", r.Computer)
	if len(r.Connectors) > 0 {
		b = append(b, `,"connectors":{`...)
		aliases := make([]string, 0, len(r.Connectors))
		for a := range r.Connectors {
			aliases = append(aliases, a)
		}
		slices.Sort(aliases)
		for i, a := range aliases {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a)
			b = append(b, ':')
			b = appendString(b, r.Connectors[a])
		}
		b = append(b, '}')
	}
	b = appendField(b, "owner", r.Owner)
	b = appendTime(b, "createdAt", r.CreatedAt)
	b = appendTime(b, "updatedAt", r.UpdatedAt)
	return append(b, '}')
}

// appendField appends ,"key":"value" when value is not empty.
func appendField(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

func appendTime(b []byte, key string, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, `":"`...)
	b = t.UTC().AppendFormat(b, TimeLayout)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string exactly as encoding/json does with
// HTML escaping: quotes, backslashes and control characters escaped, <, >
// and & as \u003c, \u003e and \u0026, U+2028 and U+2029 escaped, and
// invalid UTF-8 as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
