package acp

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp/acpfake"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/memsessions"
)

// fakeKey is the key the fake agent's env_var sign-in reads.
const fakeKey = "k-3f1d9c-not-a-real-key"

// authCfg is a fake agent's Config that asks for sign-in mode (see
// acpfake.AuthEnv), passing the variables env names from environ.
func authCfg(t *testing.T, mode string, env []string, environ ...string) Config {
	t.Helper()
	environ = append([]string{fakeEnv + "=1", acpfake.AuthEnv + "=" + mode}, environ...)
	return Config{
		Provider:     "fake",
		Agent:        Command{Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: append([]string{fakeEnv, acpfake.AuthEnv}, env...)},
		Environ:      func() []string { return environ },
		StartTimeout: 10 * time.Second,
		Logger:       slog.New(slog.NewTextHandler(newTestWriter(t), nil)),
	}
}

// openErr opens a session of cfg's harness in a new folder and returns
// the error.
func openErr(t *testing.T, cfg Config) error {
	t.Helper()
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := h.Open(testCtx(t), wake.SessionInfo{URI: "ahp-session:/auth", Provider: "fake", Dir: t.TempDir()})
	if err == nil {
		a.Close()
	}
	return err
}

func TestEnvVarSignInIsCalledBeforeSessionNew(t *testing.T) {
	t.Parallel()
	logs := &waittest.Log{}
	cfg := authCfg(t, "env", []string{acpfake.KeyEnv}, acpfake.KeyEnv+"="+fakeKey)
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := h.Open(testCtx(t), wake.SessionInfo{URI: "ahp-session:/auth", Provider: "fake", Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("with %s set and passed the agent does not open: %v", acpfake.KeyEnv, err)
	}
	defer a.Close()
	if w := mustTurn(t, a.(*agent), "post signed in"); len(w.posts) != 1 || w.posts[0] != "signed in" {
		t.Errorf("posts %q", w.posts)
	}
	if !strings.Contains(logs.String(), "acp: signed in") || !strings.Contains(logs.String(), "method="+acpfake.KeyMethod) {
		t.Errorf("the log does not say it signed in with %s:\n%s", acpfake.KeyMethod, logs.String())
	}
	if strings.Contains(logs.String(), fakeKey) {
		t.Error("the log holds the key")
	}
}

func TestEnvVarSignInLetsSessionLoadContinueAfterARestart(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "env", []string{acpfake.KeyEnv}, acpfake.KeyEnv+"="+fakeKey)
	cfg.Store = &memsessions.Store{}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a := open(t, h, dir)
	first := mustTurn(t, a, "session").replied()
	a.Close()
	a = open(t, h, dir)
	if got := mustTurn(t, a, "session").replied(); got != strings.TrimSuffix(first, "false")+"true" {
		t.Errorf("after a restart the agent says %q, want the session of %q loaded", got, first)
	}
}

func TestMissingKeySaysWhichVariableAndWhereToPutIt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		env     []string
		environ []string
		want    string
	}{
		{"not passed", nil, []string{acpfake.KeyEnv + "=" + fakeKey},
			"signing in needs FAKE_API_KEY; add it to the agents file's env and set it"},
		{"passed but not set", []string{acpfake.KeyEnv}, nil,
			"signing in needs FAKE_API_KEY, which the agents file's env passes but the server's environment does not set; set it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := openErr(t, authCfg(t, "env", c.env, c.environ...))
			if !errors.Is(err, ErrNotSignedIn) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want ErrNotSignedIn saying %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), fakeKey) {
				t.Error("the error holds the key")
			}
		})
	}
}

