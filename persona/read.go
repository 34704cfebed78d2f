package persona

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agenthost/bots/internal/frontmatter"
)

// Read returns the parts a document holds: the frontmatter keys name and
// description (an absent or null key reads ""), and the instructions as m
// says where they are, with leading blank lines and trailing whitespace
// trimmed and \r\n read as \n (see Normalize). A part the document does not have reads empty. A scalar that is not a
// string (name: 2024) reads as its text; a list or a map is an error. So is a
// frontmatter that is never closed or is not valid YAML, and a document
// larger than frontmatter.MaxSize.
func Read(src []byte, m Mode) (Parts, error) {
	if err := m.check(); err != nil {
		return Parts{}, err
	}
	if len(src) > frontmatter.MaxSize {
		return Parts{}, fmt.Errorf("the persona file is %w", frontmatter.ErrTooLarge)
	}
	doc, err := frontmatter.Split(src)
	if err != nil {
		return Parts{}, fmt.Errorf("the persona file's %w", err)
	}
	var p Parts
	if p.Name, p.Description, err = readFront(doc.Front); err != nil {
		return Parts{}, err
	}
	p.Instructions = readInstructions(doc.Body, m)
	return p, nil
}

// readInstructions answers the instructions a body holds in mode m.
func readInstructions(body []byte, m Mode) string {
	if m == InBody {
		return normInstructions(string(body))
	}
	s, ok := findSection(body)
	if !ok {
		return ""
	}
	return normInstructions(string(body[s.contentStart:s.contentEnd]))
}

// section is where the Instructions section is in a body.
type section struct {
	headEnd      int // end of the "## Instructions" line, line break excluded
	contentStart int // start of the line after it
	contentEnd   int // start of the next line starting with "##", or the end
}

// findSection finds the first "## Instructions" heading in body: a line that
// starts with "##" and a space or tab, whose remaining text is Instructions
// (any case). Lines end at \n, a \r before it being the line's.
func findSection(body []byte) (section, bool) {
	var s section
	found := false
	for pos := 0; pos < len(body); {
		end, next := lineAt(body, pos)
		line := body[pos:end]
		if found {
			if hasHeadingPrefix(line) {
				s.contentEnd = pos
				return s, true
			}
		} else if isInstructionsHeading(line) {
			found = true
			s.headEnd = end
			s.contentStart = next
		}
		pos = next
	}
	if !found {
		return section{}, false
	}
	s.contentEnd = len(body)
	return s, true
}

// lineAt returns the end of the line starting at pos (before its \n) and the
// start of the next line (len(b) when the line is the last).
func lineAt(b []byte, pos int) (end, next int) {
	if i := bytes.IndexByte(b[pos:], '\n'); i >= 0 {
		return pos + i, pos + i + 1
	}
	return len(b), len(b)
}

func hasHeadingPrefix(line []byte) bool {
	return len(line) >= 2 && line[0] == '#' && line[1] == '#'
}

func isInstructionsHeading(line []byte) bool {
	if len(line) < 3 || line[0] != '#' || line[1] != '#' || (line[2] != ' ' && line[2] != '\t') {
		return false
	}
	return strings.EqualFold(strings.TrimSpace(string(line[2:])), "Instructions")
}

// readFront answers name and description from a frontmatter's YAML. Most
// files are simple key: value lines, which a quick scanner reads; anything
// else goes to the full YAML decoder.
func readFront(front []byte) (name, desc string, err error) {
	if n, d, ok := scanFront(front); ok {
		return n, d, nil
	}
	m, err := frontmatter.Decode(front)
	if err != nil {
		return "", "", fmt.Errorf("the persona file's frontmatter is not valid: %w", err)
	}
	if name, err = textValue(m, "name"); err != nil {
		return "", "", err
	}
	if desc, err = textValue(m, "description"); err != nil {
		return "", "", err
	}
	return name, desc, nil
}

