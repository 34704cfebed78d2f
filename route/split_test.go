package route

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitKeepsShortTextWhole(t *testing.T) {
	t.Parallel()
	if got := Split("hello", 10); len(got) != 1 || got[0] != "hello" {
		t.Fatalf("Split = %q", got)
	}
	if got := Split("", 10); len(got) != 0 {
		t.Fatalf("Split of nothing = %q", got)
	}
}

func TestSplitCutsAtParagraphThenLineThenSpace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text string
		max  int
		want []string
	}{
		{"one two\n\nthree four", 12, []string{"one two", "three four"}},
		{"one two\nthree four", 12, []string{"one two", "three four"}},
		{"one two three four", 9, []string{"one two", "three", "four"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
	}
	for _, c := range cases {
		got := Split(c.text, c.max)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("Split(%q, %d) = %q, want %q", c.text, c.max, got, c.want)
		}
	}
}

func TestSplitNeverCutsACharacterNorExceedsMax(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("é€😀", 50)
	for max := 4; max < 20; max++ {
		parts := Split(text, max)
		if strings.Join(parts, "") != text {
			t.Fatalf("max %d: parts do not add up to the text", max)
		}
		for _, p := range parts {
			if len(p) > max || !utf8.ValidString(p) {
				t.Fatalf("max %d: part %q is too long or cut inside a character", max, p)
			}
		}
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("hello world\n\nagain", 7)
	f.Fuzz(func(t *testing.T, text string, max int) {
		if max > 1<<16 || max < -1<<16 {
			return
		}
		for _, p := range Split(text, max) {
			if p == "" && text != "" {
				t.Fatalf("an empty part of %q", text)
			}
			lim := max
			if lim < 4 {
				lim = 4
			}
			if len(p) > lim {
				t.Fatalf("part of %d bytes over %d", len(p), lim)
			}
		}
	})
}
