package persona

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/agenthost/bots/internal/frontmatter"
)

// errUneditable is returned by Edit for a frontmatter whose name or
// description it cannot change without touching other bytes: a flow mapping
// ({name: x}), several YAML documents, a root mapping that is indented, or a
// key written in a way only a full YAML rewrite could change.
var errUneditable = errors.New(`the persona file's frontmatter is not a block of top-level "key: value" lines, so its name and description cannot be changed in place`)

// Edit returns src with our parts replaced by p and every other byte kept:
// other frontmatter keys, their order and comments, other sections, the text
// before and after. A part whose value already equals what Read answers is
// left byte for byte alone. A missing frontmatter is added at the top; a
// missing name or description key is added (only when its value is not
// empty); a missing Instructions section is appended when the instructions
// are not empty, so that the next Read answers them. Values are written as
// YAML that reads back exactly: plain when that is safe, double-quoted with
// escapes otherwise. New lines take the file's line ending (\r\n or \n).
//
// Read(Edit(src, p, m), m) equals Normalize(p) for any src Read accepts.
// Edit refuses instructions CheckInstructions refuses, a name or description
// that is not valid UTF-8 (YAML cannot hold it), a result larger than
// frontmatter.MaxSize, and a frontmatter that is not top-level key: value
// lines when name or description must change there.
func Edit(src []byte, p Parts, m Mode) ([]byte, error) {
	cur, err := Read(src, m)
	if err != nil {
		return nil, err
	}
	if err := CheckInstructions(p.Instructions, m); err != nil {
		return nil, err
	}
	if !utf8.ValidString(p.Name) {
		return nil, errors.New("the name is not valid UTF-8")
	}
	if !utf8.ValidString(p.Description) {
		return nil, errors.New("the description is not valid UTF-8")
	}
	want := Normalize(p)
	if want == cur {
		return src, nil
	}
	doc, _ := frontmatter.Split(src) // Read has split it without error
	eol := lineEnding(src)

	// The frontmatter.
	var head []byte // everything before the body
	switch {
	case want.Name == cur.Name && want.Description == cur.Description:
		head = src[:doc.End]
	case doc.Has:
		frontEnd := doc.FrontStart + len(doc.Front)
		front, err := editFront(doc.Front, cur, want, eol)
		if err != nil {
			return nil, err
		}
		head = concat(src[:doc.FrontStart], front, src[frontEnd:doc.End])
	default:
		var b bytes.Buffer
		b.WriteString("---" + eol)
		if want.Name != "" {
			b.WriteString("name: " + encodeScalar(want.Name) + eol)
		}
		if want.Description != "" {
			b.WriteString("description: " + encodeScalar(want.Description) + eol)
		}
		b.WriteString("---" + eol)
		head = b.Bytes()
	}

	// The body.
	body := doc.Body
	if want.Instructions != cur.Instructions {
		text := strings.ReplaceAll(want.Instructions, "\n", eol)
		if m == InBody {
			body = replaceCore(body, 0, len(body), text, eol)
		} else {
			body = editSection(body, text, eol)
		}
	}

	if len(head) > 0 && head[len(head)-1] != '\n' && len(body) > 0 {
		// The closing --- ended the file without a line break.
		head = concat(head, []byte(eol))
	}
	out := concat(head, body)
	if len(head) == 0 && startsWithDelimiter(out) {
		// Instructions whose first line is --- would read as a frontmatter:
		// give the file an empty one in front of them.
		out = concat([]byte("---"+eol+"---"+eol), out)
	}
	if len(out) > frontmatter.MaxSize {
		return nil, fmt.Errorf("the persona file would be %w", frontmatter.ErrTooLarge)
	}
	if got, err := Read(out, m); err != nil || got != want {
		// Not reached for any input FuzzEdit has found; kept so that a
		// surprise is an error and never a wrong file.
		return nil, errors.New("the edit of the persona file did not read back as written, so it was not made")
	}
	return out, nil
}

