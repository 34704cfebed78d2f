package replica_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/memchatlog"
	"github.com/agenthost/bots/replica"
)

var key = chatlog.Key{Kind: chatlog.Chat, Bot: "tess", Session: "ahp-session:/c1"}

// opened is a shared log holding its open line, and two replicas of it.
func opened(t *testing.T) (*memchatlog.Logs, *replica.Log, *replica.Log) {
	t.Helper()
	mem := &memchatlog.Logs{}
	if err := mem.Create(t.Context(), key, []byte(`{"kind":"open"}`)); err != nil {
		t.Fatal(err)
	}
	a := &replica.Log{Logs: mem, Shared: mem, Key: key, Lines: 1}
	b := &replica.Log{Logs: mem, Shared: mem, Key: key, Lines: 1}
	return mem, a, b
}

func TestAppendCountsTheLine(t *testing.T) {
	t.Parallel()
	mem, a, _ := opened(t)
	if err := a.Append(t.Context(), []byte(`{"n":2}`), true); err != nil {
		t.Fatal(err)
	}
	lines, _, err := mem.Read(t.Context(), key)
	if err != nil || len(lines) != 2 || a.Lines != 2 {
		t.Fatalf("after one append the log holds %d lines (%v) and the replica counts %d; want 2 and 2", len(lines), err, a.Lines)
	}
}

func TestAppendBehindWritesNothing(t *testing.T) {
	t.Parallel()
	mem, a, b := opened(t)
	if err := a.Append(t.Context(), []byte(`{"by":"a"}`), false); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(t.Context(), []byte(`{"by":"b"}`), false); !errors.Is(err, replica.ErrBehind) {
		t.Fatalf("an append behind the log answered %v, want ErrBehind", err)
	}
	lines, _, _ := mem.Read(t.Context(), key)
	if len(lines) != 2 || b.Lines != 1 {
		t.Fatalf("the refused append left %d lines and counted %d; want 2 and 1", len(lines), b.Lines)
	}
	missed, err := b.ReadNew(t.Context())
	if err != nil || len(missed) != 1 || string(missed[0]) != `{"by":"a"}` {
		t.Fatalf("ReadNew = %q, %v; want a's line", missed, err)
	}
	b.Lines += int64(len(missed))
	if err := b.Append(t.Context(), []byte(`{"by":"b"}`), false); err != nil {
		t.Fatalf("an append once caught up: %v", err)
	}
}

func TestAppendUnsharedAppends(t *testing.T) {
	t.Parallel()
	mem, _, _ := opened(t)
	l := &replica.Log{Logs: mem, Key: key} // counts nothing it did not write
	for range 2 {
		if err := l.Append(t.Context(), []byte(`{}`), false); err != nil {
			t.Fatal(err)
		}
	}
	lines, _, _ := mem.Read(t.Context(), key)
	if len(lines) != 3 || l.Lines != 2 {
		t.Fatalf("two appends left %d lines and counted %d; want 3 and 2", len(lines), l.Lines)
	}
	if news, err := l.ReadNew(t.Context()); news != nil || err != nil {
		t.Fatalf("ReadNew of a log no one else writes = %q, %v", news, err)
	}
}

