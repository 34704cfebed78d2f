package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake/acp/acpfake"
)

// realAgent is an agent the end-to-end failure test drives on a machine
// that cannot reach its model's API, with a fake key: scripts/install-agents.sh
// installs the real ones; the fake agent stands in for them everywhere.
type realAgent struct {
	name    string
	entry   map[string]any // its entry in the agents file
	keyVar  string         // the variable its fake key is in
	host    string         // the API host the failure sentence names
	message string         // what the person says
	// freshAfterRestart: it cannot continue a session no turn of which
	// reached the model (the test logs it when it did).
	freshAfterRestart bool
	// silent: it says nothing of why before turnIdle (Gemini CLI retries
	// for minutes without a word anywhere), so the sentence can only say
	// what to check.
	silent bool
	title  string // the name it gives itself in initialize
}

func realAgents() []realAgent {
	return []realAgent{
		{name: "fake", keyVar: "FAKE_MODEL_KEY", host: "api.example.com", title: "fake",
			entry:   map[string]any{"command": os.Args[0], "args": []string{"-test.run=^$"}, "env": []string{acpfake.Env, "FAKE_MODEL_KEY"}},
			message: `stderr Error: getaddrinfo ENOTFOUND api.example.com`},
		{name: "claude", keyVar: "ANTHROPIC_API_KEY", host: "api.anthropic.com", title: "Claude Code",
			entry: map[string]any{"command": "claude-code-acp", "env": []string{"PATH", "ANTHROPIC_API_KEY"}}, message: "Say hello in five words."},
		{name: "codex", keyVar: "OPENAI_API_KEY", host: "api.openai.com", title: "Codex",
			entry: map[string]any{"command": "codex-acp", "env": []string{"PATH", "OPENAI_API_KEY"}}, message: "Say hello in five words."},
		{name: "gemini", keyVar: "GEMINI_API_KEY", host: "generativelanguage.googleapis.com", title: "Gemini CLI", freshAfterRestart: true, silent: true,
			entry:   map[string]any{"command": "gemini", "args": []string{"--acp"}, "env": []string{"PATH", "GEMINI_API_KEY"}, "auth": "gemini-api-key"},
			message: "Say hello in five words."},
	}
}

// agentRecord is the one agent session record in dir.
func agentRecord(t *testing.T, dir string) (rec struct {
	Fresh  bool   `json:"fresh"`
	Reason string `json:"reason"`
}) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.id"))
	if err != nil || len(files) != 1 {
		t.Fatalf("the agent session records in %s: %q (%v), want one", dir, files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("the record %s: %v", data, err)
	}
	return rec
}

// subagentTexts are the texts the subagent call of the chat's running
// turn shows.
func subagentTexts(s ahp.ChatState) []string {
	var out []string
	for _, p := range active(s) {
		if tc := p.ToolCall; tc != nil && tc.ToolName == "subagent" {
			for _, c := range tc.Content {
				if c.Type == ahp.ContentText {
					out = append(out, c.Text)
				}
			}
		}
	}
	return out
}

// endedTurn waits up to d for turn id of chat to end.
func endedTurn(c *ahpClient, chat, id string, d time.Duration) ahp.Turn {
	c.t.Helper()
	s := c.waitChatFor(chat, "turn "+id+" to end", d, func(s ahp.ChatState) bool {
		for _, t := range s.Turns {
			if t.ID == id {
				return true
			}
		}
		return false
	})
	for _, t := range s.Turns {
		if t.ID == id {
			return t
		}
	}
	return ahp.Turn{}
}

func errorOf(turn ahp.Turn) string {
	for _, p := range turn.ResponseParts {
		if p.Error != nil {
			return p.Error.Error.Message
		}
	}
	return ""
}

