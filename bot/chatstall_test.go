package bot_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/record/memrecord"
)

// gatedLogs are shared logs in memory whose appends, once the gate is
// shut, wait until it opens again: a database that has gone slow.
type gatedLogs struct {
	*chatlog.Mem
	mu     sync.Mutex
	shut   chan struct{} // closed to open the gate; nil while it is open
	waited chan struct{} // closed when an append first waits at the gate
}

// shutGate makes the next appends wait; open lets them go.
func (g *gatedLogs) shutGate() (waited <-chan struct{}, open func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut, g.waited = make(chan struct{}), make(chan struct{})
	shut := g.shut
	return g.waited, sync.OnceFunc(func() { close(shut) })
}

func (g *gatedLogs) AppendAt(ctx context.Context, key chatlog.Key, n int64, line []byte, sync bool) error {
	g.mu.Lock()
	shut, waited := g.shut, g.waited
	if shut != nil {
		select {
		case <-waited:
		default:
			close(waited)
		}
	}
	g.mu.Unlock()
	if shut != nil {
		select {
		case <-shut:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Mem.AppendAt(ctx, key, n, line, sync)
}

func TestASlowLogWriteDoesNotStallTheChatsReaders(t *testing.T) {
	t.Parallel()
	logs := &gatedLogs{Mem: &chatlog.Mem{}}
	e := &chatEnv{t: t, base: t.TempDir(), store: memrecord.New(), logs: logs, leases: &lease.Mem{}, holder: "first"}
	e.configDir = filepath.Join(e.base, "config")
	e.options.Root = filepath.Join(e.base, "bots")
	e.users = chatUsers{"soft": {User: "soft", Grants: []string{"bot:put", "session:create"}}}
	e.start()
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	session, chat := c.open("ahp-session:/slow", "motion")

	// The message's first line waits on the log, holding the chat's
	// writer: a second client still subscribes and lists the chat.
	waited, open := logs.shutGate()
	defer open()
	c.say(chat, "t1", "hello")
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the message wrote no line to the log")
	}
	// Each call fails the test when it has no answer in ten seconds.
	reader := e.connect(t, "soft")
	for _, channel := range []string{chat, session} {
		if err := reader.call("subscribe", map[string]any{"channel": channel}, nil); err != nil {
			t.Fatalf("a subscription to %s was refused while its log was slow: %v", channel, err)
		}
	}
	var listed ahp.ListSessionsResult
	if err := reader.call("listSessions", map[string]any{}, &listed); err != nil || len(listed.Items) != 1 {
		t.Fatalf("listSessions while the chat's log was slow = %d sessions, %v; want the chat", len(listed.Items), err)
	}

	// Once the log answers, the turn runs to its end.
	open()
	if got := markdown(c.turn(chat, "t1")); len(got) != 1 || got[0] != "Motion heard: hello" {
		t.Fatalf("the bot says %q once the log answered", got)
	}
}
