package acp

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/wake/acp/sandbox"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/filesessions"
	"github.com/agenthost/bots/wake/agents/memsessions"
)

func TestAgentsCheckTellsEveryAgentOnceAndWhyOneIsNotReady(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-agent")
	a := Agents{{Provider: "b", Agent: Command{Command: missing}}, {Provider: "a", Agent: Command{Command: missing}}}
	var got []agents.Result
	a.Check(t.Context(), agents.Env{}, func(r agents.Result) { got = append(got, r) })
	slices.SortFunc(got, func(x, y agents.Result) int { return strings.Compare(x.Provider, y.Provider) })
	if len(got) != 2 || got[0].Provider != "a" || got[1].Provider != "b" || got[0].Ready || !strings.Contains(got[0].Problem, missing) {
		t.Errorf("results %+v", got)
	}
	if p := a.Providers(); !slices.Equal(p, []string{"b", "a"}) {
		t.Errorf("providers %q, want the agents' order", p)
	}
}

func TestAgentsAreBoundedByTheEnvAndNamedInTheLoginCommand(t *testing.T) {
	t.Parallel()
	a := Agents{
		{Provider: "claude", Protect: []string{"/mine"}, RefuseConnect: func() []uint16 { return []uint16{9} }},
		{Provider: "codex", LoginHint: "its own"},
	}
	env := agents.Env{AllowUnsandboxed: true, LoginCommand: "log in with ", Protect: []string{"/cfg", "/bots"},
		RefuseConnect: func() []uint16 { return []uint16{8080} }}
	cfgs := a.Configs(env)
	if want := []string{"/mine", "/cfg", "/bots"}; !slices.Equal(cfgs[0].Protect, want) || !cfgs[0].AllowUnsandboxed {
		t.Errorf("claude protects %q (unsandboxed %v), want %q", cfgs[0].Protect, cfgs[0].AllowUnsandboxed, want)
	}
	if got := cfgs[0].RefuseConnect(); !slices.Equal(got, []uint16{8080, 9}) {
		t.Errorf("claude may not connect to %v, want the host's ports and its own", got)
	}
	if got := cfgs[1].RefuseConnect(); !slices.Equal(got, []uint16{8080}) {
		t.Errorf("codex may not connect to %v, want the host's ports", got)
	}
	if cfgs[0].LoginHint != "log in with claude" || cfgs[1].LoginHint != "its own" {
		t.Errorf("login hints %q, %q", cfgs[0].LoginHint, cfgs[1].LoginHint)
	}
	if len(a[0].Protect) != 1 {
		t.Errorf("the agents changed: %q", a[0].Protect)
	}
}

func TestAnEnvsSessionsReplaceAStoreInFilesAndAStoreOfItsOwnStays(t *testing.T) {
	t.Parallel()
	mine := &memsessions.Store{}
	files := filesessions.Store{Dir: "/cfg/agents/claude/sessions"}
	a := Agents{{Provider: "claude", Store: files}, {Provider: "codex", Store: mine}, {Provider: "none"}}
	theirs := &memsessions.Store{}
	cfgs := a.Configs(agents.Env{Sessions: func(string) agents.SessionStore { return theirs }})
	if cfgs[0].Store != theirs {
		t.Errorf("with shared sessions the agents file's store is %T, want the shared one", cfgs[0].Store)
	}
	if cfgs[1].Store != mine {
		t.Errorf("an embedder's own store was replaced by %T", cfgs[1].Store)
	}
	if cfgs[2].Store != theirs {
		t.Errorf("an agent with no store got %T, want the shared one", cfgs[2].Store)
	}
	if without := a.Configs(agents.Env{}); without[0].Store != files || without[2].Store != nil {
		t.Errorf("without shared sessions the stores are %T and %T", without[0].Store, without[2].Store)
	}
}

func TestAgentsAreRefusedWithoutASandboxUnlessAllowed(t *testing.T) {
	t.Parallel()
	none := func() (int, error) { return 0, fmt.Errorf("%w: the kernel has no Landlock", sandbox.ErrUnavailable) }
	some := func() (int, error) { return 7, nil }
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	err := checkSandbox(false, none, log)
	if err == nil || !strings.Contains(err.Error(), "-agents-unsandboxed") || strings.Contains(err.Error(), "\n") {
		t.Errorf("agents without a sandbox: %v, want one line naming -agents-unsandboxed", err)
	}
	if !errors.Is(err, sandbox.ErrUnavailable) && !strings.Contains(err.Error(), "no Landlock") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	if err := checkSandbox(false, some, log); err != nil {
		t.Errorf("agents with a sandbox: %v", err)
	}
	if logs.Len() != 0 {
		t.Errorf("logged without the flag: %s", logs.Bytes())
	}
	for _, available := range []func() (int, error){none, some} {
		logs.Reset()
		if err := checkSandbox(true, available, log); err != nil {
			t.Errorf("with -agents-unsandboxed: %v", err)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "-agents-unsandboxed") {
			t.Errorf("-agents-unsandboxed is not logged at Warn: %q", logs.String())
		}
	}
}

func TestNoAgentsNeedNoSandbox(t *testing.T) {
	t.Parallel()
	hs, infos, err := Agents(nil).Harnesses(agents.Env{})
	if err != nil || len(hs) != 0 || len(infos) != 0 {
		t.Errorf("no agents gave %v, %v, %v", hs, infos, err)
	}
}
