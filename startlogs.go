package bots

import (
	"context"
	"sync"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/telemetry"
)

// startLogs are the chat logs under ConfigDir as a start lists them. The
// back sessions' replay (wake.NewLocalHost) and the bot service's load
// (bot.New) each list one kind of log: a look at every bot folder each,
// about a quarter of a second of CPU at 100,000 bots. One pass lists both
// kinds (chatlog.Files.ListKinds), and each kind's first listing is
// answered from it: no log is made between the pass and those listings,
// which all run before the server serves a chat. Every later listing
// looks again. The pass may begin early (prefetch), beside the record
// store's load, whose single-threaded stretches leave a core idle.
type startLogs struct {
	*chatlog.Files

	mu     sync.Mutex
	pass   chan struct{}                  // closed once the pass is done; nil before it began
	listed map[chatlog.Kind][]chatlog.Key // the pass's, for the kinds not listed since; nil when it failed
}

// newStartLogs returns the logs under configDir, listed once for a start,
// their operations timed into hub.
func newStartLogs(configDir string, hub *telemetry.Hub) *startLogs {
	f := chatlog.NewFiles(configDir)
	f.Measure(hub)
	return &startLogs{Files: f}
}

// prefetch begins the pass in the background; wait waits for its end.
// Only for logs no other work moves while it runs: a record store's load
// that migrates an older layout moves logs into the bot folders.
func (l *startLogs) prefetch(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pass == nil {
		l.pass = make(chan struct{})
		go l.run(ctx)
	}
}

// wait waits for a pass begun to end.
func (l *startLogs) wait() {
	l.mu.Lock()
	pass := l.pass
	l.mu.Unlock()
	if pass != nil {
		<-pass
	}
}

// run makes the pass, then closes l.pass.
func (l *startLogs) run(ctx context.Context) {
	listed, _ := l.Files.ListKinds(ctx, chatlog.Back, chatlog.Chat) // on failure each kind looks again, and says why
	l.mu.Lock()
	l.listed = listed
	close(l.pass)
	l.mu.Unlock()
}

// List lists the logs of kind: from the pass for each kind's first
// listing (making the pass when none began), else from the files.
func (l *startLogs) List(ctx context.Context, kind chatlog.Kind) ([]chatlog.Key, error) {
	l.mu.Lock()
	if l.pass == nil {
		l.pass = make(chan struct{})
		l.mu.Unlock()
		l.run(ctx)
	} else {
		l.mu.Unlock()
	}
	l.wait()
	l.mu.Lock()
	keys, ok := l.listed[kind]
	delete(l.listed, kind)
	l.mu.Unlock()
	if ok {
		return keys, nil
	}
	return l.Files.List(ctx, kind)
}
