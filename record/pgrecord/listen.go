package pgrecord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agenthost/bots/record"
)

// batch is how many changes one read of the change table takes.
const batch = 1000

// pruneEvery is how often a feed removes the changes older than Keep.
const pruneEvery = time.Hour

// execer is what prune runs on: the pool, or the feed's own connection.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// prune removes the changes older than Keep. The latest change always
// stays, so the head's revision is never lost with it.
func (s *Store) prune(ctx context.Context, db execer) error {
	_, err := db.Exec(ctx, `DELETE FROM bots_changes WHERE at < now() - $1::interval
		AND rev < (SELECT max(rev) FROM bots_changes)`, s.keep)
	if err != nil {
		return fmt.Errorf("remove old changes: %w", err)
	}
	return nil
}

// listen follows the change table from revision last until ctx ends:
// LISTEN on a connection of its own, read every change after last, wait for
// a notification (or Poll), read again. A connection that drops is made
// again, and the reading goes on from the last change published, so none
// is lost.
func (s *Store) listen(ctx context.Context, last int64) {
	defer close(s.done)
	wait := 50 * time.Millisecond
	for {
		err := s.follow(ctx, &last)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("pgrecord: the change feed lost the database; reconnecting", "err", err, "after", wait, "rev", last)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// follow listens on one connection until it fails or ctx ends.
func (s *Store) follow(ctx context.Context, last *int64) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack() // the connection is the feed's until it fails
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	s.listener.Store(conn.PgConn().PID())
	s.connOnce.Do(func() { close(s.connected) })
	read, pruned := true, time.Now()
	for {
		if time.Since(pruned) >= pruneEvery {
			if err := s.prune(ctx, conn); err != nil {
				return err
			}
			pruned = time.Now()
		}
		if read {
			if err := s.catchUp(ctx, conn, last); err != nil {
				return err
			}
		}
		wctx, cancel := context.WithTimeout(ctx, s.poll)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		read = n == nil || !s.fromPayload(n.Payload, last)
	}
}

// fromPayload publishes the change a notification carries when it is the
// one after *last, and reports whether it did (or had it already); false
// means the change table must be read.
func (s *Store) fromPayload(payload string, last *int64) bool {
	f := strings.SplitN(payload, " ", 5)
	rev, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return false
	}
	if rev <= *last {
		return true
	}
	if rev != *last+1 || len(f) != 5 {
		return false
	}
	kind, err1 := strconv.Atoi(f[1])
	tag, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	e, err := decode(tag, f[4])
	if err != nil {
		return false
	}
	s.feed.Publish(change{rev: rev, c: record.Change{Kind: record.ChangeKind(kind), ID: f[3], Entry: e}})
	*last = rev
	return true
}

// catchUp publishes every change after *last, in revision order.
func (s *Store) catchUp(ctx context.Context, conn *pgx.Conn, last *int64) error {
	for {
		rows, err := conn.Query(ctx, `SELECT rev, kind, id, etag, record FROM bots_changes WHERE rev > $1 ORDER BY rev LIMIT $2`, *last, batch)
		if err != nil {
			return err
		}
		n, first := 0, true
		for rows.Next() {
			var (
				rev, tag int64
				kind     int16
				id, text string
			)
			if err := rows.Scan(&rev, &kind, &id, &tag, &text); err != nil {
				rows.Close()
				return err
			}
			n++
			if first && rev > *last+1 {
				// Revisions have no gaps: the ones between were removed
				// (Keep) while this feed was away.
				s.log.Warn("pgrecord: changes were removed before this instance's feed read them; its watchers miss them",
					"from", *last+1, "to", rev-1)
			}
			first = false
			e, err := decode(tag, text)
			if err != nil {
				// A row this program cannot read is skipped, said once.
				s.log.Warn("pgrecord: a change cannot be read; skipped", "bot", id, "rev", rev, "err", err)
			} else {
				s.feed.Publish(change{rev: rev, c: record.Change{Kind: record.ChangeKind(kind), ID: id, Entry: e}})
			}
			*last = rev
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if n < batch {
			return nil
		}
	}
}
