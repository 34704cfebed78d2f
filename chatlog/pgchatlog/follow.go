package pgchatlog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/bots/chatlog"
)

// Heads returns how many lines every log of kind holds.
func (l *Logs) Heads(ctx context.Context, kind chatlog.Kind) (map[chatlog.Key]int64, error) {
	if err := (chatlog.Key{Kind: kind, Bot: "x", Session: "x"}).Check(); err != nil {
		return nil, err
	}
	rows, err := l.pool.Query(ctx, `SELECT bot, session, lines FROM bots_logs WHERE kind = $1`, string(kind))
	if err != nil {
		return nil, fmt.Errorf("read the chat logs' heads: %w", err)
	}
	defer rows.Close()
	out := map[chatlog.Key]int64{}
	for rows.Next() {
		k := chatlog.Key{Kind: kind}
		var n int64
		if err := rows.Scan(&k.Bot, &k.Session, &n); err != nil {
			return nil, fmt.Errorf("read the chat logs' heads: %w", err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the chat logs' heads: %w", err)
	}
	return out, nil
}

// Follow listens to the schema's channel on a connection of its own and
// calls changed with each write's log and count. A dropped connection is
// made again (after 100 ms, doubling up to 5 s). changed is called with
// the zero Key each time it begins to listen, the first time too: what
// was written before was not heard.
func (l *Logs) Follow(ctx context.Context, kind chatlog.Kind, changed func(chatlog.Key, int64)) error {
	wait := 100 * time.Millisecond
	for {
		err := l.listen(ctx, kind, changed)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			wait = min(2*wait, 5*time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// listen listens on one connection until it fails or ctx ends; once it
// listens it calls changed with the zero Key.
func (l *Logs) listen(ctx context.Context, kind chatlog.Kind, changed func(chatlog.Key, int64)) error {
	pc, err := l.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack() // the connection is the follower's until it fails
	defer conn.Close(context.Background())
	var channel string
	if err := conn.QueryRow(ctx, `SELECT 'bots_logs_' || left(md5(current_schema()), 16)`).Scan(&channel); err != nil {
		return fmt.Errorf("name the chat logs' channel: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	changed(chatlog.Key{}, 0)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var f []any
		if json.Unmarshal([]byte(n.Payload), &f) != nil || len(f) != 4 {
			continue
		}
		k, _ := f[0].(string)
		bot, _ := f[1].(string)
		session, _ := f[2].(string)
		count, ok := f[3].(float64)
		if !ok || chatlog.Kind(k) != kind {
			continue
		}
		changed(chatlog.Key{Kind: kind, Bot: bot, Session: session}, int64(count))
	}
}
