package filerecord

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/agenthost/bots/internal/frontmatter"
	"github.com/agenthost/bots/record"
)

// delim opens and closes the frontmatter of a bot.md.
const delim = "---\n"

// Encode returns the bytes of a bot.md holding r: the fields as YAML
// frontmatter between two --- lines, in the order of the spec's example, absent
// fields left out and the session name always written. Name and description
// are written only when set (a bot whose persona is not in an AGENTS.md of
// this host keeps them here). Instructions, when set, go below the closing
// --- line after one blank line, and the file ends in a newline; Decode undoes
// exactly that, so Decode(Encode(r)) equals r for every valid record.
//
// A string is written plain when YAML reads it back as the same string and
// double-quoted otherwise. Bytes that are not UTF-8 are written as U+FFFD: a
// record holds text.
func Encode(r record.Record) []byte {
	b := make([]byte, 0, 256+len(r.Instructions))
	b = append(b, delim...)
	b = field(b, "id", r.ID)
	b = field(b, "name", r.Name)
	b = field(b, "description", r.Description)
	if len(r.Labels) > 0 {
		b = append(b, "labels:\n"...)
		for _, l := range r.Labels {
			b = append(b, "- "...)
			b = appendScalar(b, l)
			b = append(b, '\n')
		}
	}
	b = field(b, "body", r.Body)
	b = field(b, "color", r.Color)
	b = field(b, "template", r.Template)
	b = field(b, "provider", r.Provider)
	b = field(b, "model", r.Model)
	b = field(b, "preset", r.Preset)
	b = field(b, "session", r.SessionName())
	b = field(b, "workspace", r.Workspace)
	b = field(b, "computer", r.Computer)
	if len(r.Connectors) > 0 {
		b = append(b, "connectors:\n"...)
		for _, alias := range slices.Sorted(maps.Keys(r.Connectors)) {
			b = append(b, "  "...)
			b = appendScalar(b, alias)
			b = append(b, ": "...)
			b = appendScalar(b, r.Connectors[alias])
			b = append(b, '\n')
		}
	}
	if len(r.Tools) > 0 {
		b = append(b, "tools:\n"...)
		for _, t := range r.Tools {
			b = append(b, "- "...)
			b = appendScalar(b, t)
			b = append(b, '\n')
		}
	}
	b = field(b, "owner", r.Owner)
	b = stamp(b, "createdAt", r.CreatedAt.IsZero(), record.FormatTime(r.CreatedAt))
	b = stamp(b, "updatedAt", r.UpdatedAt.IsZero(), record.FormatTime(r.UpdatedAt))
	b = append(b, delim...)
	if r.Instructions != "" {
		b = append(b, '\n')
		b = append(b, strings.ToValidUTF8(r.Instructions, "\uFFFD")...)
		b = append(b, '\n')
	}
	return b
}

func field(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, key...)
	b = append(b, ": "...)
	b = appendScalar(b, v)
	return append(b, '\n')
}

// stamp writes a time. A time in years 0 to 9999 formats to digits, dashes,
// colons, a T, a dot and a Z, which YAML reads as a string; any other is
// quoted (and refused by Decode, as a record time must be).
func stamp(b []byte, key string, zero bool, v string) []byte {
	if zero {
		return b
	}
	b = append(b, key...)
	b = append(b, ": "...)
	if isStamp(v) {
		b = append(b, v...)
	} else {
		b = appendQuoted(b, v)
	}
	return append(b, '\n')
}

// isStamp reports whether v has the exact shape of record.TimeLayout in UTC.
func isStamp(v string) bool {
	const shape = "dddd-dd-ddTdd:dd:dd.dddZ"
	if len(v) != len(shape) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if shape[i] == 'd' {
			if v[i] < '0' || v[i] > '9' {
				return false
			}
		} else if v[i] != shape[i] {
			return false
		}
	}
	return true
}

// appendScalar writes s plain when that is safe and double-quoted otherwise.
func appendScalar(b []byte, s string) []byte {
	if isPlain(s) {
		return append(b, s...)
	}
	return appendQuoted(b, s)
}