func TestAuthNamingAMethodTheAgentDoesNotOfferIsRefused(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "env", []string{acpfake.KeyEnv}, acpfake.KeyEnv+"="+fakeKey)
	cfg.Agent.Auth = "oauth"
	err := openErr(t, cfg)
	if want := `the agents file's auth names "oauth", which the agent does not offer (it offers fake-key)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestNamedAgentMethodIsAuthenticatedWithTheLoginInHome(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "login", nil)
	cfg.Agent.Auth = acpfake.LoginMethod
	cfg.Home = t.TempDir()
	err := openErr(t, cfg)
	if want := "the agent refused to sign in with fake-login"; !errors.Is(err, ErrNotSignedIn) || !strings.Contains(err.Error(), want) {
		t.Errorf("before the login: %v, want %q", err, want)
	}
	if err := os.WriteFile(filepath.Join(cfg.Home, acpfake.LoginFile), []byte("ada\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := openErr(t, cfg); err != nil {
		t.Errorf("after the login: %v", err)
	}
}

func TestNotLoggedInSaysHowToLogIn(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "login", nil)
	cfg.Home = t.TempDir()
	cfg.LoginHint = "go run ./examples/server -login fake"
	err := openErr(t, cfg)
	want := "the agent is not signed in: log it in with go run ./examples/server -login fake; or name the sign-in method it should use in the agents file's auth (it offers fake-login)"
	if !errors.Is(err, ErrNotSignedIn) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

// login runs Login of cfg with the answer typed on its terminal, and
// returns what it printed.
func login(t *testing.T, cfg Config, answer string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := logIn(testCtx(t), cfg, agents.Terminal{In: strings.NewReader(answer), Out: &out, Err: &out})
	return out.String(), err
}

func TestLoginRunsTheAgentsTerminalMethodWithItsHome(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "login", nil)
	cfg.Home = t.TempDir()
	out, err := login(t, cfg, "ada\n")
	if err != nil || !strings.Contains(out, "logged in as ada") {
		t.Fatalf("login: %v, said %q", err, out)
	}
	if want := "fake: running " + os.Args[0] + " -test.run=^$ login with HOME " + cfg.Home; !strings.Contains(out, want) {
		t.Errorf("the login did not say what it runs: %q, want %q", out, want)
	}
	if _, err := os.Stat(filepath.Join(cfg.Home, acpfake.LoginFile)); err != nil {
		t.Errorf("the login is not in the agent's HOME: %v", err)
	}
	if err := openErr(t, cfg); err != nil {
		t.Errorf("after the login the agent does not open: %v", err)
	}
}

func TestLoginRunsTheCommandTheAgentNames(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "", nil)
	cfg.Home = t.TempDir()
	cfg.Agent.Login = &LoginCommand{Command: os.Args[0], Args: []string{"-test.run=^$", "login"}}
	if out, err := login(t, cfg, "grace\n"); err != nil || !strings.Contains(out, "logged in as grace") {
		t.Fatalf("login: %v, said %q", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(cfg.Home, acpfake.LoginFile)); err != nil || string(b) != "grace\n" {
		t.Errorf("login file %q, %v", b, err)
	}
}

func TestFailedLoginIsAnError(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "login", nil)
	cfg.Home = t.TempDir()
	if _, err := login(t, cfg, "\n"); err == nil || !strings.Contains(err.Error(), "the login of agent fake") {
		t.Errorf("an empty name logs in: %v", err)
	}
}

func TestLoginWithoutATerminalMethodSaysWhatToName(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "env", nil)
	cfg.Home = t.TempDir()
	_, err := login(t, cfg, "ada\n")
	if want := `offers no terminal login (it offers fake-key); name the command that logs it in in the agents file's login`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestCheckSaysReadyOrWhatIsMissing(t *testing.T) {
	t.Parallel()
	ready := authCfg(t, "env", []string{acpfake.KeyEnv}, acpfake.KeyEnv+"="+fakeKey)
	noKey := authCfg(t, "env", nil)
	noCommand := authCfg(t, "", nil)
	noCommand.Agent.Command = "no-such-agent-command"
	hangs := authCfg(t, "", []string{acpfake.HangNewEnv}, acpfake.HangNewEnv+"=1")
	// long enough for initialize under CI's load (-race, two cores), so
	// that the step that hangs is the one it names
	hangs.StartTimeout = 2 * time.Second
	crashes := authCfg(t, "", nil)
	crashes.Agent.Command, crashes.Agent.Args = "false", nil
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"ready", ready, "fake: ready"},
		{"no key", noKey, "fake: not ready: signing in needs FAKE_API_KEY; add it to the agents file's env and set it"},
		{"no command", noCommand, "fake: not ready: command no-such-agent-command not found on PATH"},
		{"hangs", hangs, "fake: not ready: the agent did not answer session/new within 2s"},
		{"exits", crashes, "fake: not ready: the agent ended during initialize: it exited with status 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := checkOne(testCtx(t), c.cfg)
			if !strings.HasPrefix(r.String(), c.want) || r.Ready != (c.want == "fake: ready") {
				t.Errorf("check says %q (ready %v), want %q", r, r.Ready, c.want)
			}
		})
	}
}