// textValue reads key of a decoded frontmatter as text: absent or null is "",
// a string is itself, a number or a boolean is its text; anything else is an
// error.
func textValue(m map[string]any, key string) (string, error) {
	switch v := m[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Sprint(v), nil
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case []any:
		return "", fmt.Errorf("the persona file's frontmatter %s is a list, not text", key)
	case map[string]any:
		return "", fmt.Errorf("the persona file's frontmatter %s is a map, not text", key)
	default:
		return "", fmt.Errorf("the persona file's frontmatter %s is not text", key)
	}
}

// scanFront reads name and description from a frontmatter made only of
// blank lines, comment lines and top-level "key: value" lines whose values
// are simple one-line scalars: plain text starting with a letter, or quoted
// text with no escapes. It answers ok=false for anything else, and for
// anything the YAML decoder might read differently or refuse, so that the
// decoder reads it instead. FuzzRead checks the two agree.
func scanFront(front []byte) (name, desc string, ok bool) {
	var seen [16]string // keys seen so far, to leave duplicates to the decoder
	nseen := 0
	for pos := 0; pos < len(front); {
		end, next := lineAt(front, pos)
		line := front[pos:end]
		pos = next
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if !simpleChars(line) {
			return "", "", false
		}
		i := 0
		for i < len(line) && line[i] == ' ' {
			i++
		}
		if i == len(line) || line[i] == '#' {
			continue // blank or comment
		}
		if i > 0 {
			return "", "", false // indented: a nested value or a continuation
		}
		k := 0
		for k < len(line) && isKeyByte(line[k], k == 0) {
			k++
		}
		if k == 0 || k == len(line) || line[k] != ':' {
			return "", "", false
		}
		key := string(line[:k])
		if specialWord(key) {
			return "", "", false
		}
		for j := 0; j < nseen; j++ {
			if seen[j] == key {
				return "", "", false
			}
		}
		if nseen == len(seen) {
			return "", "", false
		}
		seen[nseen] = key
		nseen++
		rest := line[k+1:]
		if len(rest) > 0 && rest[0] != ' ' {
			return "", "", false
		}
		v, ok := scanValue(rest, key == "name" || key == "description")
		if !ok {
			return "", "", false
		}
		switch key {
		case "name":
			name = v
		case "description":
			desc = v
		}
	}
	return name, desc, true
}

// scanValue reads what follows "key:" on a simple line: nothing (null), a
// plain scalar, or a quoted one with no escapes, then an optional comment.
// For one of our keys the value must be text; for another key it only has
// to be sure to decode, and may also be a plain word or number (model:
// gpt-5, temperature: 0.2) or a one-line flow list of such items (tools:
// [read, 'search']).
func scanValue(rest []byte, ours bool) (string, bool) {
	i := 0
	for i < len(rest) && rest[i] == ' ' {
		i++
	}
	if i == len(rest) || rest[i] == '#' {
		return "", i == len(rest) || i > 0
	}
	switch rest[i] {
	case '"', '\'':
		v, n, ok := scanQuoted(rest[i:])
		if !ok || !afterScalar(rest[i+n:]) {
			return "", false
		}
		return v, true
	case '[':
		if ours {
			return "", false
		}
		n, ok := scanFlowList(rest[i:])
		return "", ok && afterScalar(rest[i+n:])
	}
	// A plain scalar runs to the end of the line or a " #" comment.
	end := len(rest)
	for j := i; j < len(rest); j++ {
		if rest[j] == '#' {
			if rest[j-1] != ' ' {
				return "", false
			}
			end = j
			break
		}
	}
	v := strings.TrimRight(string(rest[i:end]), " ")
	if plainOK(v) || (!ours && wordOK(v)) {
		return v, true
	}
	return "", false
}

// scanQuoted reads a quoted scalar with no escapes at the start of b,
// answering its text and its length with the quotes.
func scanQuoted(b []byte) (string, int, bool) {
	q := b[0]
	for j := 1; j < len(b); j++ {
		switch b[j] {
		case q:
			return string(b[1:j]), j + 1, true
		case '\\':
			return "", 0, false
		}
	}
	return "", 0, false
}

