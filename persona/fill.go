package persona

import (
	"fmt"
	"strings"

	"github.com/agenthost/bots/internal/frontmatter"
)

// DefaultTemplate is the shipped default persona template: the text
// <configDir>/templates/bots/AGENTS.md starts with, and what a bot gets when
// that file is missing.
const DefaultTemplate = `---
name: {{name}}
description: {{description}}
---
## Instructions
{{instructions}}
## How you work
This file is your rules. You are {{name}}, a persistent bot assistant on this host, and this folder is yours. Answer as {{name}}, not as the model or the program that runs you. The frontmatter and the Instructions section are your owner's. You may change them only when your owner asks.
If the Instructions section does not say what you are for, ask the person who talks to you. Ask what work you do, for whom, and what you must never do. Then write their answers in the Instructions section.
`

// Fill replaces {{name}}, {{description}} and {{instructions}} in a template
// with the parts, in one pass: a part's own text is never filled again. Any
// other {{word}} is left as written.
func Fill(template string, p Parts) string {
	return strings.NewReplacer(
		"{{name}}", p.Name,
		"{{description}}", p.Description,
		"{{instructions}}", p.Instructions,
	).Replace(template)
}

// Make returns the AGENTS.md a template makes for p: the template filled
// with the parts, then edited so that exactly the parts are in it (see
// Edit). In InBody mode the template gives only its frontmatter, and the
// body is the instructions. The words in the template's frontmatter are
// filled with the parts when the result is valid YAML, and with nothing
// otherwise (a name like "a: b" would break `name: {{name}}`); Edit then
// writes the values safely.
func Make(template string, p Parts, m Mode) ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	if err := CheckInstructions(p.Instructions, m); err != nil {
		return nil, err
	}
	p = Normalize(p)
	doc, err := frontmatter.Split([]byte(template))
	if err != nil {
		return nil, fmt.Errorf("the template's %w", err)
	}
	eol := lineEnding([]byte(template))
	fp := p
	if eol != "\n" {
		fp.Name = strings.ReplaceAll(fp.Name, "\n", eol)
		fp.Description = strings.ReplaceAll(fp.Description, "\n", eol)
		fp.Instructions = strings.ReplaceAll(fp.Instructions, "\n", eol)
	}
	head := template[:doc.End]
	if doc.Has {
		filled := Fill(dropSpaceBeforeEmpty(head, fp), fp)
		if !wholeFront(filled) {
			filled = Fill(dropSpaceBeforeEmpty(head, Parts{}), Parts{})
			if !wholeFront(filled) {
				return nil, fmt.Errorf("the template's frontmatter is not valid YAML")
			}
		}
		head = filled
	}
	text := head
	if m == InSection {
		text += Fill(template[doc.End:], fp)
	}
	if head == "" && startsWithDelimiter([]byte(text)) {
		// A filled first line of --- would read as a frontmatter.
		text = "---" + eol + "---" + eol + text
	}
	out, err := Edit([]byte(text), p, m)
	if err != nil {
		return nil, fmt.Errorf("the filled template: %w", err)
	}
	return out, nil
}

// wholeFront reports whether s is exactly one frontmatter block (both
// delimiter lines, nothing after) whose YAML decodes.
func wholeFront(s string) bool {
	d, err := frontmatter.Split([]byte(s))
	if err != nil || !d.Has || d.End != len(s) {
		return false
	}
	_, err = frontmatter.Decode(d.Front)
	return err == nil
}

// dropSpaceBeforeEmpty turns "key: {{word}}" at a line's end into
// "key:{{word}}" for each word p leaves empty, so the filled line is "key:"
// with no trailing space.
func dropSpaceBeforeEmpty(head string, p Parts) string {
	for _, w := range []struct{ word, value string }{
		{"{{name}}", p.Name}, {"{{description}}", p.Description}, {"{{instructions}}", p.Instructions},
	} {
		if w.value == "" {
			head = strings.ReplaceAll(head, ": "+w.word+"\n", ":"+w.word+"\n")
			head = strings.ReplaceAll(head, ": "+w.word+"\r\n", ":"+w.word+"\r\n")
		}
	}
	return head
}