func TestCheckStopsWithItsContext(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "", []string{acpfake.HangNewEnv}, acpfake.HangNewEnv+"=1")
	// The agent hangs at session/new for good: the time is what it may
	// take to get there on a loaded machine, which 300 ms was not.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if r := checkOne(ctx, cfg); r.Ready || !strings.Contains(r.Problem, "the check was stopped before the agent answered session/new") {
		t.Errorf("check says %q", r)
	}
}

func TestAgentMethodThatStillAsksNamesTheUnsetVariable(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "agent-key", []string{acpfake.KeyEnv})
	cfg.Agent.Auth = acpfake.AgentKeyMethod
	err := openErr(t, cfg)
	want := `the agent answered session/new with "Fake API key is missing"; it still asks after signing in with fake-agent-key, and FAKE_API_KEY is in the agents file's env but not set in the server's environment; set it`
	if !errors.Is(err, ErrNotSignedIn) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	cfg = authCfg(t, "agent-key", []string{acpfake.KeyEnv}, acpfake.KeyEnv+"="+fakeKey)
	cfg.Agent.Auth = acpfake.AgentKeyMethod
	if err := openErr(t, cfg); err != nil {
		t.Errorf("with the key set: %v", err)
	}
}

func TestPromptAskingToSignInSaysHowToLogIn(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "login", nil)
	cfg.Home = t.TempDir()
	cfg.LoginHint = "go run ./examples/server -login fake"
	if err := os.WriteFile(filepath.Join(cfg.Home, acpfake.LoginFile), []byte("ada\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := open(t, h, "")
	_, err = runTurn(t, a, "signedout")
	if want := "The agent fake failed during the turn: the agent is not signed in: log it in with go run ./examples/server -login fake"; !errors.Is(err, ErrNotSignedIn) || !strings.Contains(err.Error(), want) {
		t.Errorf("turn error %v, want %q", err, want)
	}
}

func TestNotSignedInNamesAPassedVariableTheServerDoesNotSet(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "login", []string{"ANTHROPIC_API_KEY"})
	cfg.Home = t.TempDir()
	cfg.LoginHint = "go run ./examples/server -login fake"
	err := openErr(t, cfg)
	want := "log it in with go run ./examples/server -login fake; or set ANTHROPIC_API_KEY, which the agents file's env passes but the server's environment does not set"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestALoginThatLeavesNothingInItsHomeIsNoLogin(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "", nil)
	cfg.Home = t.TempDir()
	cfg.Agent.Login = &LoginCommand{Command: "/bin/sh", Args: []string{"-c", "exit 0"}}
	if _, err := login(t, cfg, ""); err == nil || !strings.Contains(err.Error(), "left nothing in its HOME") {
		t.Errorf("a login that wrote nothing: %v", err)
	}
}

func TestALoginIsGivenTheTerminalAndTheLocale(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "", nil)
	cfg.Home = t.TempDir()
	cfg.Environ = func() []string {
		return []string{"TERM=xterm-256color", "LANG=de_DE.UTF-8", "LC_TIME=en_GB.UTF-8", "SECRET_OF_THE_SERVER=no", "PATH=" + DefaultPath}
	}
	cfg.Agent.Login = &LoginCommand{Command: "/bin/sh", Args: []string{"-c", `echo "$TERM $LANG $LC_TIME $SECRET_OF_THE_SERVER" > "$HOME/seen"`}}
	if _, err := login(t, cfg, ""); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(cfg.Home, "seen"))
	if err != nil || string(got) != "xterm-256color de_DE.UTF-8 en_GB.UTF-8 \n" {
		t.Errorf("the login saw %q (%v)", got, err)
	}
}