func TestEndToEndRealAgentsSayWhyTheyFailWithWhatToDoAndShowARestart(t *testing.T) {
	t.Parallel()
	for _, ag := range realAgents() {
		t.Run(ag.name, func(t *testing.T) {
			cmd, _ := ag.entry["command"].(string)
			path, err := exec.LookPath(cmd)
			if err != nil {
				if os.Getenv("BOTS_REQUIRE_AGENTS") == "1" && ag.name != "fake" {
					t.Fatalf("%s is not on PATH and BOTS_REQUIRE_AGENTS=1: scripts/install-agents.sh DIR installs it", cmd)
				}
				t.Skipf("%s is not on PATH: scripts/install-agents.sh DIR installs it", cmd)
			}
			t.Parallel()
			entry := ag.entry
			entry["turnIdle"] = "20s"    // a real agent that cannot reach its API retries for minutes
			entry["startTimeout"] = "3m" // Gemini CLI takes 35s to start on two busy cores
			if ag.name == "fake" {
				entry["turnIdle"] = "2s"
			}
			setup := newACPSetup(t)
			agents, err := json.Marshal(map[string]any{"agents": map[string]any{ag.name: entry}})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(setup.agents, agents, 0o600); err != nil {
				t.Fatal(err)
			}
			onPath := "PATH=" + filepath.Dir(path) + string(os.PathListSeparator) + os.Getenv("PATH")
			// -check-agents tells the truth: with no key and no login the
			// agent is not signed in (though it would open sessions), and
			// with one it is ready, saying with what.
			setup.environ = []string{onPath}
			out, _, _ := setup.runServer(t, "", "-check-agents")
			if !strings.HasPrefix(out, ag.name+": not ready: ") || !strings.Contains(out, ag.keyVar) {
				t.Errorf("-check-agents with no key printed %q", out)
			}
			t.Logf("-check-agents with no key: %s", strings.TrimSpace(out))
			setup.environ = []string{ag.keyVar + "=fake-key-for-the-e2e-test", onPath}
			out, _, _ = setup.runServer(t, "", "-check-agents")
			if !strings.HasPrefix(out, ag.name+": ready, signed in with ") {
				t.Errorf("-check-agents with a key printed %q", out)
			}
			t.Logf("-check-agents with a key: %s", strings.TrimSpace(out))
			srv := setup.start(t)
			c := dialChat(t, srv.addr, "real-"+ag.name)
			c.makeBot("motion", `{"name": "Motion", "provider": "`+ag.name+`"}`)
			chat := c.openChat("ahp-session:/real", "motion")

			c.dispatch(chat, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage(ag.message)))
			turn := endedTurn(c, chat, "t1", 4*time.Minute)
			got := errorOf(turn)
			if turn.State != ahp.TurnStateError || !strings.HasPrefix(got, "Motion's agent "+ag.name+" failed") {
				t.Fatalf("the turn ended %s with %q; want it failed with the agent's sentence", turn.State, got)
			}
			// Where the API is reached (CI with a network) the fake key
			// is refused instead.
			cause := strings.Contains(got, "could not reach "+ag.host) || strings.Contains(got, "refused its key")
			next := strings.Contains(got, "then send the message again.")
			if ag.silent { // the idle limit's sentence says what to check
				cause, next = true, strings.Contains(got, "check this machine's network, or a proxy (pass HTTPS_PROXY")
			}
			if !cause || !next {
				t.Errorf("the failure sentence is %q; want the host it could not reach (%s) or its refused key, and the next step", got, ag.host)
			}
			t.Logf("the failure sentence: %s", got)
			srv.stop(t)

			srv = setup.start(t)
			c = dialChat(t, srv.addr, "real-"+ag.name+"-2")
			c.subscribe("ahp-session:/real")
			c.subscribe(chat)
			c.dispatch(chat, ahp.TurnStarted("t2", time.Now(), ahp.UserMessage(ag.message)))
			starting := "Starting " + ag.name + "…"
			shown := false
			c.waitChatFor(chat, "the restart's progress", 2*time.Minute, func(s ahp.ChatState) bool {
				for _, text := range subagentTexts(s) {
					shown = shown || text == starting
				}
				return shown || (s.ActiveTurn == nil && len(s.Turns) > 0 && s.Turns[len(s.Turns)-1].ID == "t2")
			})
			if !shown {
				t.Errorf("the first message after a restart did not show %q in the main turn", starting)
			}
			turn = endedTurn(c, chat, "t2", 4*time.Minute)
			if turn.State != ahp.TurnStateError {
				t.Errorf("the turn after the restart ended %s", turn.State)
			}
			var notices []string
			for _, p := range turn.ResponseParts {
				if p.SystemNotification != nil {
					notices = append(notices, p.SystemNotification.Content.Text)
				}
			}
			// The agent continued its session, or could not (Gemini CLI
			// cannot continue one no turn of which reached the model; Claude
			// Code's load sometimes fails): the chat says so exactly when the
			// record says so, in the agent's words.
			rec := agentRecord(t, filepath.Join(setup.config, "agents", ag.name, "sessions"))
			said, fresh := strings.CutPrefix(rec.Reason, "session/load failed: ")
			switch {
			case fresh && rec.Fresh:
				said = strings.TrimRight(strings.TrimPrefix(said, "Internal error: "), ".")
				want := ag.title + ` could not continue the earlier session (it answered "` + said + `"); this one starts afresh.`
				if len(notices) != 1 || notices[0] != want || strings.Contains(rec.Reason, `"code"`) {
					t.Errorf("the record says %q; the turn told %q, want %q", rec.Reason, notices, want)
				}
			case len(notices) != 0:
				t.Errorf("the turn after the restart told %q, yet the record says %+v", notices, rec)
			}
			if ag.freshAfterRestart && !fresh {
				t.Logf("%s continued its session (record %+v)", ag.name, rec)
			}
			t.Logf("after the restart: %q, record %+v", notices, rec)
			srv.stop(t)
			if logs := string(setup.logs.Bytes()); strings.Contains(logs, "failed to parse incoming message") {
				t.Errorf("text on the agent's stdout reached the connection, which logged it line by line:\n%s", logs)
			}
		})
	}
}
