package jsonx

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is the nesting encoding/json accepts: 10,000 arrays and
// objects, one inside the other.
const maxDepth = 10000

// Decoder reads one JSON text from a byte slice in a single pass, without
// reflection, checking it as it goes exactly as encoding/json does: a text
// it reads to End is one json.Valid accepts, and a string it returns is
// what json.Unmarshal decodes. The zero Decoder reads nothing; Reset gives
// it a text.
//
// Reading stops at the first fault: a byte that is not JSON, or a value of
// another kind than asked for. Every method then answers nothing, and End
// false.
type Decoder struct {
	data   []byte
	i      int  // the next byte to read
	depth  int  // the arrays and objects open around i
	failed bool // a fault was met
	read   bool // the text's one value was read
	key    []byte
	str    []byte
	open   bits // whether each open container is an object, for Skip
}

// Reset makes d read data from its start, keeping its buffers.
func (d *Decoder) Reset(data []byte) {
	d.data, d.i, d.depth, d.failed, d.read = data, 0, 0, false, false
}

// Valid reports whether data is one valid JSON text, as json.Valid does.
func Valid(data []byte) bool {
	var d Decoder
	d.Reset(data)
	d.Skip()
	return d.End()
}

// End reports whether d read its text's value without a fault and
// nothing but space follows it.
func (d *Decoder) End() bool {
	return d.read && !d.failed && skipSpace(d.data, d.i) == len(d.data)
}

// done notes that a value was read: at the top level, the text's one
// value; a second is a fault.
func (d *Decoder) done() {
	if d.depth == 0 {
		d.failed = d.failed || d.read
		d.read = true
	}
}

// Peek returns the first byte of the value that comes next, without
// reading it: '{', '[', '"', 't', 'f', 'n', or '-' or a digit for a
// number; 0 at the end of the text or after a fault. It does not check
// the value.
func (d *Decoder) Peek() byte {
	if d.failed {
		return 0
	}
	d.i = skipSpace(d.data, d.i)
	if d.i >= len(d.data) {
		return 0
	}
	return d.data[d.i]
}

// Offset returns the index in the text of the next byte d reads: after
// Peek, the first byte of the value that comes next.
func (d *Decoder) Offset() int { return d.i }

// Data returns the text d reads.
func (d *Decoder) Data() []byte { return d.data }

// Skip reads the value that comes next, checking it, and returns its
// bytes as they are in the text, without the space around it; nil after a
// fault.
func (d *Decoder) Skip() []byte {
	if d.failed {
		return nil
	}
	start := skipSpace(d.data, d.i)
	end := d.skipValue(start)
	if end < 0 {
		d.failed = true
		return nil
	}
	d.i = end
	d.done()
	return d.data[start:end]
}

// String reads the string that comes next and returns its contents
// decoded as json.Unmarshal decodes them (escapes resolved, each byte of
// invalid UTF-8 and each unpaired surrogate replaced by U+FFFD). The bytes
// are the text's own when the string holds no escape, else d's, valid
// until the next string is read. A value that is not a string is a fault.
func (d *Decoder) String() []byte {
	if d.failed {
		return nil
	}
	s, next, ok := d.readString(skipSpace(d.data, d.i), &d.str)
	if !ok {
		d.failed = true
		return nil
	}
	d.i = next
	d.done()
	return s
}

// Object reads the object that comes next, yielding the key of each
// member in order, decoded as String decodes it and valid until the next
// key: range over it, for key := range d.Object. The body reads the
// member's value (with Skip, String, Object, Array) or leaves it to be
// skipped; it must not read part of it. Leaving the loop early reads the
// rest of the object. A value that is not an object is a fault; so is a
// fault inside it, which ends the loop.
func (d *Decoder) Object(yield func(key []byte) bool) {
	if !d.enter('{') {
		return
	}
	more := true
	i := skipSpace(d.data, d.i)
	if i < len(d.data) && d.data[i] == '}' {
		d.leave(i)
		return
	}
	for {
		key, next, ok := d.readString(i, &d.key)
		if ok {
			next = skipSpace(d.data, next)
			ok = next < len(d.data) && d.data[next] == ':'
		}
		if !ok {
			d.failed = true
			return
		}
		start := skipSpace(d.data, next+1)
		d.i = start
		if more {
			more = yield(key)
			if d.failed {
				return
			}
		}
		if d.i == start && d.Skip() == nil {
			return
		}
		var closed bool
		if i, closed = d.next('}'); i < 0 {
			return
		}
		if closed {
			d.leave(i)
			return
		}
	}
}