func TestNotSignedInSaysSetAVariableTheAgentsFileAlreadyPasses(t *testing.T) {
	t.Parallel()
	methods := []sdk.AuthMethod{
		{EnvVar: &sdk.AuthMethodEnvVarInline{Id: "openai-api-key", Type: "env_var", Vars: []sdk.AuthEnvVar{{Name: "OPENAI_API_KEY"}}}},
		{EnvVar: &sdk.AuthMethodEnvVarInline{Id: "codex-api-key", Type: "env_var", Vars: []sdk.AuthEnvVar{{Name: "CODEX_API_KEY"}}}},
	}
	cfg := Config{Provider: "codex", Agent: Command{Command: "codex-acp", Env: []string{"PATH", "OPENAI_API_KEY"}},
		Environ: func() []string { return []string{"PATH=/usr/bin"} }}
	got := notSignedIn(cfg, "session/new", "", methods)
	want := "signing in needs OPENAI_API_KEY or CODEX_API_KEY; the agents file's env passes OPENAI_API_KEY, which the server's environment does not set: set it"
	if !strings.Contains(got, want) || strings.Contains(got, "add one to the agents file's env") {
		t.Errorf("notSignedIn says %q, want %q", got, want)
	}
	cfg.Agent.Env = []string{"PATH"}
	if got := notSignedIn(cfg, "session/new", "", methods); !strings.Contains(got, "add one to the agents file's env and set it") {
		t.Errorf("with neither passed notSignedIn says %q", got)
	}
}

func TestCheckSaysNotSignedInWhenAKeyIsNamedButUnsetAndNoLoginIsKept(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "", []string{"FAKE_API_KEY"})
	cfg.Home = t.TempDir()
	cfg.LoginHint = "go run ./examples/server -login fake"
	r := checkOne(testCtx(t), cfg)
	want := "fake: not ready: the agent is not signed in: FAKE_API_KEY is named in the agents file's env but not set in the server's environment, and its login HOME (" + cfg.Home + ") holds no login; set it, or log it in with go run ./examples/server -login fake"
	if r.Ready || r.String() != want {
		t.Errorf("check says %q, want %q", r, want)
	}
}

func TestACheckThatPassesSaysWhatSignedTheAgentIn(t *testing.T) {
	t.Parallel()
	withLogin := authCfg(t, "", []string{"FAKE_API_KEY"})
	withLogin.Home = t.TempDir()
	writeAt(t, filepath.Join(withLogin.Home, ".codex", "auth.json"), `{"OPENAI_API_KEY":"left-over"}`, time.Now())
	withKey := authCfg(t, "", []string{"FAKE_API_KEY"}, "FAKE_API_KEY="+fakeKey)
	withMethod := authCfg(t, "env", []string{acpfake.KeyEnv}, acpfake.KeyEnv+"="+fakeKey)
	for cfg, want := range map[*Config]string{
		&withLogin:  "fake: ready, signed in with the login kept in " + withLogin.Home + " (.codex/auth.json)",
		&withKey:    "fake: ready, signed in with the key in FAKE_API_KEY",
		&withMethod: "fake: ready, signed in with the key in " + acpfake.KeyEnv,
	} {
		if r := checkOne(testCtx(t), *cfg); r.String() != want {
			t.Errorf("check says %q, want %q", r, want)
		}
	}
}

func TestACheckNeverTriesAnAgentsOwnSignInWithNoLoginKeptAndNoKey(t *testing.T) {
	t.Parallel()
	cfg := authCfg(t, "login", nil)
	cfg.Agent.Auth = acpfake.LoginMethod
	cfg.Home = t.TempDir()
	cfg.LoginHint = "go run ./examples/server -login fake"
	r := checkOne(testCtx(t), cfg)
	want := "fake: not ready: the agent is not signed in: the agents file's auth names fake-login, which signs in through the agent itself (in a browser, for an account) that nobody watches during a check, and its login HOME (" + cfg.Home + ") holds no login; log it in once with go run ./examples/server -login fake, or pass it a key"
	if r.String() != want {
		t.Errorf("check says %q, want %q", r, want)
	}
	if r.Took > 5*time.Second {
		t.Errorf("the check took %v: it waited on the sign-in", r.Took)
	}
	// Once logged in, the check signs in with the login kept.
	writeAt(t, filepath.Join(cfg.Home, acpfake.LoginFile), "ada\n", time.Now())
	if r := checkOne(testCtx(t), cfg); !r.Ready {
		t.Errorf("after the login the check says %q", r)
	}
}
