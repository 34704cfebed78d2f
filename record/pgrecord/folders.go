package pgrecord

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/bots/record"
)

// folder is the clean folder on this host that r works in - an absolute
// Workspace, with no Computer - or nil for none, as the bots table's
// folder column keeps it.
func folder(r record.Record) *string {
	if r.Computer != "" || r.Workspace == "" || !filepath.IsAbs(r.Workspace) {
		return nil
	}
	dir := filepath.Clean(r.Workspace)
	return &dir
}

// Taken answers which bot other than id works on this host in a folder that
// is dir, holds it or lies inside it, and that folder; dir must be clean and
// absolute. It is two index lookups in the database, however many bots
// there are: the folders of dir and each one above it, and the range of
// folders below it.
func (s *Store) Taken(ctx context.Context, id, dir string) (other, folder string, ok bool, err error) {
	if s.closed.Load() {
		return "", "", false, record.ErrClosed
	}
	var above []string
	for p := dir; ; p = filepath.Dir(p) {
		above = append(above, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	prefix := dir
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	// Every folder that starts with prefix lies in [prefix, prefix with its
	// last byte, the separator, raised by one).
	end := prefix[:len(prefix)-1] + string(rune(filepath.Separator+1))
	err = s.pool.QueryRow(ctx, `SELECT id, folder FROM bots
		WHERE id <> $1 AND (folder = ANY($2) OR (folder >= $3 AND folder < $4))
		ORDER BY folder = ANY($2) DESC, id LIMIT 1`, id, above, prefix, end).Scan(&other, &folder)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, s.fail("look for the bots in", dir, err)
	}
	return other, folder, true, nil
}
