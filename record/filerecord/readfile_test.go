package filerecord

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReadOfAFileRewrittenInPlaceIsNeverTorn reads a file while another
// goroutine rewrites it in place (truncate, then write), as an editor that
// saves in place does, alternating a short and a longer content: every
// read gives one content whole, with the stat of the file that held it,
// or fails. A read that took the short file's bytes and then the longer
// one's tail would be a record no save made (the cause of the storm test's
// "201 hand changes heard for 200 saves").
func TestReadOfAFileRewrittenInPlaceIsNeverTorn(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bot.md")
	short := []byte("---\nid: x\nmodel: a\n---\n")
	long := []byte("---\nid: x\nmodel: a\n---\n" + strings.Repeat("tail ", 20) + "\n")
	if err := os.WriteFile(path, short, 0o600); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			data := short
			if i%2 == 1 {
				data = long
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Error(err)
				return
			}
		}
	})
	deadline := time.Now().Add(2 * time.Second)
	reads, failed := 0, 0
	for time.Now().Before(deadline) {
		data, st, err := readFile(path)
		reads++
		if err != nil {
			failed++
			continue
		}
		if len(data) > 0 && !bytes.Equal(data, short) && !bytes.Equal(data, long) {
			close(stop)
			wg.Wait()
			t.Fatalf("read %d gave bytes no write made:\n%q", reads, data)
		}
		if st.size != int64(len(data)) {
			close(stop)
			wg.Wait()
			t.Fatalf("read %d gave %d bytes with the stat of a file of %d", reads, len(data), st.size)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reads, %d refused as changed while read", reads, failed)
}