// Array reads the array that comes next, yielding the index of each
// element in order: for i := range d.Array. The body reads the element
// (with Skip, String, Object, Array) or leaves it to be skipped, as in
// Object.
func (d *Decoder) Array(yield func(int) bool) {
	if !d.enter('[') {
		return
	}
	more := true
	i := skipSpace(d.data, d.i)
	if i < len(d.data) && d.data[i] == ']' {
		d.leave(i)
		return
	}
	for n := 0; ; n++ {
		d.i = i
		if more {
			more = yield(n)
			if d.failed {
				return
			}
		}
		if d.i == i && d.Skip() == nil {
			return
		}
		var closed bool
		if i, closed = d.next(']'); i < 0 {
			return
		}
		if closed {
			d.leave(i)
			return
		}
	}
}

// enter reads the opening byte of an object or array.
func (d *Decoder) enter(open byte) bool {
	if d.Peek() != open || d.depth == maxDepth {
		d.failed = true
		return false
	}
	d.depth++
	d.i++
	return true
}

// leave reads the closing byte at i.
func (d *Decoder) leave(i int) {
	d.depth--
	d.i = i + 1
	d.done()
}

// next reads what follows a member or element: a comma and the space
// after it, or the closing byte, which it leaves unread. It returns the
// index of the next member or element, or of the closing byte with closed
// true; -1 on a fault.
func (d *Decoder) next(closing byte) (i int, closed bool) {
	i = skipSpace(d.data, d.i)
	switch {
	case i >= len(d.data):
	case d.data[i] == closing:
		return i, true
	case d.data[i] == ',':
		return skipSpace(d.data, i+1), false
	}
	d.failed = true
	return -1, false
}