func concat(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// lineEnding is the line ending a document uses: \r\n when its first line
// ends so, \n otherwise.
func lineEnding(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i > 0 && b[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

func startsWithDelimiter(b []byte) bool {
	end, _ := lineAt(b, 0)
	line := bytes.TrimRight(bytes.TrimSuffix(b[:end], []byte("\r")), " \t")
	return string(line) == "---"
}

// editSection writes text (non-empty or not) as the Instructions section of
// body, appending the section when the body has none.
func editSection(body []byte, text, eol string) []byte {
	s, ok := findSection(body)
	if !ok {
		if text == "" {
			return body
		}
		var b bytes.Buffer
		b.Write(body)
		if len(body) > 0 && body[len(body)-1] != '\n' {
			b.WriteString(eol)
		}
		b.WriteString("## Instructions" + eol + text + eol)
		return b.Bytes()
	}
	if s.contentStart == s.headEnd {
		// The heading is the last line and has no line break.
		if text == "" {
			return body
		}
		return concat(body, []byte(eol+text+eol))
	}
	return replaceCore(body, s.contentStart, s.contentEnd, text, eol)
}

// replaceCore replaces the text of b[start:end] between its leading blank
// lines and its trailing whitespace with text, keeping those. When the
// region is only whitespace, text and a line ending go at its start.
func replaceCore(b []byte, start, end int, text, eol string) []byte {
	region := string(b[start:end])
	z := start + len(strings.TrimRightFunc(region, unicode.IsSpace))
	if z == start {
		if text == "" {
			return b
		}
		return concat(b[:start], []byte(text+eol), b[start:])
	}
	a := start + leadingBlankLines(region)
	return concat(b[:a], []byte(text), b[z:])
}

// editFront changes name and description in a frontmatter's YAML where they
// differ from cur, keeping every other byte.
func editFront(front []byte, cur, want Parts, eol string) ([]byte, error) {
	var err error
	if want.Name != cur.Name {
		if front, err = setKey(front, "name", want.Name, eol); err != nil {
			return nil, err
		}
	}
	if want.Description != cur.Description {
		if front, err = setKey(front, "description", want.Description, eol); err != nil {
			return nil, err
		}
	}
	return front, nil
}

// yline is a line of YAML: [start, end) is its text, next the start of the
// line after its break (\r\n, \n or a lone \r, as YAML breaks lines).
type yline struct{ start, end, next int }

func yamlLines(b []byte) []yline {
	var lines []yline
	start := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\n':
			lines = append(lines, yline{start, i, i + 1})
			start = i + 1
		case '\r':
			next := i + 1
			if next < len(b) && b[next] == '\n' {
				next++
			}
			lines = append(lines, yline{start, i, next})
			start = next
			i = next - 1
		}
	}
	if start < len(b) {
		lines = append(lines, yline{start, len(b), len(b)})
	}
	return lines
}

// unixBreaks returns b with each \r\n and lone \r made \n.
func unixBreaks(b []byte) []byte {
	if bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '\r' {
			if i+1 < len(b) && b[i+1] == '\n' {
				continue
			}
			out = append(out, '\n')
			continue
		}
		out = append(out, b[i])
	}
	return out
}

// entry is a top-level key of a frontmatter mapping: its key when that is a
// plain or quoted string, and the index of the line it starts on.
type entry struct {
	key  string
	line int
}

// topEntries lists the top-level keys of a frontmatter, or errUneditable
// when it is not a block mapping whose keys start their lines. The parser
// reads a copy whose line breaks are all \n, the same lines to YAML, because
// it miscounts lines after a comment that ends in \r\n.
func topEntries(front []byte, nlines int) ([]entry, error) {
	f, err := parser.ParseBytes(unixBreaks(front), parser.ParseComments)
	if err != nil {
		// The decoder took it, the parser with comments does not: a key and
		// its ":" with a comment between them.
		return nil, errUneditable
	}
	if len(f.Docs) > 1 {
		return nil, errUneditable
	}
	if len(f.Docs) == 0 {
		return nil, nil
	}
	var values []*ast.MappingValueNode
	switch b := f.Docs[0].Body.(type) {
	case nil, *ast.CommentGroupNode:
		return nil, nil
	case *ast.MappingNode:
		if b.IsFlowStyle {
			return nil, errUneditable
		}
		values = b.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{b}
	default:
		return nil, errUneditable
	}
	entries := make([]entry, 0, len(values))
	for _, mv := range values {
		tok := mv.Key.GetToken()
		if tok == nil || tok.Position == nil || tok.Position.Column != 1 {
			return nil, errUneditable
		}
		line := tok.Position.Line - 1
		if line < 0 || line >= nlines || (len(entries) > 0 && line <= entries[len(entries)-1].line) {
			return nil, errUneditable
		}
		key := ""
		switch k := mv.Key.(type) {
		case *ast.StringNode:
			key = k.Value
		case *ast.MappingKeyNode, *ast.TagNode, *ast.AnchorNode, *ast.AliasNode:
			return nil, errUneditable // a key that may read as name or description
		}
		entries = append(entries, entry{key, line})
	}
	return entries, nil
}

