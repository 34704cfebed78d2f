package transport

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// A frame read through the pooled buffer comes back whole, of any size,
// in a slice of its own that a later frame does not overwrite.
func TestReadFrameDataReturnsTheWholeFrameInASliceOfItsOwn(t *testing.T) {
	t.Parallel()
	var got [][]byte
	var want [][]byte
	for _, n := range []int{0, 1, 112, 4095, 4096, 4097, 100_000} {
		frame := bytes.Repeat([]byte{byte('a' + n%26)}, n)
		for _, r := range []io.Reader{bytes.NewReader(frame), iotest.OneByteReader(bytes.NewReader(frame)), iotest.DataErrReader(bytes.NewReader(frame))} {
			data, err := readFrameData(r)
			if err != nil {
				t.Fatalf("frame of %d bytes: %v", n, err)
			}
			got, want = append(got, data), append(want, frame)
		}
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d: %d bytes back, want %d (or overwritten)", i, len(got[i]), len(want[i]))
		}
	}
}

// A frame whose reading fails returns the error, not part of the frame.
func TestReadFrameDataReturnsTheReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	data, err := readFrameData(io.MultiReader(bytes.NewReader([]byte("part")), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) || data != nil {
		t.Fatalf("got %q, %v; want nil, boom", data, err)
	}
}
