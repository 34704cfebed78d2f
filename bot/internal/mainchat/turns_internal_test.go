package mainchat

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/memchatlog"
	"github.com/agenthost/bots/replica"
)

// chatOfTurns is a chat log of n turns, each a message, a reply streamed
// in three deltas, and its end, with a line that does not decode after
// the first turn.
func chatOfTurns(tb testing.TB, n int) (chatlog.Logs, chatlog.Key) {
	tb.Helper()
	ctx := context.Background()
	logs := &memchatlog.Logs{}
	key := logKey("motion", "bot:/session/1")
	if err := createLog(logs, key, logLine{Kind: replica.LineOpen, Session: key.Session}); err != nil {
		tb.Fatal(err)
	}
	at := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	add := func(a ahp.Action) {
		line, err := json.Marshal(logLine{Kind: replica.LineChat, At: ahp.FormatTime(at), Action: &a})
		if err != nil {
			tb.Fatal(err)
		}
		if err := logs.Append(ctx, key, line, false); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		add(ahp.TurnStarted(id, at, ahp.UserMessage(fmt.Sprintf("message %d", i))))
		add(ahp.AppendPart(id, ahp.ResponsePart{Markdown: &ahp.MarkdownPart{ID: "p"}}))
		for range 3 {
			add(ahp.Delta(id, "p", "a part of the reply "))
		}
		add(ahp.TurnComplete(id, time.Second))
		if i == 0 {
			if err := logs.Append(ctx, key, []byte(`{"kind": "chat", "action": 7}`), false); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return logs, key
}

func TestOlderTurnsAreTheTurnsAtThePlacesAskedSkippingALineThatDoesNotDecode(t *testing.T) {
	t.Parallel()
	logs, key := chatOfTurns(t, 20)
	for _, c := range []struct{ from, to int }{{0, 5}, {15, 20}, {7, 8}, {0, 20}} {
		turns, err := olderTurns(logs, key, c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		if len(turns) != c.to-c.from {
			t.Fatalf("turns %d to %d: got %d", c.from, c.to, len(turns))
		}
		for i, turn := range turns {
			if want := fmt.Sprintf("message %d", c.from+i); turn.Message.Text != want || turn.State != ahp.TurnStateComplete {
				t.Errorf("turns %d to %d: the %dth is %q, %s; want %q, complete", c.from, c.to, i, turn.Message.Text, turn.State, want)
			}
		}
	}
}

// BenchmarkOlderTurns pages through a chat of 1,000 turns: its oldest
// page and its newest, 50 turns each.
func BenchmarkOlderTurns(b *testing.B) {
	logs, key := chatOfTurns(b, 1000)
	for _, c := range []struct {
		name     string
		from, to int
	}{{"oldest", 0, 50}, {"newest", 950, 1000}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := olderTurns(logs, key, c.from, c.to); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
