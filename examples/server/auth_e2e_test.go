package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/wake/acp/acpfake"
)

// The end-to-end tests of signing agents in, -login and -check-agents,
// through the built server and the fake agent.

// e2eKey is the key the fake agent's env_var sign-in reads.
const e2eKey = "k-e2e-7c2b91-not-a-real-key"

// fakeAgent is an agents file entry running the fake agent, passing it the
// variables env names besides acpfake.Env.
func fakeAgent(env ...string) map[string]any {
	return map[string]any{"command": os.Args[0], "args": []string{"-test.run=^$"}, "env": append([]string{acpfake.Env}, env...)}
}

// writeAgents writes the setup's agents file.
func (s *acpSetup) writeAgents(t *testing.T, agents map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"agents": agents})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.agents, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitLog waits until the server's logs hold every one of want, and
// returns them.
func (s *acpSetup) waitLog(t *testing.T, want ...string) string {
	t.Helper()
	var logs, missing string
	if !waittest.Within(20*time.Second, func() bool {
		logs, missing = string(s.logs.Bytes()), ""
		for _, w := range want {
			if !strings.Contains(logs, w) {
				missing = w
				break
			}
		}
		return missing == ""
	}) {
		t.Fatalf("the logs never said %q:\n%s", missing, logs)
	}
	return logs
}

// sayFails starts a turn in chat that must fail, and returns the error the
// person sees.
func sayFails(t *testing.T, c *ahpClient, chat, id, words string) string {
	t.Helper()
	c.dispatch(chat, ahp.TurnStarted(id, time.Now(), ahp.UserMessage(words)))
	turn := c.turn(chat, id)
	var msgs []string
	for _, p := range turn.ResponseParts {
		if p.Error != nil {
			msgs = append(msgs, p.Error.Error.Message)
		}
	}
	if turn.State != ahp.TurnStateError || len(msgs) != 1 {
		b, _ := json.Marshal(turn)
		t.Fatalf("%q: the main turn ended %s, want one error: %s", words, turn.State, b)
	}
	t.Logf("the person reads: %s", msgs[0])
	return msgs[0]
}

// runServer runs the built server with args and stdin, and returns its
// stdout, stderr and exit error.
func (s *acpSetup) runServer(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return s.runServerOn(t, strings.NewReader(stdin), nil, "", args...)
}

// runServerOnTerminal is runServer with a terminal as the server's input,
// on which typed is typed.
func (s *acpSetup) runServerOnTerminal(t *testing.T, typed string, args ...string) (string, string, error) {
	t.Helper()
	main, term := openPTY(t)
	return s.runServerOn(t, term, main, typed, args...)
}

// runServerOn runs the server with stdin; when keys is set, typed is
// written to it once the server runs.
func (s *acpSetup) runServerOn(t *testing.T, stdin io.Reader, keys io.Writer, typed string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(s.bin, append([]string{"-config", s.config, "-root", s.root, "-agents", s.agents}, args...)...)
	cmd.Env = s.env()
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if keys != nil {
		if _, err := io.WriteString(keys, typed); err != nil {
			t.Fatal(err)
		}
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), errOut.String(), err
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("server %q did not end: %s %s", args, out.String(), errOut.String())
		return "", "", nil
	}
}

func TestEndToEndAgentSignsInWithItsKeyAndContinuesAfterARestart(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t)
	setup.environ = []string{acpfake.AuthEnv + "=env", acpfake.KeyEnv + "=" + e2eKey}
	setup.writeAgents(t, map[string]any{"fake": fakeAgent(acpfake.AuthEnv, acpfake.KeyEnv)})
	srv := setup.start(t)
	setup.waitLog(t, `msg="agent ready" agent=fake`)
	c := dialChat(t, srv.addr, "auth")
	c.makeBot("motion", `{"name": "Motion", "provider": "fake"}`)
	chat := c.openChat("ahp-session:/auth", "motion")
	if got := say(t, c, chat, "t1", "post signed in"); len(got) != 1 || got[0] != "signed in" {
		t.Fatalf("the main turn says %q", got)
	}
	got := say(t, c, chat, "t2", "session")
	if len(got) != 1 || !strings.HasSuffix(got[0], " loaded=false") {
		t.Fatalf("the agent session: %q", got)
	}
	id := strings.TrimSuffix(got[0], " loaded=false")
	setup.waitLog(t, `msg="acp: signed in"`, "method="+acpfake.KeyMethod)
	srv.stop(t)

	srv = setup.start(t)
	c = dialChat(t, srv.addr, "auth-2")
	c.subscribe("ahp-session:/auth")
	c.subscribe(chat)
	if got := say(t, c, chat, "t3", "session"); len(got) != 1 || got[0] != id+" loaded=true" {
		t.Errorf("after the restart the agent says %q, want %q (session/load after signing in)", got, id+" loaded=true")
	}
	srv.stop(t)
	for name, data := range map[string][]byte{"the logs": setup.logs.Bytes(), "the WebSocket traffic": setup.wire.Bytes()} {
		if bytes.Contains(data, []byte(e2eKey)) {
			t.Errorf("%s hold the key", name)
		}
	}
}

