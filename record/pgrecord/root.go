package pgrecord

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/record"
)

// MarkerFile is the file in a shared root that names the database its bots
// are kept in.
const MarkerFile = ".agenthost-bots-db"

// markerHead is the marker file's first line; the token follows it.
const markerHead = "agenthost-bots: the bots of this folder are kept in the database that holds this token\n"

// ErrRootNotShared says an instance's root is not the folder the other
// instances on its database share.
var ErrRootNotShared = errors.New("root is not the database's shared root")

// ClaimRoot checks that root is the folder every instance on the database
// shares, so that an instance started with a wrong -root does not write bot
// folders where the others cannot see them. The first instance on a
// database writes a marker (MarkerFile, holding a random token) into root
// and keeps the token in the database; every later one finds the same token
// in its root, or is refused with ErrRootNotShared. A database with no token
// does not take over a root marked by another: that root's bots are another
// system's.
func (s *Store) ClaimRoot(ctx context.Context, root string) error {
	if s.closed.Load() {
		return record.ErrClosed
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("claim root: %w", err)
	}
	path := filepath.Join(root, MarkerFile)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('agenthost-bots-root'), hashtext(current_schema()))`); err != nil {
			return fmt.Errorf("claim root: %w", err)
		}
		var want string
		err := tx.QueryRow(ctx, `SELECT value FROM bots_meta WHERE key = 'root'`).Scan(&want)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("claim root: read the database's marker: %w", err)
		}
		have, err := readMarker(path)
		if err != nil {
			return err
		}
		switch {
		case want != "" && have == want:
			return nil
		case want != "" && have == "":
			return fmt.Errorf("%w: %s holds no %s, which every instance on this database finds in the root they share: give -root the shared folder", ErrRootNotShared, root, MarkerFile)
		case want != "" || have != "":
			return fmt.Errorf("%w: the %s in %s names another database: give -root the folder this database's instances share (or, for a new database that is to take this folder over, remove the file)", ErrRootNotShared, MarkerFile, root)
		}
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		have = hex.EncodeToString(b[:])
		if err := atomicfile.MkdirAll(root, 0o755); err != nil {
			return fmt.Errorf("claim root: %w", err)
		}
		if err := atomicfile.Write(path, []byte(markerHead+have+"\n"), 0o644); err != nil {
			return fmt.Errorf("claim root: write %s: %w", path, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bots_meta (key, value) VALUES ('root', $1)`, have); err != nil {
			return fmt.Errorf("claim root: keep the marker in the database: %w", err)
		}
		return nil
	})
}

// readMarker returns the token of the marker at path, "" when there is
// none.
func readMarker(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("claim root: read %s: %w", path, err)
	}
	token, ok := strings.CutPrefix(string(data), markerHead)
	token = strings.TrimSpace(token)
	if !ok || len(token) != 32 {
		return "", fmt.Errorf("%w: %s is not a marker this program wrote: remove it, or give -root the shared folder", ErrRootNotShared, path)
	}
	return token, nil
}
