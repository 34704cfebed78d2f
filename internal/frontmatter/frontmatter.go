// Package frontmatter splits a Markdown document into its YAML frontmatter
// (between two --- lines at the top) and the body after it, keeping byte
// offsets so that an editor can replace one part and keep every other byte,
// and decodes frontmatter safely (size limit, no anchors or aliases).
package frontmatter

import (
	"bytes"
	"errors"
	"fmt"
)

// MaxSize is the largest document Decode and the file readers accept. A bot
// record or persona is a few kilobytes; anything near this is not one.
const MaxSize = 1 << 20

// ErrTooLarge is returned for input over MaxSize.
var ErrTooLarge = fmt.Errorf("larger than %d bytes", MaxSize)

// ErrUnclosed is returned when a document opens a frontmatter and never
// closes it.
var ErrUnclosed = errors.New("frontmatter opened with --- is never closed")

// Doc is a document split at its frontmatter. Front is the YAML between the
// delimiter lines (empty when the document has none); Body is everything
// after the closing delimiter line. Doc[Start:End] of the source is exactly
// the frontmatter with both delimiter lines, so source[:Start] + new front
// + source[End:] replaces it and keeps every other byte.
type Doc struct {
	Front, Body []byte
	// Has reports whether the document has a frontmatter at all.
	Has bool
	// Start and End delimit the frontmatter block (delimiters included) in
	// the source; both are 0 when Has is false.
	Start, End int
	// FrontStart is where the YAML between the delimiters starts.
	FrontStart int
}

// Split splits src. A document whose first line is not exactly --- has no
// frontmatter and is all body. A first line of --- with no closing --- line
// is ErrUnclosed. Lines may end in \n or \r\n.
func Split(src []byte) (Doc, error) {
	first, rest, _ := cutLine(src)
	if !isDelim(first) {
		return Doc{Body: src}, nil
	}
	frontStart := len(src) - len(rest)
	pos := frontStart
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = cutLine(rest)
		if isDelim(line) {
			end := len(src) - len(rest)
			return Doc{
				Front:      src[frontStart:pos],
				Body:       src[end:],
				Has:        true,
				Start:      0,
				End:        end,
				FrontStart: frontStart,
			}, nil
		}
		pos = len(src) - len(rest)
	}
	return Doc{}, ErrUnclosed
}

// cutLine returns the first line of b without its line ending, the rest after
// it, and whether a line ending was found.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil, false
	}
	return b[:i], b[i+1:], true
}

func isDelim(line []byte) bool {
	line = bytes.TrimSuffix(line, []byte("\r"))
	return string(bytes.TrimRight(line, " \t")) == "---"
}
