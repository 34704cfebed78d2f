package bots

import (
	"context"
	"sync"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/filechatlog"
	"github.com/agenthost/bots/telemetry"
)

// startLogs are the chat logs under ConfigDir as a start lists them. The
// back sessions' replay (wake/local.New) and the bot service's load
// (bot.New) each list one kind of log: a look at every bot folder each,
// about a quarter of a second of CPU at 100,000 bots. The first listing
// lists both kinds in one pass (filechatlog.Logs.ListKinds), and the other
// kind's first listing is answered from it: no log is made between the
// two, which both run before the server serves a chat. Every later
// listing looks again.
type startLogs struct {
	*filechatlog.Logs

	mu     sync.Mutex
	passed bool
	listed map[chatlog.Kind][]chatlog.Key // the pass's, for the kinds not listed since
}

// newStartLogs returns the logs under configDir, listed once for a start,
// their operations timed into hub.
func newStartLogs(configDir string, hub *telemetry.Hub) *startLogs {
	f := filechatlog.New(configDir)
	f.Measure(hub)
	return &startLogs{Logs: f}
}

// List lists the logs of kind: from the pass for each kind's first
// listing, else from the files.
func (l *startLogs) List(ctx context.Context, kind chatlog.Kind) ([]chatlog.Key, error) {
	l.mu.Lock()
	if !l.passed {
		listed, err := l.Logs.ListKinds(ctx, chatlog.Back, chatlog.Chat)
		if err != nil {
			l.mu.Unlock()
			return nil, err
		}
		l.passed, l.listed = true, listed
	}
	keys, ok := l.listed[kind]
	delete(l.listed, kind)
	l.mu.Unlock()
	if ok {
		return keys, nil
	}
	return l.Logs.List(ctx, kind)
}
