package connector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/connector"
)

// echoAdapter answers the connector, the person and the credential's value
// itself, as a careless far end would.
type echoAdapter struct {
	mu    sync.Mutex
	calls []connector.Call
}

func (a *echoAdapter) Call(_ context.Context, c connector.Call) (connector.Result, error) {
	a.mu.Lock()
	a.calls = append(a.calls, c)
	a.mu.Unlock()
	if c.From.User == "mallory" {
		return connector.Result{}, fmt.Errorf("%s refuses %s (key %s): %w", c.Ref, c.From, c.Credential.Value(), connector.ErrDenied)
	}
	return connector.Result{Text: fmt.Sprintf("%s for %s with %s args %s", c.Ref, c.From, c.Credential.Value(), c.Args)}, nil
}

type mapVault map[string]string

func (v mapVault) Resolve(_ context.Context, ref connector.Ref) (connector.Credential, error) {
	s, ok := v[ref.Adapter+"/"+ref.ID]
	if !ok {
		return connector.Credential{}, fmt.Errorf("%s: %w", ref, connector.ErrNoCredential)
	}
	c := connector.NewCredential(s, "", "")
	c.Owners = []string{connector.Everybody}
	return c, nil
}

// liveMap is a bot's connectors map that a test edits while tools read it.
type liveMap struct {
	mu sync.Mutex
	m  map[string]string
}

func (l *liveMap) get() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.m)
}

func (l *liveMap) set(m map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m = m
}

func newTools(t *testing.T, live *liveMap, log *bytes.Buffer) (*connector.Tools, *echoAdapter) {
	t.Helper()
	var reg connector.Registry
	a := &echoAdapter{}
	if err := reg.Register("echo", a); err != nil {
		t.Fatal(err)
	}
	var logger *slog.Logger
	if log != nil {
		logger = slog.New(slog.NewTextHandler(log, nil))
	}
	tools, err := connector.NewTools(connector.ToolsConfig{
		Bot:        "motion",
		Connectors: live.get,
		Registry:   &reg,
		Vault:      mapVault{"echo/one": secret, "echo/two": secret + "-two"},
		Logger:     logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tools, a
}

var ann = access.Principal{User: "ann"}

func TestToolsListOnePerAlias(t *testing.T) {
	t.Parallel()
	live := &liveMap{m: map[string]string{
		"work": "connectors://echo/one", "home": "connectors://echo/two", "gone": "connectors://nowhere/x",
	}}
	tools, _ := newTools(t, live, nil)
	got := tools.List()
	if len(got) != 2 || got[0].Name != "home" || got[1].Name != "work" {
		t.Fatalf("List() = %+v, want home and work", got)
	}
	if got[1].Ref != (connector.Ref{Adapter: "echo", ID: "one"}) || !json.Valid(got[1].InputSchema) || got[1].Description == "" {
		t.Errorf("tool = %+v", got[1])
	}
}

func TestToolsEditReachesNextCall(t *testing.T) {
	t.Parallel()
	live := &liveMap{m: map[string]string{"work": "connectors://echo/one"}}
	tools, a := newTools(t, live, nil)
	if _, err := tools.Call(context.Background(), ann, ann, "work", json.RawMessage(`{"q":1}`)); err != nil {
		t.Fatal(err)
	}
	live.set(map[string]string{"work": "connectors://echo/two", "more": "connectors://echo/one"})
	if _, err := tools.Call(context.Background(), ann, ann, "work", nil); err != nil {
		t.Fatal(err)
	}
	if len(tools.List()) != 2 {
		t.Errorf("List() after the edit = %+v", tools.List())
	}
	if a.calls[0].Ref.ID != "one" || a.calls[1].Ref.ID != "two" {
		t.Errorf("calls went to %s then %s, want one then two", a.calls[0].Ref, a.calls[1].Ref)
	}
	if a.calls[0].From.User != "ann" || a.calls[0].Bot != "motion" || a.calls[0].Alias != "work" || string(a.calls[1].Args) != "{}" {
		t.Errorf("the call carries %+v", a.calls[0])
	}
}

func TestToolsRemovedAliasFails(t *testing.T) {
	t.Parallel()
	live := &liveMap{m: map[string]string{"work": "connectors://echo/one"}}
	tools, _ := newTools(t, live, nil)
	live.set(map[string]string{})
	_, err := tools.Call(context.Background(), ann, ann, "work", nil)
	if !errors.Is(err, connector.ErrNoAlias) || !strings.Contains(err.Error(), `connector "work" is not among the bot's connectors`) {
		t.Fatalf("Call after the alias was taken out = %v", err)
	}
}

func TestToolsUnknownAdapterFails(t *testing.T) {
	t.Parallel()
	live := &liveMap{m: map[string]string{"work": "connectors://nowhere/one"}}
	tools, _ := newTools(t, live, nil)
	if _, err := tools.Call(context.Background(), ann, ann, "work", nil); !errors.Is(err, connector.ErrNoAdapter) {
		t.Fatalf("Call = %v, want ErrNoAdapter", err)
	}
}

func TestToolsMissingCredentialFails(t *testing.T) {
	t.Parallel()
	live := &liveMap{m: map[string]string{"work": "connectors://echo/three"}}
	tools, _ := newTools(t, live, nil)
	if _, err := tools.Call(context.Background(), ann, ann, "work", nil); !errors.Is(err, connector.ErrNoCredential) {
		t.Fatalf("Call = %v, want ErrNoCredential", err)
	}
}

func TestToolsRefuseInvalidArguments(t *testing.T) {
	t.Parallel()
	live := &liveMap{m: map[string]string{"work": "connectors://echo/one"}}
	tools, a := newTools(t, live, nil)
	if _, err := tools.Call(context.Background(), ann, ann, "work", json.RawMessage(`{`)); err == nil || len(a.calls) != 0 {
		t.Fatalf("Call with broken JSON = %v after %d calls", err, len(a.calls))
	}
}

func TestToolsScrubResultErrorAndLog(t *testing.T) {
	t.Parallel()
	live := &liveMap{m: map[string]string{"work": "connectors://echo/one"}}
	var log bytes.Buffer
	tools, _ := newTools(t, live, &log)
	res, err := tools.Call(context.Background(), ann, ann, "work", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Text, secret) || !strings.Contains(res.Text, connector.Redacted) {
		t.Errorf("result = %q", res.Text)
	}
	_, err = tools.Call(context.Background(), ann, access.Principal{User: "mallory"}, "work", nil)
	if !errors.Is(err, connector.ErrDenied) || strings.Contains(err.Error(), secret) {
		t.Errorf("refusal = %v", err)
	}
	if strings.Contains(log.String(), secret) || !strings.Contains(log.String(), "connector call") {
		t.Errorf("log = %s", log.String())
	}
	if !tools.Scrubber().Contains(secret) {
		t.Error("the tools' scrubber did not learn the value")
	}
}

func TestNewToolsRefusesMissingParts(t *testing.T) {
	t.Parallel()
	for _, cfg := range []connector.ToolsConfig{
		{Registry: &connector.Registry{}, Vault: mapVault{}},
		{Connectors: func() map[string]string { return nil }, Vault: mapVault{}},
		{Connectors: func() map[string]string { return nil }, Registry: &connector.Registry{}},
	} {
		if _, err := connector.NewTools(cfg); err == nil {
			t.Errorf("NewTools(%+v) accepted", cfg)
		}
	}
}
