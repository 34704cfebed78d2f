package frontmatter

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestSplitFindsFrontAndBody(t *testing.T) {
	t.Parallel()
	src := []byte("---\nname: x\n---\nbody\n")
	d, err := Split(src)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Has || string(d.Front) != "name: x\n" || string(d.Body) != "body\n" {
		t.Fatalf("got %+v", d)
	}
	if got := string(src[:d.Start]) + "NEW" + string(src[d.End:]); got != "NEWbody\n" {
		t.Fatalf("replacing [Start:End] gives %q", got)
	}
	if string(src[d.FrontStart:d.FrontStart+len(d.Front)]) != string(d.Front) {
		t.Fatal("FrontStart does not point at Front")
	}
}

func TestSplitWithoutFrontmatterIsAllBody(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "# title\n---\n", "----\nx\n---\n", "text"} {
		d, err := Split([]byte(s))
		if err != nil {
			t.Fatalf("Split(%q): %v", s, err)
		}
		if d.Has || string(d.Body) != s {
			t.Fatalf("Split(%q) = %+v", s, d)
		}
	}
}

func TestSplitTakesCRLFAndTrailingBlanksOnDelimiters(t *testing.T) {
	t.Parallel()
	d, err := Split([]byte("--- \r\na: 1\r\n---\r\nb\r\n"))
	if err != nil || !d.Has || string(d.Front) != "a: 1\r\n" || string(d.Body) != "b\r\n" {
		t.Fatalf("got %+v, %v", d, err)
	}
}

func TestSplitRefusesUnclosedFrontmatter(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"---\n", "---\na: 1\n", "---"} {
		if _, err := Split([]byte(s)); !errors.Is(err, ErrUnclosed) {
			t.Errorf("Split(%q): %v, want ErrUnclosed", s, err)
		}
	}
}

func TestDecodeRefusesAnchorsAliasesAndMergeKeys(t *testing.T) {
	t.Parallel()
	bomb := "a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n"
	for _, s := range []string{bomb, "a: &x 1\n", "base: {a: 1}\nm:\n  <<: {a: 2}\n"} {
		if _, err := Decode([]byte(s)); err == nil {
			t.Errorf("Decode(%q) accepted it", s)
		}
	}
}

func TestDecodeRefusesOversizedInput(t *testing.T) {
	t.Parallel()
	big := []byte("a: " + strings.Repeat("x", MaxSize) + "\n")
	if _, err := Decode(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

func TestDecodeGivesTopLevelKeysAndEmptyMapForNothing(t *testing.T) {
	t.Parallel()
	m, err := Decode([]byte("name: x\nlabels: [a, b]\n"))
	if err != nil || m["name"] != "x" || len(m["labels"].([]any)) != 2 {
		t.Fatalf("got %v, %v", m, err)
	}
	if m, err := Decode([]byte("# only a comment\n")); err != nil || m == nil || len(m) != 0 {
		t.Fatalf("comment-only: %v, %v", m, err)
	}
	if _, err := Decode([]byte("- a\n")); err == nil {
		t.Fatal("a list at the top accepted")
	}
}

// FuzzSplit checks that Split never panics and that its offsets always
// describe the source.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"---\na: 1\n---\nbody", "---\r\n---\r\n", "---", "x\n---\n", "---\n---\n---\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		d, err := Split(src)
		if err != nil {
			return
		}
		if !d.Has {
			if !bytes.Equal(d.Body, src) {
				t.Fatal("no frontmatter, but the body is not the source")
			}
			return
		}
		if d.Start != 0 || d.End > len(src) || d.FrontStart > d.End {
			t.Fatalf("offsets %+v out of range for %d bytes", d, len(src))
		}
		if !bytes.Equal(src[d.End:], d.Body) || !bytes.Equal(src[d.FrontStart:d.FrontStart+len(d.Front)], d.Front) {
			t.Fatal("Front or Body does not match the offsets")
		}
	})
}

// FuzzDecode checks that no input makes Decode panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"name: x\n", "a: &a [1]\nb: *a\n", "a: [\n", "? a\n: b\n", "a: !!binary aGk=\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		Decode(src)
	})
}
