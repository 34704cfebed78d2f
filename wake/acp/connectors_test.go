package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/wake"
)

// stubAdapter answers who called which connector.
type stubAdapter struct{}

func (stubAdapter) Call(ctx context.Context, c connector.Call) (connector.Result, error) {
	return connector.Result{Text: fmt.Sprintf("%s for %s with %s", c.Alias, c.From.String(), c.Args)}, nil
}

// mapVault holds one credential for every connector.
type mapVault struct{}

func (mapVault) Resolve(ctx context.Context, ref connector.Ref) (connector.Credential, error) {
	c := connector.NewCredential("s3cret-value", "", "")
	c.Owners = []string{connector.Everybody}
	return c, nil
}

// liveConnectors is a bot's connectors map an edit can change: List and
// Call read it as it is at the call, as the server's do.
type liveConnectors struct {
	mu     sync.Mutex
	listed map[string]string // what List answers
	live   map[string]string // what Call reads
	tools  *connector.Tools
}

func newLiveConnectors(t *testing.T, m map[string]string) *liveConnectors {
	t.Helper()
	l := &liveConnectors{listed: m, live: m}
	reg := &connector.Registry{}
	if err := reg.Register("stub", stubAdapter{}); err != nil {
		t.Fatal(err)
	}
	tools, err := connector.NewTools(connector.ToolsConfig{Bot: "motion", Registry: reg, Vault: mapVault{}, Connectors: func() map[string]string {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.live
	}})
	if err != nil {
		t.Fatal(err)
	}
	l.tools = tools
	return l
}

func (l *liveConnectors) set(listed, live map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listed, l.live = listed, live
}

func (l *liveConnectors) List(ctx context.Context, s wake.SessionInfo) ([]connector.Tool, error) {
	l.mu.Lock()
	listed := l.listed
	l.mu.Unlock()
	var out []connector.Tool
	for _, t := range l.tools.List() {
		if _, ok := listed[t.Name]; ok {
			out = append(out, t)
		}
	}
	for alias, ref := range listed {
		if _, ok := l.live[alias]; !ok {
			out = append(out, connector.Tool{Name: alias, Description: "stale " + ref, InputSchema: json.RawMessage(`"not a schema"`)})
		}
	}
	return out, nil
}

func (l *liveConnectors) Call(ctx context.Context, s wake.SessionInfo, alias string, args json.RawMessage) (connector.Result, error) {
	return l.tools.Call(ctx, access.RootPrincipal(), access.Principal{User: strings.TrimPrefix(s.Owner, "user:")}, alias, args)
}

func TestConnectorToolsFollowTheBotsLiveMapAndCarryThePerson(t *testing.T) {
	t.Parallel()
	conns := newLiveConnectors(t, map[string]string{"crm": "connectors://stub/a"})
	h := newHarness(t, func(c *Config) { c.Connectors = conns })
	a, err := h.Open(testCtx(t), wake.SessionInfo{URI: "ahp-session:/c", Provider: "fake", Dir: t.TempDir(), Owner: "user:soft"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	turn := func(text string) string {
		t.Helper()
		w := &fakeWork{text: text}
		if err := a.Turn(testCtx(t), w); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return w.replied()
	}
	if got := turn("tools"); got != "ask_question,crm,post_message" {
		t.Errorf("tools = %q", got)
	}
	if got, want := turn(`tool crm {"q":1}`), `tool: crm for user:soft with {"q":1}`; got != want {
		t.Errorf("the call said %q, want %q", got, want)
	}

	// An edit adds mail and takes crm out; the session sees it at its next turn.
	conns.set(map[string]string{"mail": "connectors://stub/m"}, map[string]string{"mail": "connectors://stub/m"})
	if got := turn("tools"); got != "ask_question,mail,post_message" {
		t.Errorf("tools after the edit = %q", got)
	}
	if got := turn("tool crm {}"); !strings.HasPrefix(got, "tool failed:") {
		t.Errorf("a call of a removed tool said %q", got)
	}

	// Taken out of the map while the agent still has the tool: a clear error.
	conns.set(map[string]string{"mail": "connectors://stub/m"}, map[string]string{})
	got := turn("tool mail {}")
	if !strings.HasPrefix(got, "tool failed:") || !strings.Contains(got, `"mail" is not among the bot's connectors`) {
		t.Errorf("a call after the alias was taken out said %q", got)
	}
}

// failingConnectors fails to list, with an error holding a value.
type failingConnectors struct{ value string }

func (f failingConnectors) List(context.Context, wake.SessionInfo) ([]connector.Tool, error) {
	return nil, fmt.Errorf("the vault said %s", f.value)
}

func (f failingConnectors) Call(context.Context, wake.SessionInfo, string, json.RawMessage) (connector.Result, error) {
	return connector.Result{}, fmt.Errorf("the vault said %s", f.value)
}

func TestHarnessLogsAreScrubbed(t *testing.T) {
	t.Parallel()
	const value = "tok-acp-log-0123456789"
	var (
		mu  sync.Mutex
		buf strings.Builder
	)
	scrub := &connector.Scrubber{}
	scrub.Add(value)
	h := newHarness(t, func(c *Config) {
		c.Connectors = failingConnectors{value}
		c.Scrubber = scrub
		c.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return buf.Write(p)
		}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	a, err := h.Open(testCtx(t), wake.SessionInfo{URI: "ahp-session:/log", Provider: "fake", Dir: t.TempDir(), Owner: "user:soft"})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "listing the bot's connectors failed") {
		t.Fatalf("the failure was not logged: %s", buf.String())
	}
	if strings.Contains(buf.String(), value) {
		t.Errorf("the harness log holds the value: %s", buf.String())
	}
}

// writerFunc is a function that is an io.Writer.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
