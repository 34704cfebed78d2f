package bots

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLocalTokenFile reads whatever a local token file may hold: it is
// either refused in one sentence naming the file, or taken as a token a URL
// carries as it is, the file's one line.
func FuzzLocalTokenFile(f *testing.F) {
	for _, s := range []string{strings.Repeat("a", 64) + "\n", "", "short", strings.Repeat("a ", 20), strings.Repeat("-._~", 8), strings.Repeat("é", 40)} {
		f.Add(s)
	}
	dir := f.TempDir()
	path := filepath.Join(dir, LocalTokenFile)
	f.Fuzz(func(t *testing.T, data string) {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		tok, err := readLocalToken(path)
		if err != nil {
			if tok != "" || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), data) && len(data) >= minLocalToken {
				t.Errorf("refused %q with %q and token %q", data, err, tok)
			}
			return
		}
		if tok != strings.TrimSuffix(data, "\n") || len(tok) < minLocalToken || strings.ContainsAny(tok, "\n\r\t ?&#/%+=") {
			t.Errorf("took %q from %q", tok, data)
		}
	})
}
