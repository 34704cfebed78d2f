package bots

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/bots/internal/atomicfile"
)

// LocalTokenFile is the file, in ConfigDir, of the local token: the token a
// Server with no users directory requires of every connection, so that no
// connection is anonymous. It is made at the first start (256 random bits,
// 64 hexadecimal digits, mode 0600) and kept across restarts.
const LocalTokenFile = "local-token"

// Bounds of a local token read from its file: one a person wrote there is
// taken when it is long enough to be a secret and can go on a URL as is.
const (
	minLocalToken = 32
	maxLocalToken = 512
)

// localToken reads the local token of the config folder dir, making it when
// there is none. A file that is not a regular file, is readable or writable
// by others than its owner, or does not hold a token is refused in one
// sentence, never used.
func localToken(dir string) (string, error) {
	path := filepath.Join(dir, LocalTokenFile)
	tok, err := readLocalToken(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("bots: making the local token: %w", err)
	}
	tok = hex.EncodeToString(buf)
	if err := atomicfile.WriteNew(path, []byte(tok+"\n"), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) { // another start made it meanwhile: take that one
			return readLocalToken(path)
		}
		return "", fmt.Errorf("bots: making the local token %s: %w", path, err)
	}
	return tok, nil
}

// readLocalToken reads and checks the local token file at path; an error
// wrapping fs.ErrNotExist when there is none.
func readLocalToken(path string) (string, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	} else if err != nil {
		return "", fmt.Errorf("bots: the local token file %s cannot be read: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("bots: the local token file %s is not a regular file: remove it, and a new token is made at the next start", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("bots: the local token file %s is mode %04o: it must be 0600, readable by its owner alone (chmod 600 it, or remove it for a new token)", path, perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("bots: the local token file %s cannot be read: %w", path, err)
	}
	tok := strings.TrimSuffix(string(data), "\n")
	if !validLocalToken(tok) {
		return "", fmt.Errorf("bots: the local token file %s does not hold a token (%d to %d letters, digits or -._~ on one line): remove it, and a new token is made at the next start", path, minLocalToken, maxLocalToken)
	}
	return tok, nil
}

// validLocalToken reports whether tok is long enough to be a secret, short
// enough to be a token, and made of the characters a URL carries as they
// are.
func validLocalToken(tok string) bool {
	if len(tok) < minLocalToken || len(tok) > maxLocalToken {
		return false
	}
	for _, c := range []byte(tok) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}
