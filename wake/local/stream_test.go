package local

import (
	"math/rand/v2"
	"strings"
	"testing"
)

type valuesScrubber []string

func (v valuesScrubber) String(in string) string {
	for _, s := range v {
		in = strings.ReplaceAll(in, s, "[redacted]")
	}
	return in
}

func (v valuesScrubber) Longest() int {
	n := 0
	for _, s := range v {
		n = max(n, len(s))
	}
	return n
}

// TestStreamCatchesAValueSplitAnywhere cuts a text holding values (and
// runes of several bytes) into random pieces: no piece handed on, nor
// their concatenation, holds a value or a piece of one longer than half,
// and the concatenation is the whole text scrubbed.
func TestStreamCatchesAValueSplitAnywhere(t *testing.T) {
	t.Parallel()
	s := valuesScrubber{"tok-abcdef0123456789", "ключ-секрет-42"}
	text := "héllo tok-abcdef0123456789 and ключ-секрет-42, again tok-abcdef0123456789tok-abcdef0123456789 end ✓"
	want := s.String(text)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		var st stream
		var out []string
		for rest := text; rest != ""; {
			n := 1 + rng.IntN(min(len(rest), 12))
			if o := st.next(s, rest[:n]); o != "" {
				out = append(out, o)
			}
			rest = rest[n:]
		}
		if o := st.flush(s); o != "" {
			out = append(out, o)
		}
		if got := strings.Join(out, ""); got != want {
			t.Fatalf("the stream handed on %q, want %q", got, want)
		}
		for _, piece := range out {
			for _, v := range s {
				if strings.Contains(piece, v[:len(v)/2+1]) {
					t.Fatalf("a piece handed on, %q, holds more than half of a value", piece)
				}
			}
		}
	}
}