// setKey sets a top-level key of a frontmatter to the string value. An
// existing entry - its key line and the lines of its value - becomes one
// line, key: value, keeping a comment at the end of the key line; the blank
// and comment lines after it stay. A missing key is added after name (for
// description), before description (for name), or after the last entry.
// Each candidate edit is decoded and kept only when every other key reads as
// before and key reads value.
func setKey(front []byte, key, value, eol string) ([]byte, error) {
	old, err := frontmatter.Decode(front)
	if err != nil {
		return nil, fmt.Errorf("the persona file's frontmatter is not valid: %w", err)
	}
	lines := yamlLines(front)
	entries, err := topEntries(front, len(lines))
	if err != nil {
		return nil, err
	}
	find := func(k string) int {
		for i, e := range entries {
			if e.key == k {
				return i
			}
		}
		return -1
	}
	// span returns the lines entry i may cover: from its key line to the last
	// line before the next entry, and the last of them that is not blank or
	// a comment (where an insertion after it goes).
	span := func(i int) (first, content, last int) {
		first = entries[i].line
		last = len(lines) - 1
		if i+1 < len(entries) {
			last = entries[i+1].line - 1
		}
		content = first
		for l := last; l > first; l-- {
			if !blankOrComment(front[lines[l].start:lines[l].end]) {
				content = l
				break
			}
		}
		return first, content, last
	}
	enc := encodeScalar(value)
	var candidates [][]byte
	if i := find(key); i >= 0 {
		first, content, last := span(i)
		newLine := key + ": " + enc + lineComment(front, lines[first])
		// The entry ends on its key line (a one-line value), or on the last
		// indented line of its value, or (in a short entry) on any line, or
		// on the last line that is not blank or a comment. The first of these
		// whose replacement reads right is taken, so a comment or a "..."
		// after the value stays.
		indented := first
		for l := content; l > first; l-- {
			if c := front[lines[l].start]; c == ' ' || c == '\t' {
				if !blankOrComment(front[lines[l].start:lines[l].end]) {
					indented = l
					break
				}
			}
		}
		ends := []int{first, indented}
		if last-first <= maxTriedLines {
			for e := first + 1; e <= last; e++ {
				ends = append(ends, e)
			}
		}
		ends = append(ends, content)
		tried := map[int]bool{}
		for _, e := range ends {
			if !tried[e] {
				tried[e] = true
				candidates = append(candidates, concat(front[:lines[first].start], []byte(newLine), front[lines[e].end:]))
			}
		}
	} else {
		newLine := []byte(key + ": " + enc + eol)
		var at []int
		if key == "name" {
			if d := find("description"); d >= 0 {
				at = append(at, lines[entries[d].line].start)
			}
		}
		if key == "description" {
			if n := find("name"); n >= 0 {
				_, content, _ := span(n)
				at = append(at, lines[content].next)
			}
		}
		if len(entries) > 0 {
			_, content, _ := span(len(entries) - 1)
			at = append(at, lines[content].next)
		}
		at = append(at, len(front), 0)
		for _, pos := range at {
			candidates = append(candidates, concat(front[:pos], newLine, front[pos:]))
		}
	}
	for _, c := range candidates {
		if setKeyHolds(c, old, key, value) {
			return c, nil
		}
	}
	return nil, errUneditable
}

// maxTriedLines bounds the ends setKey tries for an entry beyond the likely
// ones, each a decode of the whole frontmatter.
const maxTriedLines = 16

// setKeyHolds reports whether front decodes to old with key set to value.
func setKeyHolds(front []byte, old map[string]any, key, value string) bool {
	m, err := frontmatter.Decode(front)
	if err != nil {
		return false
	}
	v, ok := m[key].(string)
	if !ok || v != value {
		return false
	}
	want := len(old)
	if _, had := old[key]; !had {
		want++
	}
	if len(m) != want {
		return false
	}
	for k, ov := range old {
		if k == key {
			continue
		}
		nv, ok := m[k]
		// %#v prints maps sorted and NaN as NaN, so equal values print alike.
		if !ok || fmt.Sprintf("%#v", nv) != fmt.Sprintf("%#v", ov) {
			return false
		}
	}
	return true
}

// blankOrComment reports whether a YAML line is only spaces and tabs, or a
// comment.
func blankOrComment(line []byte) bool {
	t := bytes.TrimLeft(line, " \t")
	return len(t) == 0 || t[0] == '#'
}

// lineComment returns the comment that ends line l of front, with the
// whitespace before it, or "".
func lineComment(front []byte, l yline) string {
	text := front[l.start:l.end]
	if bytes.IndexByte(text, '#') < 0 {
		return ""
	}
	for _, t := range lexer.Tokenize(string(text)) {
		if t.Type != token.CommentType {
			continue
		}
		c := "#" + strings.TrimRight(t.Value, "\r\n")
		if !bytes.HasSuffix(text, []byte(c)) {
			return ""
		}
		i := len(text) - len(c)
		j := i
		for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') {
			j--
		}
		if j == i {
			return ""
		}
		return string(text[j:])
	}
	return ""
}

// encodeScalar writes s as a YAML scalar that reads back as exactly s: plain
// when that is safe, double-quoted with escapes otherwise.
func encodeScalar(s string) string {
	if plainOK(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(hex(uint64(r), 2))
		case printableRune(r):
			b.WriteRune(r)
		case r <= 0xFFFF:
			b.WriteString(`\u`)
			b.WriteString(hex(uint64(r), 4))
		default:
			b.WriteString(`\U`)
			b.WriteString(hex(uint64(r), 8))
		}
	}
	b.WriteByte('"')
	return b.String()
}

func hex(v uint64, width int) string {
	s := strconv.FormatUint(v, 16)
	return strings.Repeat("0", width-len(s)) + s
}