// plain says which bytes stand for themselves in a JSON string: ASCII
// from the space on, but the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// readString reads the string at data[i]: its decoded contents (the
// text's own bytes when nothing needs decoding, else written into *buf),
// the index after it, and false when there is no valid string at i.
func (d *Decoder) readString(i int, buf *[]byte) ([]byte, int, bool) {
	data := d.data
	if i >= len(data) || data[i] != '"' {
		return nil, i, false
	}
	start := i + 1
	j := start
	for j < len(data) {
		c := data[j]
		if plain[c] {
			j++
			continue
		}
		if c < utf8.RuneSelf {
			break
		}
		r, size := utf8.DecodeRune(data[j:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		j += size
	}
	if j < len(data) && data[j] == '"' {
		return data[start:j], j + 1, true
	}
	return unquote(data, start, j, buf)
}

// unquote decodes the string whose contents start at data[start], from
// data[j] on, where the first byte that needs decoding is, as
// encoding/json's unquote does.
func unquote(data []byte, start, j int, buf *[]byte) ([]byte, int, bool) {
	b := append((*buf)[:0], data[start:j]...)
	defer func() { *buf = b[:0] }()
	for j < len(data) {
		c := data[j]
		switch {
		case c == '"':
			return b, j + 1, true
		case c < 0x20:
			return nil, j, false
		case c == '\\':
			if j+1 >= len(data) {
				return nil, j, false
			}
			switch e := data[j+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(data, j+2)
				if r < 0 {
					return nil, j, false
				}
				j += 6
				if utf16.IsSurrogate(r) {
					if r2 := utf16.DecodeRune(r, pairedSurrogate(data, j)); r2 != utf8.RuneError {
						b = utf8.AppendRune(b, r2)
						j += 6
						continue
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return nil, j, false
			}
			j += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			j++
		default:
			r, size := utf8.DecodeRune(data[j:])
			b = utf8.AppendRune(b, r) // RuneError for a byte of invalid UTF-8
			j += size
		}
	}
	return nil, j, false
}

// pairedSurrogate returns the rune of the \uXXXX escape at data[j], -1
// when there is none.
func pairedSurrogate(data []byte, j int) rune {
	if j+1 < len(data) && data[j] == '\\' && data[j+1] == 'u' {
		return hex4(data, j+2)
	}
	return -1
}

// hex4 returns the value of the four hex digits at data[j], -1 when there
// are not four.
func hex4(data []byte, j int) rune {
	if j+4 > len(data) {
		return -1
	}
	var r rune
	for _, c := range data[j : j+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// bits is a stack of booleans: whether each open container is an object.
type bits struct {
	low  uint64
	high []uint64 // past 64 levels, rare
}

func (b *bits) set(n int, v bool) {
	if n >= 64 {
		w := n/64 - 1
		for len(b.high) <= w {
			b.high = append(b.high, 0)
		}
		if v {
			b.high[w] |= 1 << (n % 64)
		} else {
			b.high[w] &^= 1 << (n % 64)
		}
		return
	}
	if v {
		b.low |= 1 << n
	} else {
		b.low &^= 1 << n
	}
}

func (b *bits) get(n int) bool {
	if n >= 64 {
		return b.high[n/64-1]&(1<<(n%64)) != 0
	}
	return b.low&(1<<n) != 0
}

// skipValue reads the value at data[i], checking it: the index after it,
// or -1. It follows nesting in a loop, not by recursion, counting the
// containers d is already in towards maxDepth.
func (d *Decoder) skipValue(i int) int {
	data := d.data
	base := d.depth
	depth := base
	for {
		// a value starts at i.
		if i >= len(data) {
			return -1
		}
		switch c := data[i]; c {
		case '{', '[':
			if depth == maxDepth {
				return -1
			}
			d.open.set(depth-base, c == '{')
			depth++
			i = skipSpace(data, i+1)
			if i < len(data) && (c == '{' && data[i] == '}' || c == '[' && data[i] == ']') {
				depth--
				i++
				break // an empty object or array: a value ends
			}
			if c == '{' {
				if i = validKey(data, i); i < 0 {
					return -1
				}
			}
			continue // a member's value starts
		case '"':
			if i = validString(data, i); i < 0 {
				return -1
			}
		case 't':
			i = literal(data, i, "true")
		case 'f':
			i = literal(data, i, "false")
		case 'n':
			i = literal(data, i, "null")
		default:
			i = number(data, i)
		}
		if i < 0 {
			return -1
		}
		// a value ended before i: what follows closes its containers,
		// or separates it from the next.
		for {
			if depth == base {
				return i
			}
			i = skipSpace(data, i)
			if i >= len(data) {
				return -1
			}
			inObject := d.open.get(depth - base - 1)
			c := data[i]
			if c == '}' && inObject || c == ']' && !inObject {
				depth--
				i++
				continue
			}
			if c != ',' {
				return -1
			}
			i = skipSpace(data, i+1)
			if inObject {
				if i = validKey(data, i); i < 0 {
					return -1
				}
			}
			break
		}
	}
}

// validKey reads an object's key at data[i] with the colon after it: the
// index after the space that follows the colon, or -1.
func validKey(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = validString(data, i); i < 0 {
		return -1
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipSpace(data, i+1)
}

// validString reads the string at data[i], a quote: the index after it,
// or -1. Any byte from 0x20 on may appear unescaped, as encoding/json
// allows.
func validString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		c := data[i]
		if plain[c] || c >= utf8.RuneSelf {
			continue
		}
		switch {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		}
		// a backslash
		i++
		if i >= len(data) {
			return -1
		}
		switch data[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if hex4(data, i+1) < 0 {
				return -1
			}
			i += 4
		default:
			return -1
		}
	}
	return -1
}

// literal reads lit at data[i]: the index after it, or -1.
func literal(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// number reads the number at data[i]: the index after it, or -1.
func number(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// KeyIs reports whether key, decoded, names the struct field whose JSON
// name is name, as json.Unmarshal matches them: exactly, or else without
// regard to case, by Unicode's simple folding (so "ſ" is "s" and "K",
// the Kelvin sign, is "k"). It is the field's match when no other field's
// name is name without regard to case.
func KeyIs(key []byte, name string) bool {
	if len(key) == len(name) {
		ascii := true
		for i := range len(key) {
			c, n := key[i], name[i]
			if c >= utf8.RuneSelf || n >= utf8.RuneSelf {
				ascii = false
				break
			}
			if c != n && lower(c) != lower(n) {
				return false
			}
		}
		if ascii {
			return true
		}
	}
	return strings.EqualFold(string(key), name)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