// scanFlowList reads a one-line flow list at the start of b - "[" items
// separated by commas "]" - whose items are quoted scalars with no escapes
// or words (wordOK), and answers its length.
func scanFlowList(b []byte) (int, bool) {
	j := 1
	skip := func() {
		for j < len(b) && b[j] == ' ' {
			j++
		}
	}
	skip()
	if j < len(b) && b[j] == ']' {
		return j + 1, true
	}
	for j < len(b) {
		switch b[j] {
		case '"', '\'':
			_, n, ok := scanQuoted(b[j:])
			if !ok {
				return 0, false
			}
			j += n
		default:
			k := j
			for k < len(b) && b[k] != ',' && b[k] != ']' && b[k] != ' ' {
				k++
			}
			if !wordOK(string(b[j:k])) {
				return 0, false
			}
			j = k
		}
		skip()
		if j == len(b) {
			return 0, false
		}
		if b[j] == ']' {
			return j + 1, true
		}
		if b[j] != ',' {
			return 0, false
		}
		j++
		skip()
	}
	return 0, false
}

// wordOK reports whether s is a plain word or number that decodes whatever
// type it reads as: ASCII letters, digits and ". _ + -", starting with a
// letter or digit.
func wordOK(s string) bool {
	if s == "" || !isAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '+' && c != '-' {
			return false
		}
	}
	return true
}

// afterScalar reports whether b, the text after a quoted scalar, is only
// spaces and an optional comment.
func afterScalar(b []byte) bool {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return i == len(b) || (i > 0 && b[i] == '#')
}

// plainOK reports whether s can be written as a plain YAML scalar on a line
// of its own and read back as exactly s, by the quick scanner and the YAML
// decoder alike: it starts with a letter, is not a word YAML reads as null,
// a boolean or a number, and holds only letters, digits, single spaces
// between words and punctuation that means nothing in a plain scalar.
func plainOK(s string) bool {
	if s == "" || specialWord(s) {
		return false
	}
	first, _ := utf8.DecodeRuneInString(s)
	if !unicode.IsLetter(first) {
		return false
	}
	if s[len(s)-1] == ' ' {
		return false
	}
	prevSpace := false
	for _, r := range s {
		switch {
		case r == ' ':
			if prevSpace {
				return false
			}
			prevSpace = true
			continue
		case r < utf8.RuneSelf:
			if !isAlnum(byte(r)) && !strings.ContainsRune(plainPunct, r) {
				return false
			}
		default:
			if !printableRune(r) {
				return false
			}
		}
		prevSpace = false
	}
	return true
}

// plainPunct is the punctuation a plain scalar may hold: none of it starts
// a comment, a mapping value, a flow collection or an escape inside one.
const plainPunct = ".,;!?()/-_+='\"&*%@$^~<>|"

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isKeyByte(c byte, first bool) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' {
		return true
	}
	return !first && (c >= '0' && c <= '9' || c == '-')
}

// specialWord reports whether a plain scalar s might read as something other
// than a string: null, a boolean (YAML 1.1 and 1.2 spellings) or a special
// number.
func specialWord(s string) bool {
	if len(s) > 8 {
		return false
	}
	switch strings.ToLower(s) {
	case "null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan", "inf", "infinity":
		return true
	}
	return false
}

// simpleChars reports whether a frontmatter line holds only characters the
// quick scanner is sure of: printable ASCII or printable, valid UTF-8 beyond
// it. Tabs, control characters, lone \r, C1 controls, line and paragraph
// separators and byte order marks go to the decoder.
func simpleChars(line []byte) bool {
	for i := 0; i < len(line); {
		c := line[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(line[i:])
		if r == utf8.RuneError || !printableRune(r) {
			return false
		}
		i += n
	}
	return true
}

// printableRune reports whether a non-ASCII rune may stand as itself in a
// YAML scalar and reads back unchanged.
func printableRune(r rune) bool {
	if r < 0xA0 || r == 0x2028 || r == 0x2029 || r == 0xFEFF || r == 0xFFFE || r == 0xFFFF {
		return false
	}
	return unicode.IsPrint(r)
}
