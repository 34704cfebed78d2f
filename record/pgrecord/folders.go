package pgrecord

import (
	"context"
	"errors"
	"fmt"
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
	above, lo, hi := claimRange(dir)
	err = s.pool.QueryRow(ctx, `SELECT id, folder FROM bots
		WHERE id <> $1 AND (folder = ANY($2) OR (folder >= $3 AND folder < $4))
		ORDER BY folder = ANY($2) DESC, id LIMIT 1`, id, above, lo, hi).Scan(&other, &folder)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, s.fail("look for the bots in", dir, err)
	}
	return other, folder, true, nil
}

// claimRange is what the database looks a folder's claim up by: dir and
// every folder above it, and the byte range [lo, hi) of the folders below
// it in the "C" collation.
func claimRange(dir string) (above []string, lo, hi string) {
	for p := dir; ; p = filepath.Dir(p) {
		above = append(above, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	lo = dir
	if !strings.HasSuffix(lo, string(filepath.Separator)) {
		lo += string(filepath.Separator)
	}
	// Every folder that starts with lo sorts before lo with its last byte,
	// the separator, raised by one.
	hi = lo[:len(lo)-1] + string(rune(filepath.Separator+1))
	return above, lo, hi
}

// claim is the arguments a write passes for r's folder: none when r works
// in no folder on this host.
func claim(r record.Record) (dir *string, above []string, lo, hi string) {
	dir = folder(r)
	if dir != nil {
		above, lo, hi = claimRange(*dir)
	}
	return dir, above, lo, hi
}

// takenError names the bot whose folder r's write would take.
func (s *Store) takenError(ctx context.Context, op string, r record.Record) error {
	e := &record.FolderTakenError{}
	if dir := folder(r); dir != nil {
		e.Folder = *dir
		e.Other, e.OtherFolder, _, _ = s.Taken(ctx, r.ID, *dir)
	}
	return fmt.Errorf("%s %s: %w", op, r.ID, e)
}
