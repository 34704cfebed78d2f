package route

import (
	"strings"
	"unicode/utf8"
)

// Split cuts text into parts of at most max bytes each, in order, so that a
// reply longer than a network's limit arrives whole. It cuts at the last
// paragraph break, else line break, else space that keeps a part within
// max, and inside a word only when a word alone is longer than max; it
// never cuts a UTF-8 character. The breaks it cuts at are dropped, every
// other byte is kept. Empty text gives no parts; max below 4 (one UTF-8
// character) is taken as 4.
func Split(text string, max int) []string {
	if max < utf8.UTFMax {
		max = utf8.UTFMax
	}
	var parts []string
	for text != "" {
		if len(text) <= max {
			parts = append(parts, text)
			break
		}
		head := text[:max]
		cut, skip := -1, 0
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(head, sep); i > 0 {
				cut, skip = i, len(sep)
				break
			}
		}
		if cut < 0 {
			cut = max
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			if cut == 0 { // not UTF-8 at all: cut where max says
				cut = max
			}
		}
		parts = append(parts, text[:cut])
		text = text[cut+skip:]
	}
	return parts
}
