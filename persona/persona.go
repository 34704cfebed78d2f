// Package persona reads and writes a bot's persona file, AGENTS.md, in its
// work folder, with CLAUDE.md beside it, and the templates a new AGENTS.md
// is made from.
//
// Three parts of the file are the UI's: the frontmatter keys name and
// description, and the instructions - the text under "## Instructions" up to
// the next line starting with "##" (Mode InSection), or the whole body after
// the frontmatter (Mode InBody, as VS Code reads an agent file). Everything
// else in the file is the bot's own writing, and an edit keeps every byte of
// it: other keys, their order and comments, other sections, line endings.
//
// The pure functions (Read, Edit, Fill, CheckInstructions) do no I/O; Files
// reads and writes bot folders and the templates under <configDir>/templates.
package persona

import (
	"fmt"
	"strings"
	"unicode"
)

// Parts are the three parts of a bot that AGENTS.md holds.
type Parts struct{ Name, Description, Instructions string }

// Mode is where a bot's instructions are in its AGENTS.md: the plugin
// option instructionsIn.
type Mode int

const (
	// InSection (the zero value) puts the instructions in the text under
	// "## Instructions", up to the next line starting with "##" or the end.
	InSection Mode = iota
	// InBody puts the instructions in the whole body after the frontmatter,
	// as VS Code reads an agent file.
	InBody
)

// String returns the option value that names m: "section" or "body".
func (m Mode) String() string {
	switch m {
	case InSection:
		return "section"
	case InBody:
		return "body"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses the instructionsIn option: "section" or "body". The empty
// string is the default, InSection.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "section", "":
		return InSection, nil
	case "body":
		return InBody, nil
	}
	return InSection, fmt.Errorf("instructionsIn %q is neither section nor body", s)
}

func (m Mode) check() error {
	if m != InSection && m != InBody {
		return fmt.Errorf("instructions mode %d is neither InSection nor InBody", int(m))
	}
	return nil
}

// headingPrefix starts every line that ends the Instructions section.
const headingPrefix = "##"

// CheckInstructions refuses, in InSection mode only, instructions holding a
// line that starts with "##": the Instructions section would end there and
// the rest would read as another section. The error names the line and its
// number, counted in the instructions as they will be written (leading blank
// lines dropped).
func CheckInstructions(instructions string, m Mode) error {
	if err := m.check(); err != nil {
		return err
	}
	if m != InSection {
		return nil
	}
	text := normInstructions(instructions)
	for n := 1; text != ""; n++ {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		if strings.HasPrefix(line, headingPrefix) {
			return fmt.Errorf("instructions line %d %s starts with %q, which would end the Instructions section", n, quoteLine(line), headingPrefix)
		}
	}
	return nil
}

// quoteLine quotes a line for an error, shortened when long.
func quoteLine(line string) string {
	const max = 80
	if len(line) > max {
		cut := max
		for cut > 0 && !isRuneStart(line[cut]) {
			cut--
		}
		line = line[:cut] + "…"
	}
	return fmt.Sprintf("%q", line)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// normInstructions is the form Read answers instructions in: every line's
// trailing carriage returns removed (so \r\n files read as \n), leading
// blank lines dropped and trailing whitespace trimmed. The first line keeps
// its indentation, which Markdown reads (an indented code block) and which
// keeps a "  ##" line from reading as "##". It is idempotent.
func normInstructions(s string) string {
	if strings.IndexByte(s, '\r') >= 0 {
		var b strings.Builder
		b.Grow(len(s))
		for {
			line, rest, more := strings.Cut(s, "\n")
			if more {
				b.WriteString(strings.TrimRight(line, "\r"))
				b.WriteByte('\n')
				s = rest
				continue
			}
			b.WriteString(line)
			break
		}
		s = b.String()
	}
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	return s[leadingBlankLines(s):]
}

// leadingBlankLines returns the length of the blank lines (whitespace only,
// each ending in \n) that start s.
func leadingBlankLines(s string) int {
	n := 0
	for {
		i := strings.IndexByte(s[n:], '\n')
		if i < 0 || strings.TrimLeftFunc(s[n:n+i], unicode.IsSpace) != "" {
			return n
		}
		n += i + 1
	}
}

// Normalize returns p as Read answers it after an Edit writes it: the
// instructions normalised (line-end carriage returns removed, leading blank
// lines and trailing whitespace trimmed); name and description are kept
// exactly.
func Normalize(p Parts) Parts {
	p.Instructions = normInstructions(p.Instructions)
	return p
}
