// Package pgroute keeps routes in PostgreSQL, where the records live with
// -db, so that every instance on one database runs and edits the same
// routes: one row of bots_routes per route, its version drawn from a
// sequence, and a NOTIFY on every write that each instance's Watch hears.
//
// Connections are the operator's configuration, not data: a Store reads
// them from a Connections source (the configuration folder's
// connections.json, fileroute) and passes on its changes. Give every
// instance the same connections.
package pgroute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgschema"
	"github.com/agenthost/bots/route"
)

// channel is the NOTIFY channel of route writes.
const channel = "bots_routes"

var migrations = []string{`
CREATE SEQUENCE bots_route_versions AS bigint;
CREATE TABLE bots_routes (
	id text COLLATE "C" PRIMARY KEY,
	body jsonb NOT NULL,
	version bigint NOT NULL
);
`}

// Connections is where a Store reads the connections: fileroute.Store or
// memroute.Store.
type Connections interface {
	Connections(ctx context.Context) ([]route.Connection, error)
	Watch(ctx context.Context) (<-chan struct{}, error)
}

// Store is a route.Store in PostgreSQL.
type Store struct {
	pool  *pgxpool.Pool
	conns Connections
}

var _ route.Store = (*Store)(nil)

// Open migrates bots_routes and returns the store of the pool's schema,
// whose connections are conns'. The pool stays the caller's.
func Open(ctx context.Context, pool *pgxpool.Pool, conns Connections) (*Store, error) {
	if pool == nil || conns == nil {
		return nil, errors.New("pgroute: a pool and a source of connections are required")
	}
	if err := pgschema.Migrate(ctx, pool, "route", migrations); err != nil {
		return nil, fmt.Errorf("pgroute: %w", err)
	}
	return &Store{pool: pool, conns: conns}, nil
}

// Connections are the source's.
func (s *Store) Connections(ctx context.Context) ([]route.Connection, error) {
	return s.conns.Connections(ctx)
}

// Routes lists the routes, ordered by ID.
func (s *Store) Routes(ctx context.Context) ([]route.Route, error) {
	rows, err := s.pool.Query(ctx, `SELECT body, version FROM bots_routes ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("cannot list the routes: %w", err)
	}
	out := []route.Route{}
	for rows.Next() {
		var body []byte
		var v int64
		if err := rows.Scan(&body, &v); err != nil {
			return nil, fmt.Errorf("cannot list the routes: %w", err)
		}
		var r route.Route
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("a route in the database does not parse: %w", err)
		}
		r.Version = strconv.FormatInt(v, 10)
		out = append(out, r)
	}
	return out, rows.Err()
}

// PutRoute saves r by its Version: an insert that takes the id only when
// no row has it, or an update of the row of that version.
func (s *Store) PutRoute(ctx context.Context, r route.Route) (route.Route, error) {
	if bad := route.Check(r); bad != nil {
		return route.Route{}, fmt.Errorf("the route %q was not saved: %s", r.ID, strings.Join(bad, " "))
	}
	want := r.Version
	r.Version = ""
	body, err := json.Marshal(r)
	if err != nil {
		return route.Route{}, err
	}
	var v int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if want == "" {
			err = tx.QueryRow(ctx, `INSERT INTO bots_routes (id, body, version) VALUES ($1, $2, nextval('bots_route_versions'))
				ON CONFLICT (id) DO NOTHING RETURNING version`, r.ID, body).Scan(&v)
		} else {
			old, perr := strconv.ParseInt(want, 10, 64)
			if perr != nil {
				return pgx.ErrNoRows
			}
			err = tx.QueryRow(ctx, `UPDATE bots_routes SET body = $2, version = nextval('bots_route_versions')
				WHERE id = $1 AND version = $3 RETURNING version`, r.ID, body, old).Scan(&v)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, r.ID)
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return route.Route{}, fmt.Errorf("the route %q: %w", r.ID, route.ErrConflict)
	case err != nil:
		return route.Route{}, fmt.Errorf("cannot save the route %q: %w", r.ID, err)
	}
	r.Version = strconv.FormatInt(v, 10)
	return r, nil
}

// DeleteRoute removes the route id of that version ("" for any).
func (s *Store) DeleteRoute(ctx context.Context, id, version string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var cur int64
		err := tx.QueryRow(ctx, `SELECT version FROM bots_routes WHERE id = $1 FOR UPDATE`, id).Scan(&cur)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("the route %q: %w", id, route.ErrNotFound)
		case err != nil:
			return fmt.Errorf("cannot delete the route %q: %w", id, err)
		case version != "" && version != strconv.FormatInt(cur, 10):
			return fmt.Errorf("the route %q: %w", id, route.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM bots_routes WHERE id = $1`, id); err != nil {
			return fmt.Errorf("cannot delete the route %q: %w", id, err)
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, id)
		return err
	})
}

// Watch sends after every write of a route on the database, by any
// instance, and every change of the connections, until ctx ends. It
// listens on a connection of its own, taken from the pool for good and
// closed at the end; when that connection fails it reports a change (one
// may have been missed) and listens on another.
func (s *Store) Watch(ctx context.Context) (<-chan struct{}, error) {
	conns, err := s.conns.Watch(ctx)
	if err != nil {
		return nil, err
	}
	first, err := s.listen(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot watch the routes: %w", err)
	}
	out := make(chan struct{}, 1)
	send := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	notes := make(chan struct{}, 1)
	go func() {
		defer close(notes)
		c := first
		for c != nil {
			for {
				if _, err := c.WaitForNotification(ctx); err != nil {
					break
				}
				select {
				case notes <- struct{}{}:
				default:
				}
			}
			_ = c.Close(context.Background())
			if ctx.Err() != nil {
				return
			}
			select {
			case notes <- struct{}{}:
			default:
			}
			c = s.relisten(ctx)
		}
	}()
	go func() {
		defer close(out)
		for {
			select {
			case _, ok := <-notes:
				if !ok {
					return
				}
				send()
			case _, ok := <-conns:
				if !ok {
					conns = nil // ctx ended: notes closes next
					continue
				}
				send()
			}
		}
	}()
	return out, nil
}

// listen takes a connection out of the pool and listens on it.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	c := pc.Hijack()
	if _, err := c.Exec(ctx, "LISTEN "+channel); err != nil {
		_ = c.Close(context.Background())
		return nil, err
	}
	return c, nil
}

// relisten listens again, every second until it can or ctx ends (nil).
func (s *Store) relisten(ctx context.Context) *pgx.Conn {
	for {
		if c, err := s.listen(ctx); err == nil {
			return c
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
