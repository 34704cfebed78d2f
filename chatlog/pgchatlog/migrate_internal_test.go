package pgchatlog

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/internal/pgschema"
	"github.com/agenthost/bots/internal/pgtest"
)

func TestLogsOfVersionOneAreNumberedAndCountedWhenMigrated(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pgschema.Migrate(t.Context(), pool, "chatlog", migrations[:1]); err != nil {
		t.Fatal(err)
	}
	// Two logs written as version 1 did, their lines interleaved.
	for _, q := range []string{
		`INSERT INTO bots_logs (kind, bot, session) VALUES ('logs', 'motion', 's1'), ('logs', 'motion', 's2')`,
		`INSERT INTO bots_log_lines (log, line) SELECT id, '"open"' FROM bots_logs ORDER BY id`,
		`INSERT INTO bots_log_lines (log, line) SELECT id, '"a"' FROM bots_logs ORDER BY id`,
		`INSERT INTO bots_log_lines (log, line) SELECT id, '"b"' FROM bots_logs WHERE session = 's1'`,
	} {
		if _, err := pool.Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	logs, err := Open(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	heads, err := logs.Heads(t.Context(), chatlog.Chat)
	s1 := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "s1"}
	s2 := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "s2"}
	if err != nil || heads[s1] != 3 || heads[s2] != 2 {
		t.Fatalf("after the migration Heads = %v, %v; want s1 at 3 and s2 at 2", heads, err)
	}
	if err := logs.AppendAt(t.Context(), s1, 2, []byte(`"x"`), true); !errors.Is(err, chatlog.ErrConflict) {
		t.Fatalf("an append at a passed count answered %v", err)
	}
	if err := logs.AppendAt(t.Context(), s1, 3, []byte(`"c"`), true); err != nil {
		t.Fatal(err)
	}
	lines, err := logs.ReadAfter(t.Context(), s1, 1)
	if err != nil || len(lines) != 3 || string(lines[0]) != `"a"` || string(lines[1]) != `"b"` || string(lines[2]) != `"c"` {
		t.Fatalf("s1 after its first line reads %q, %v", lines, err)
	}
}
