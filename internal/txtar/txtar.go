// Package txtar reads and writes the txtar archives golden tests keep their
// transcripts in: a comment, then files, each after a "-- name --" line.
package txtar

import (
	"bytes"
	"fmt"
	"strings"
)

// Archive is a parsed archive. Files keep the order they were read or set
// in.
type Archive struct {
	comment []byte
	names   []string
	files   map[string][]byte
}

// Parse reads an archive; any bytes are an archive (the comment may be all
// of it).
func Parse(data []byte) *Archive {
	ar := &Archive{files: map[string][]byte{}}
	cur := ""
	inFile := false
	for _, line := range strings.SplitAfter(string(data), "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			cur = strings.TrimSpace(trimmed[3 : len(trimmed)-3])
			ar.names = append(ar.names, cur)
			ar.files[cur] = nil
			inFile = true
			continue
		}
		if !inFile {
			ar.comment = append(ar.comment, line...)
		} else {
			ar.files[cur] = append(ar.files[cur], line...)
		}
	}
	return ar
}

// File returns the content of the named file.
func (ar *Archive) File(name string) ([]byte, bool) {
	b, ok := ar.files[name]
	return b, ok
}

// Set replaces the named file's content, adding the file at the end when
// it is new.
func (ar *Archive) Set(name string, data []byte) {
	if _, ok := ar.files[name]; !ok {
		ar.names = append(ar.names, name)
	}
	ar.files[name] = data
}

// Format writes the archive, each file ending in a newline.
func (ar *Archive) Format() []byte {
	var b bytes.Buffer
	b.Write(ar.comment)
	for _, name := range ar.names {
		fmt.Fprintf(&b, "-- %s --\n", name)
		data := ar.files[name]
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
