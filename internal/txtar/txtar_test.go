package txtar

import "testing"

func TestParseFormatRoundTrip(t *testing.T) {
	t.Parallel()
	src := "a comment\n-- script --\nline 1\nline 2\n-- config --\n{}\n"
	ar := Parse([]byte(src))
	if s, ok := ar.File("script"); !ok || string(s) != "line 1\nline 2\n" {
		t.Fatalf("script %q, %v", s, ok)
	}
	if got := string(ar.Format()); got != src {
		t.Fatalf("format\n got %q\nwant %q", got, src)
	}
	ar.Set("script", []byte("new"))
	ar.Set("extra", []byte("x\n"))
	want := "a comment\n-- script --\nnew\n-- config --\n{}\n-- extra --\nx\n"
	if got := string(ar.Format()); got != want {
		t.Fatalf("after Set\n got %q\nwant %q", got, want)
	}
	if _, ok := ar.File("missing"); ok {
		t.Fatal("a missing file was found")
	}
}
