// Package jsonx is the one hand-written JSON of the hot paths, without
// reflection and held to encoding/json by differential tests: it writes
// strings (with or without HTML escaping) and times at milliseconds byte
// for byte as encoding/json writes them, and reads a text in one pass with
// a Decoder that accepts what encoding/json accepts and decodes the same
// values.
package jsonx

import (
	"time"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string exactly as encoding/json's Marshal
// does: quotes, backslashes and control characters escaped, <, > and & as
// \u003c, \u003e and \u0026, U+2028 and U+2029 escaped, and invalid UTF-8
// as \ufffd.
func AppendString(b []byte, s string) []byte { return appendString(b, s, true) }

// AppendStringNoHTML appends s as a JSON string exactly as an
// encoding/json Encoder with SetEscapeHTML(false) does: as AppendString,
// but <, > and & are written as they are.
func AppendStringNoHTML(b []byte, s string) []byte { return appendString(b, s, false) }

// safeHTML and safeNoHTML say which bytes a JSON string holds as they
// are, with and without HTML escaping; bytes from utf8.RuneSelf up start a
// rune, and are looked at whole.
var safeHTML, safeNoHTML = safeSet(true), safeSet(false)

func safeSet(html bool) (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&')
	}
	return t
}

func appendString(b []byte, s string, html bool) []byte {
	safe := &safeNoHTML
	if html {
		safe = &safeHTML
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if safe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				// the byte itself starts the next run.
				b = append(b, '\\')
				start = i
				i++
				continue
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

// AppendStringInString appends s as AppendString writes it, quotes
// included, escaped again as the content of a JSON string without HTML
// escaping: exactly what AppendStringNoHTML writes for that text, without
// its own two quotes, in one pass. A JSON text written with it (and its
// other characters escaped the same way) is what a read answers as a
// string, without being written once and escaped a second time.
func AppendStringInString(b []byte, s string) []byte {
	// Every escape AppendString writes is ASCII: escaping it again
	// doubles its backslash, and a quote or backslash it escapes gains
	// one more pair. Safe bytes stay as they are in both.
	b = append(b, '\\', '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if safeHTML[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"':
				b = append(b, `\\\"`...)
			case '\\':
				b = append(b, `\\\\`...)
			case '\n':
				b = append(b, `\\n`...)
			case '\r':
				b = append(b, `\\r`...)
			case '\t':
				b = append(b, `\\t`...)
			case '\b':
				b = append(b, `\\b`...)
			case '\f':
				b = append(b, `\\f`...)
			default:
				b = append(b, '\\', '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, `\\u202`...)
			b = append(b, hexDigits[r&0xf])
		default:
			i += size // a rune both write as it is
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '\\', '"')
}

// MillisLayout is the layout AppendTimeMillis writes: UTC with
// milliseconds.
const MillisLayout = "2006-01-02T15:04:05.000Z07:00"

// AppendTimeMillis appends t.UTC().AppendFormat(b, MillisLayout), written
// directly for the years 0 to 9999.
func AppendTimeMillis(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, MillisLayout)
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(b,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}