func TestReadNewOfARemovedLog(t *testing.T) {
	t.Parallel()
	mem, a, _ := opened(t)
	if err := mem.Remove(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ReadNew(t.Context()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadNew of a removed log = %v, want fs.ErrNotExist", err)
	}
}

func TestDurable(t *testing.T) {
	t.Parallel()
	hello := ahp.UserMessage("hello")
	for _, a := range []ahp.Action{ahp.TurnStarted("t1", t0, hello), ahp.TurnComplete("t1", 0), ahp.TurnCancelled("t1", 0),
		ahp.TurnFailed("t1", 0, ahp.ErrorInfo{}, false), ahp.PendingMessageSet(ahp.PendingQueued, "m1", hello),
		ahp.PendingMessageRemoved(ahp.PendingQueued, "m1"), ahp.QueuedMessagesReordered(nil)} {
		if !replica.Durable(a) {
			t.Errorf("%s is not fsynced; it begins or ends a turn or changes what waits", a.Type)
		}
	}
	for _, a := range []ahp.Action{ahp.Delta("t1", "p1", "x"), ahp.ToolCallStart("t1", "c1", "x", "X"), ahp.DraftChanged(&hello)} {
		if replica.Durable(a) {
			t.Errorf("%s is fsynced; only what begins or ends a turn or changes what waits is", a.Type)
		}
	}
}

func TestInterrupted(t *testing.T) {
	t.Parallel()
	a := replica.Interrupted("t1", "2026-12-04T08:00:00Z", "2026-12-04T08:00:02.5Z", true)
	b, ok := a.Body.(*ahp.ChatErrorAction)
	if !ok || b.TurnID != "t1" || b.Duration != 2500 || !b.Part.Resumable ||
		b.Part.Error.ErrorType != replica.InterruptedType || b.Part.Error.Message != replica.InterruptedMessage {
		t.Fatalf("Interrupted = %+v", a.Body)
	}
	for _, times := range [][2]string{{"", "2026-12-04T08:00:00Z"}, {"2026-12-04T08:00:02Z", "2026-12-04T08:00:00Z"}} {
		b := replica.Interrupted("t1", times[0], times[1], false).Body.(*ahp.ChatErrorAction)
		if b.Duration != 0 || b.Part.Resumable {
			t.Errorf("Interrupted(began %q, last %q) = %d ms, resumable %v; want 0 and false", times[0], times[1], b.Duration, b.Part.Resumable)
		}
	}
}

func TestCatalogued(t *testing.T) {
	t.Parallel()
	s := ahp.SessionState{Chats: ahp.List[ahp.ChatSummary]{{Resource: "a", Status: ahp.StatusIdle}, {Resource: "b", Status: ahp.StatusIdle}}}
	c := ahp.ChatState{ChatSummary: ahp.ChatSummary{Status: ahp.StatusError, ModifiedAt: "2026-12-04T08:00:00Z"}}
	got := replica.Catalogued(s, "b", c)
	if got.Chats[1].Status != ahp.StatusError || got.Chats[1].ModifiedAt != c.ModifiedAt || got.Chats[0].Status != ahp.StatusIdle {
		t.Fatalf("Catalogued = %+v", got.Chats)
	}
	if s.Chats[1].Status != ahp.StatusIdle {
		t.Fatal("Catalogued changed the session it was given, whose list a published snapshot may share")
	}
}

func TestDecodeLeavesOutBadLinesNamingThemByNumber(t *testing.T) {
	t.Parallel()
	type line struct {
		Kind string `json:"kind"`
	}
	raw := [][]byte{[]byte(`{"kind":"chat"}`), []byte(`{"kind":`), []byte(`{"kind":"session"}`), []byte(`[1]`)}
	lines, bad := replica.Decode[line](raw, 40, []string{"before"})
	if len(lines) != 2 || lines[0].Kind != "chat" || lines[1].Kind != "session" {
		t.Errorf("lines %+v, want the chat and session lines", lines)
	}
	if len(bad) != 3 || bad[0] != "before" || !strings.HasPrefix(bad[1], "line 42: ") || !strings.HasPrefix(bad[2], "line 44: ") {
		t.Errorf("bad %q, want lines 42 and 44 after what was there", bad)
	}
}

// failing is a shared log whose appends fail while fail is set, as a full
// disk or a database gone away makes them.
type failing struct {
	*memchatlog.Logs
	fail bool
}

var errDisk = errors.New("no space left on device")

func (f *failing) Append(ctx context.Context, key chatlog.Key, line []byte, sync bool) error {
	if f.fail {
		return errDisk
	}
	return f.Logs.Append(ctx, key, line, sync)
}

func (f *failing) AppendAt(ctx context.Context, key chatlog.Key, n int64, line []byte, sync bool) error {
	if f.fail {
		return errDisk
	}
	return f.Logs.AppendAt(ctx, key, n, line, sync)
}

func TestFailedCountsFailuresInARowButNotBehind(t *testing.T) {
	t.Parallel()
	mem, _, other := opened(t)
	f := &failing{Logs: mem, fail: true}
	l := &replica.Log{Logs: f, Shared: f, Key: key, Lines: 1}
	for want := 1; want <= 2; want++ {
		if err := l.Append(t.Context(), []byte(`{}`), false); !errors.Is(err, errDisk) || l.Failed() != want {
			t.Fatalf("failing append %d: %v, Failed %d; want the disk's error and %d", want, err, l.Failed(), want)
		}
	}
	f.fail = false
	if err := other.Append(t.Context(), []byte(`{"by":"other"}`), false); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(t.Context(), []byte(`{}`), false); !errors.Is(err, replica.ErrBehind) || l.Failed() != 2 {
		t.Fatalf("an append behind: %v, Failed %d; want ErrBehind and still 2 (it wrote nothing and failed nothing)", err, l.Failed())
	}
	l.Lines++ // caught up
	if err := l.Append(t.Context(), []byte(`{}`), false); err != nil || l.Failed() != 0 {
		t.Fatalf("an append that goes in: %v, Failed %d; want nil and 0", err, l.Failed())
	}
}