// reserved are the plain words YAML (1.1 or 1.2) may read as something other
// than a string. They are compared in lower case.
var reserved = []string{"null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan", "inf", "infinity"}

// isPlain reports whether s can be written as a plain YAML scalar and read
// back as the same string. It is conservative: it starts with an ASCII letter
// or a slash (so never a number, a time, an indicator or a tag), holds only
// letters, digits, single spaces and _ . / @ + - :, has no ": " or " #" in it
// (a key or a comment), and is no reserved word.
func isPlain(s string) bool {
	if s == "" || !(isLetter(s[0]) || s[0] == '/') {
		return false
	}
	if last := s[len(s)-1]; last == ' ' || last == ':' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLetter(c), '0' <= c && c <= '9':
		case c == '_', c == '.', c == '/', c == '@', c == '+', c == '-':
		case c == ':':
			if s[i+1] == ' ' {
				return false
			}
		case c == ' ':
			if n := s[i+1]; n == ' ' || n == '#' {
				return false
			}
		default:
			return false
		}
	}
	if len(s) <= len("infinity") {
		for _, w := range reserved {
			if strings.EqualFold(s, w) {
				return false
			}
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

const hexDigits = "0123456789ABCDEF"

// appendQuoted writes s as a YAML double-quoted scalar: printable characters
// as they are, the rest as escapes YAML and JSON share (\uXXXX), and
// characters beyond the BMP that are not printable as \UXXXXXXXX.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch r {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\t':
			b = append(b, `\t`...)
		case '\r':
			b = append(b, `\r`...)
		default:
			if r < utf8.RuneSelf && r >= 0x20 && r != 0x7f || r >= 0xa0 && unicode.IsPrint(r) && r != 0xfeff {
				b = utf8.AppendRune(b, r)
				continue
			}
			if r > 0xffff {
				b = append(b, `\U`...)
				for shift := 28; shift >= 0; shift -= 4 {
					b = append(b, hexDigits[r>>shift&0xf])
				}
				continue
			}
			b = append(b, `\u`...)
			for shift := 12; shift >= 0; shift -= 4 {
				b = append(b, hexDigits[r>>shift&0xf])
			}
		}
	}
	return append(b, '"')
}

// decoder reads bot.md files one after another: what reading one needs -
// the map its frontmatter is read into, the buffer its bytes are read into,
// the hash of its etag - is made once per decoder, not once per file, and
// the values many bots repeat (a body, a model, an owner) are one string
// each. A load gives each of its readers a decoder; Decode takes one from a
// pool. A decoder is not safe for concurrent use.
type decoder struct {
	front  map[string]any // the frontmatter being read; cleared after each file
	shared map[string]any // boxed values of the fields many bots repeat (see sharedKey)
	buf    []byte         // the file being read (readBot); nothing keeps it
	etags  etagHasher
}

// maxShared bounds the values a decoder keeps to share: a decoder that
// meets more distinct values than that makes the others for each file, as
// without sharing.
const maxShared = 512

func newDecoder() *decoder {
	return &decoder{
		front:  make(map[string]any, 16),
		shared: make(map[string]any),
	}
}

// decoderPool holds the decoders Decode uses.
var decoderPool = sync.Pool{New: func() any { return newDecoder() }}

// Decode reads a bot.md whose folder is id. The folder name is the bot's id:
// a frontmatter naming another one is refused, naming both, and one that
// names none is read as the folder's. Name is not required. A field set to
// null reads as absent, and so does an empty list or map. A missing session
// reads as record.DefaultSession.
//
// The error is one sentence saying what is wrong with the file: too large,
// no frontmatter, YAML that is broken or uses anchors and aliases, a key a
// bot does not have, a field of the wrong type or form.
func Decode(id string, data []byte) (record.Record, error) {
	d := decoderPool.Get().(*decoder)
	defer decoderPool.Put(d)
	return d.decode(id, data)
}