func TestEndToEndAgentMissingItsKeySaysWhichVariableInTheChatAndTheLog(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t)
	setup.environ = []string{acpfake.AuthEnv + "=env", acpfake.KeyEnv + "=" + e2eKey}
	setup.writeAgents(t, map[string]any{"fake": fakeAgent(acpfake.AuthEnv)}) // the key is not passed
	srv := setup.start(t)
	const want = "signing in needs FAKE_API_KEY; add it to the agents file's env and set it"
	setup.waitLog(t, `level=WARN msg="agent not ready" agent=fake problem="`+want)
	c := dialChat(t, srv.addr, "nokey")
	c.makeBot("motion", `{"name": "Motion", "provider": "fake"}`)
	chat := c.openChat("ahp-session:/nokey", "motion")
	if got := sayFails(t, c, chat, "t1", "post hello"); !strings.Contains(got, want) {
		t.Errorf("the person reads %q, want it to say %q", got, want)
	}
	setup.waitLog(t, `level=WARN msg="acp: the agent is not signed in" agent=fake`)
	srv.stop(t)
	if bytes.Contains(setup.logs.Bytes(), []byte(e2eKey)) {
		t.Error("the logs hold the key")
	}
}

func TestEndToEndLoginLetsTheAgentIn(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t)
	setup.environ = []string{acpfake.AuthEnv + "=login"}
	setup.writeAgents(t, map[string]any{"fake": fakeAgent(acpfake.AuthEnv)})
	srv := setup.start(t)
	hint := "go run ./examples/server -config " + setup.config + " -login fake"
	setup.waitLog(t, `level=WARN msg="agent not ready" agent=fake problem="the agent is not signed in: log it in with `+hint)
	c := dialChat(t, srv.addr, "login")
	c.makeBot("motion", `{"name": "Motion", "provider": "fake"}`)
	chat := c.openChat("ahp-session:/login", "motion")
	if got := sayFails(t, c, chat, "t1", "post hello"); !strings.Contains(got, "log it in with "+hint) {
		t.Errorf("before the login the person reads %q, want it to name %q", got, hint)
	}

	// Not on a terminal, the login is refused at once, in one sentence.
	if out, errOut, err := setup.runServer(t, "ada\n", "-login", "fake"); err == nil || !strings.Contains(errOut, "run it in a terminal") {
		t.Errorf("-login with no terminal: %v\n%s\n%s", err, out, errOut)
	}
	out, errOut, err := setup.runServerOnTerminal(t, "ada\n", "-login", "fake")
	if err != nil {
		t.Fatalf("-login: %v\n%s\n%s", err, out, errOut)
	}
	for _, want := range []string{"logged in as ada", "fake: logged in; the login is kept in " + setup.config + "/agents/fake/home", "fake: ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("-login printed %q, want %q", out, want)
		}
	}
	if got := say(t, c, chat, "t2", "post hello"); len(got) != 1 || got[0] != "hello" {
		t.Errorf("after the login the main turn says %q", got)
	}
	srv.stop(t)
}

func TestEndToEndSessionNewThatHangsFailsTheTurnWithinTheStartTimeout(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t)
	setup.environ = []string{acpfake.HangNewEnv + "=1"}
	hangs := fakeAgent(acpfake.HangNewEnv)
	hangs["startTimeout"] = "1s"
	setup.writeAgents(t, map[string]any{"fake": hangs})
	srv := setup.start(t)
	setup.waitLog(t, `level=WARN msg="agent not ready" agent=fake problem="the agent did not answer session/new within 1s"`)
	c := dialChat(t, srv.addr, "hang")
	c.makeBot("motion", `{"name": "Motion", "provider": "fake"}`)
	chat := c.openChat("ahp-session:/hang", "motion")
	began := time.Now()
	if got := sayFails(t, c, chat, "t1", "post hello"); !strings.Contains(got, "session/new") {
		t.Errorf("the person reads %q, want it to name session/new", got)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("the turn failed after %s, want about the 1s start timeout", took)
	}
	srv.stop(t)
}

func TestEndToEndCheckAgentsPrintsALinePerAgentAndFailsWhenOneIsNotReady(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t)
	setup.environ = []string{acpfake.AuthEnv + "=env", acpfake.HangNewEnv + "=1"}
	hangs := fakeAgent(acpfake.HangNewEnv)
	hangs["startTimeout"] = "1s"
	setup.writeAgents(t, map[string]any{
		"ready":  fakeAgent(),
		"nokey":  fakeAgent(acpfake.AuthEnv),
		"nocmd":  map[string]any{"command": "no-such-agent-command"},
		"nopath": map[string]any{"command": "/opt/no-such-agent/bin/agent"},
		"hangs":  hangs,
	})
	out, errOut, err := setup.runServer(t, "", "-check-agents")
	want := "hangs: not ready: the agent did not answer session/new within 1s\n" +
		"nocmd: not ready: command no-such-agent-command not found on PATH; install it, or give its full path in the agents file's command\n" +
		"nokey: not ready: signing in needs FAKE_API_KEY; add it to the agents file's env and set it\n" +
		"nopath: not ready: command /opt/no-such-agent/bin/agent not found; install it there, or give where it is in the agents file's command\n" +
		"ready: ready\n"
	if out != want {
		t.Errorf("-check-agents printed:\n%s\nwant:\n%s", out, want)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(errOut, "4 of 5 agents are not ready") {
		t.Errorf("-check-agents ended %v, stderr %q; want status 1 saying 4 of 5 are not ready", err, errOut)
	}
	if strings.Contains(errOut, "level=INFO") || strings.Contains(errOut, "level=WARN") {
		t.Errorf("-check-agents logged more than errors without -log-level:\n%s", errOut)
	}

	setup.writeAgents(t, map[string]any{"ready": fakeAgent()})
	if out, errOut, err := setup.runServer(t, "", "-check-agents"); err != nil || out != "ready: ready\n" {
		t.Errorf("with one ready agent -check-agents printed %q and ended %v (%s)", out, err, errOut)
	}
}