// decode is Decode with d's map and shared values. Nothing it returns
// refers to data.
func (d *decoder) decode(id string, data []byte) (record.Record, error) {
	if err := record.CheckSlug(id); err != nil {
		return record.Record{}, fmt.Errorf("the folder name is no bot id: %w", err)
	}
	if len(data) > frontmatter.MaxSize {
		return record.Record{}, fmt.Errorf("the file is %w", frontmatter.ErrTooLarge)
	}
	doc, err := frontmatter.Split(data)
	if err != nil {
		return record.Record{}, fmt.Errorf("the file's %w", err)
	}
	if !doc.Has {
		return record.Record{}, errors.New("the file has no frontmatter: a bot.md starts with a --- line")
	}
	defer clear(d.front)
	m, ok := d.fast(doc.Front)
	if !ok {
		clear(d.front)
		m, err = frontmatter.Decode(doc.Front)
		if err != nil {
			return record.Record{}, fmt.Errorf("the frontmatter is not a bot record: %w", err)
		}
	}
	p, err := record.PatchFromMap(m)
	if err != nil {
		return record.Record{}, fmt.Errorf("the frontmatter is not a bot record: %w", err)
	}
	if p.ID.Has() && p.ID.V != id {
		return record.Record{}, fmt.Errorf("the frontmatter names id %q but the file is in the folder of %q", p.ID.V, id)
	}
	r := fromPatch(id, p)
	// A file whose opening --- line ends in \r\n was written by a person
	// with CRLF line endings (Encode writes \n): its lines end in \r\n.
	crlf := doc.FrontStart >= 2 && data[doc.FrontStart-2] == '\r'
	r.Instructions = instructions(doc.Body, crlf)
	if r.Instructions != "" && p.Instructions.Set {
		return record.Record{}, errors.New("the instructions are both in the frontmatter and below it")
	}
	if p.Instructions.Has() {
		r.Instructions = p.Instructions.V
	}
	return r, nil
}

// instructions returns what is below the frontmatter less the blank line
// Encode puts after the closing --- (or a person's \r\n one) and the newline
// it ends the file with. In a file of CRLF lines (crlf) every \r\n reads as
// \n, so that no line of the instructions keeps a \r; a file Encode wrote
// keeps every byte of them, a \r included.
func instructions(body []byte, crlf bool) string {
	if crlf {
		body = bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	}
	if bytes.HasPrefix(body, []byte("\r\n")) {
		body = body[2:]
	} else {
		body = bytes.TrimPrefix(body, []byte("\n"))
	}
	body = bytes.TrimSuffix(body, []byte("\n"))
	return string(body)
}

// fromPatch builds the record a checked frontmatter holds.
func fromPatch(id string, p record.Patch) record.Record {
	r := record.Record{ID: id, Session: record.DefaultSession}
	set(&r.Name, p.Name)
	set(&r.Description, p.Description)
	if p.Labels.Has() && len(p.Labels.V) > 0 {
		r.Labels = p.Labels.V
	}
	set(&r.Body, p.Body)
	set(&r.Color, p.Color)
	set(&r.Template, p.Template)
	set(&r.Provider, p.Provider)
	set(&r.Model, p.Model)
	set(&r.Preset, p.Preset)
	set(&r.Workspace, p.Workspace)
	set(&r.Session, p.Session)
	set(&r.Computer, p.Computer)
	if p.Connectors.Has() && len(p.Connectors.V) > 0 {
		r.Connectors = p.Connectors.V
	}
	if p.Tools.Has() && len(p.Tools.V) > 0 {
		r.Tools = p.Tools.V
	}
	set(&r.Owner, p.Owner)
	if p.CreatedAt.Has() {
		r.CreatedAt = p.CreatedAt.V
	}
	if p.UpdatedAt.Has() {
		r.UpdatedAt = p.UpdatedAt.V
	}
	return r
}

func set(dst *string, o record.Opt[string]) {
	if o.Has() {
		*dst = o.V
	}
}
