package acp

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/wake/acp/acpfake"
)

var printFailures = flag.Bool("print-failures", false, "print the failure sentences of TestEveryFailureSaysTheCauseAndEndsWithANextStep as docs/AGENTS.md's table rows")

// failureCase is one step × cause of docs/AGENTS.md's table of failure
// sentences: how the fake agent fails, and the sentence the person reads.
type failureCase struct {
	step, cause string
	mod         func(*Config)
	turn        string // the turn's words; "" for a failure of the start
	want        string
}

// failureCases are docs/AGENTS.md's table, row by row.
var failureCases = []failureCase{
	{step: "start", cause: "the command is not there",
		mod:  func(c *Config) { c.Agent.Command = "/nonexistent/fake-agent" },
		want: `Motion's agent fake failed while starting: its command "/nonexistent/fake-agent" could not be run (no such file or directory). Check the command of fake in the agents file.`},
	{step: "start", cause: "no answer to initialize within startTimeout",
		mod:  all(withFakeEnv(acpfake.HangInitEnv, "1"), func(c *Config) { c.StartTimeout = 500 * time.Millisecond }),
		want: `Motion's agent fake failed while starting: it did not answer initialize within 500ms (the agent's startTimeout), so it was stopped. Check that fake can reach its service and is signed in, or raise startTimeout for it in the agents file.`},
	{step: "start", cause: "no answer within startTimeout, stderr says the API is unreachable",
		mod: all(withFakeEnv(acpfake.HangInitEnv, "1"), func(c *Config) { c.StartTimeout = 500 * time.Millisecond },
			withFakeEnv(acpfake.StderrStartEnv, `Error: getaddrinfo ENOTFOUND api.example.com\n    at GetAddrInfoReqWrap.onlookup (node:dns:120:26)`)),
		want: `Motion's agent fake failed while starting: it could not reach api.example.com; it did not answer initialize within 500ms (the agent's startTimeout), so it was stopped. It wrote: "Error: getaddrinfo ENOTFOUND api.example.com". Check that this machine can reach api.example.com: its network, or a proxy (pass HTTPS_PROXY in fake's env in the agents file); then send the message again.`},
	{step: "signing in", cause: "auth names a method the agent does not offer",
		mod:  func(c *Config) { c.Agent.Auth = "nope" },
		want: `Motion's agent fake failed while signing in: the agents file's auth names "nope", which the agent does not offer (it offers no sign-in methods). Name a method it offers in fake's auth in the agents file, or leave auth out.`},
	{step: "signing in", cause: "the agent refuses the sign-in",
		mod:  all(withFakeEnv(acpfake.AuthEnv, "login"), func(c *Config) { c.Agent.Auth = acpfake.LoginMethod }),
		want: `Motion's agent fake failed while signing in: the agent refused to sign in with fake-login: Authentication required. Log it in, or set its key in a variable the agents file's env passes; then send the message again.`},
	{step: "signing in", cause: "its key variable is not set",
		mod:  all(withFakeEnv(acpfake.AuthEnv, "env"), func(c *Config) { c.Agent.Env = append(c.Agent.Env, acpfake.KeyEnv); c.Agent.Auth = acpfake.KeyMethod }),
		want: `Motion's agent fake failed while signing in: signing in needs FAKE_API_KEY, which the agents file's env passes but the server's environment does not set; set it.`},
	{step: "opening the session", cause: "the agent exits",
		mod:  all(withFakeEnv(acpfake.NewExitEnv, "2"), withFakeEnv(acpfake.StderrStartEnv, "fatal: settings.json is not valid JSON")),
		want: `Motion's agent fake failed while opening the session: it exited with status 2. It wrote: "fatal: settings.json is not valid JSON". Send the message again to start it again; if it fails again, run the command of fake by hand, or read its stderr in the server's log at -log-level debug.`},
	{step: "opening the session", cause: "the agent answers an error",
		mod:  withFakeEnv(acpfake.NewFailEnv, "Internal error: no workspace"),
		want: `Motion's agent fake failed while opening the session: Internal error: no workspace. Send the message again to start it again; if it fails again, run the command of fake by hand, or read its stderr in the server's log at -log-level debug.`},
	{step: "opening the session", cause: "the plan's quota is used up",
		mod:  withFakeEnv(acpfake.NewFailEnv, "You exceeded your current quota, please check your plan"),
		want: `Motion's agent fake failed while opening the session: its plan's quota is used up (it said: You exceeded your current quota, please check your plan). Wait until the plan's quota renews, or raise it with the model's vendor (or give fake another key in a variable the agents file's env passes); then send the message again.`},
	{step: "opening the session", cause: "not signed in (its key variable is not set)",
		mod:  all(withFakeEnv(acpfake.AuthEnv, "env"), func(c *Config) { c.Agent.Env = append(c.Agent.Env, acpfake.KeyEnv) }),
		want: `Motion's agent fake failed while opening the session: signing in needs FAKE_API_KEY, which the agents file's env passes but the server's environment does not set; set it.`},
	{step: "the turn", cause: "silent past turnIdle, stderr says the API is unreachable",
		mod:  func(c *Config) { c.TurnIdle = 300 * time.Millisecond },
		turn: `stderr Retrying request (attempt 3)\nError: getaddrinfo ENOTFOUND api.anthropic.com`,
		want: `Motion's agent fake failed during the turn: it could not reach api.anthropic.com; it sent nothing for 300ms (the agent's turnIdle), so the turn was stopped. It wrote: "Error: getaddrinfo ENOTFOUND api.anthropic.com". Check that this machine can reach api.anthropic.com: its network, or a proxy (pass HTTPS_PROXY in fake's env in the agents file); then send the message again.`},
	{step: "the turn", cause: "silent past turnIdle, stderr says something else",
		mod:  func(c *Config) { c.TurnIdle = 300 * time.Millisecond },
		turn: `stderr thinking very hard\n}`,
		want: `Motion's agent fake failed during the turn: it sent nothing for 300ms (the agent's turnIdle), so the turn was stopped. It wrote: "thinking very hard". If fake cannot reach its model's API it retries in silence: check this machine's network, or a proxy (pass HTTPS_PROXY in fake's env in the agents file). Then send the message again, or raise turnIdle for fake in the agents file if it needs longer.`},
	{step: "the turn", cause: "the API is unreachable (in the agent's error)",
		turn: "fail Internal error: stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)",
		want: `Motion's agent fake failed during the turn: it could not reach api.openai.com (it said: Internal error: stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)). Check that this machine can reach api.openai.com: its network, or a proxy (pass HTTPS_PROXY in fake's env in the agents file); then send the message again.`},
	{step: "the turn", cause: "the API is unreachable (the host on stderr)",
		turn: "stderr [ERROR] connect ENOTFOUND api.anthropic.com then fail Internal error: API Error: Unable to connect to API (ENOTFOUND)",
		want: `Motion's agent fake failed during the turn: it could not reach api.anthropic.com (it said: Internal error: API Error: Unable to connect to API (ENOTFOUND)). It wrote: "[ERROR] connect ENOTFOUND api.anthropic.com". Check that this machine can reach api.anthropic.com: its network, or a proxy (pass HTTPS_PROXY in fake's env in the agents file); then send the message again.`},
	{step: "the turn", cause: "the key is refused",
		mod:  withFakeEnv(acpfake.KeyEnv, "sk-fake-0123456789"),
		turn: "expand fail 401 Incorrect API key provided: $FAKE_API_KEY",
		want: `Motion's agent fake failed during the turn: its model's API refused its key (it said: 401 Incorrect API key provided: [redacted]). Check the key in FAKE_API_KEY (the server's environment gives it to fake), or log it in; then send the message again.`},
	{step: "the turn", cause: "the plan's quota is used up",
		turn: "fail 429 RESOURCE_EXHAUSTED: Quota exceeded for requests per day",
		want: `Motion's agent fake failed during the turn: its plan's quota is used up (it said: 429 RESOURCE_EXHAUSTED: Quota exceeded for requests per day). Wait until the plan's quota renews, or raise it with the model's vendor (or give fake another key in a variable the agents file's env passes); then send the message again.`},
	{step: "the turn", cause: "not signed in (on stderr)",
		mod:  func(c *Config) { c.LoginHint = "go run ./examples/server -login fake" },
		turn: "stderr Please run /login · Session expired then fail Internal error",
		want: `Motion's agent fake failed during the turn: it is not signed in; Internal error. It wrote: "Please run /login · Session expired". Log it in with go run ./examples/server -login fake, or set its key in a variable the agents file's env passes; then send the message again.`},
	{step: "the turn", cause: "not signed in (Authentication required)",
		mod:  func(c *Config) { c.LoginHint = "go run ./examples/server -login fake" },
		turn: "signedout",
		want: `Motion's agent fake failed during the turn: the agent is not signed in: it offers no sign-in method this host can use. Log it in with go run ./examples/server -login fake, or set its key in a variable the agents file's env passes; then send the message again.`},
	{step: "the turn", cause: "the agent crashes",
		turn: "crash",
		want: `Motion's agent fake failed during the turn: it exited with status 3. Send the message again; if it fails again, run the command of fake by hand, or read its stderr in the server's log at -log-level debug.`},
	{step: "the turn", cause: "the agent crashes, saying why on stderr",
		turn: "stderr panic: runtime error: out of memory then exit 2",
		want: `Motion's agent fake failed during the turn: it exited with status 2. It wrote: "panic: runtime error: out of memory". Send the message again; if it fails again, run the command of fake by hand, or read its stderr in the server's log at -log-level debug.`},
	{step: "the turn", cause: "the agent answers an error",
		turn: "fail Internal error: tool schema rejected",
		want: `Motion's agent fake failed during the turn: Internal error: tool schema rejected. Send the message again; if it fails again, run the command of fake by hand, or read its stderr in the server's log at -log-level debug.`},
	{step: "the turn", cause: "the turn runs past turnTimeout",
		mod:  func(c *Config) { c.TurnTimeout = 300 * time.Millisecond },
		turn: "tick",
		want: `Motion's agent fake failed during the turn: the turn ran for 300ms (the agent's turnTimeout), so it was stopped. Send the message again, or raise turnTimeout for fake in the agents file if it needs longer.`},
	{step: "the turn", cause: "it refuses",
		turn: "stop refusal",
		want: `Motion's agent fake failed during the turn: it refused to go on. Ask in other words, or ask for something else.`},
	{step: "the turn", cause: "it runs out of tokens",
		turn: "stop max_tokens",
		want: `Motion's agent fake failed during the turn: it reached its limit of tokens (max_tokens). Ask for a shorter answer, or split the work into smaller messages.`},
	{step: "the turn", cause: "it runs out of model requests",
		turn: "stop max_turn_requests",
		want: `Motion's agent fake failed during the turn: it reached its limit of model requests in a turn (max_turn_requests). Send "go on" to let it continue, or split the work into smaller messages.`},
	{step: "the turn", cause: "it cancels the turn by itself",
		turn: "stop cancelled",
		want: `Motion's agent fake failed during the turn: it cancelled the turn. Send the message again.`},
}

// namedOnly passes the fake only the variables a case names, so that
// no variable named and unset says more in a sentence.
func namedOnly(c *Config) { c.Agent.Env = []string{fakeEnv} }

// all applies each of mods.
func all(mods ...func(*Config)) func(*Config) {
	return func(c *Config) {
		for _, m := range mods {
			if m != nil {
				m(c)
			}
		}
	}
}

func TestEveryFailureSaysTheCauseAndEndsWithANextStep(t *testing.T) {
	t.Parallel()
	got := make([]string, len(failureCases))
	t.Run("cases", func(t *testing.T) {
		for i, fc := range failureCases {
			t.Run(fc.step+"/"+fc.cause, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, all(namedOnly, fc.mod))
				var err error
				if fc.turn == "" {
					_, err = h.Open(testCtx(t), backInfo(t))
				} else {
					_, err = runTurn(t, openBack(t, h), fc.turn)
				}
				var se *StepError
				if !errors.As(err, &se) {
					t.Fatalf("err = %v (%T), want a *StepError", err, err)
				}
				got[i] = se.Error()
				if got[i] != fc.want {
					t.Errorf("the sentence is\n%s\nwant\n%s", got[i], fc.want)
				}
			})
		}
	})
	if *printFailures {
		for i, fc := range failureCases {
			fmt.Printf("| %s | %s | %s |\n", fc.step, fc.cause, strings.ReplaceAll(got[i], "|", `\|`))
		}
	}
}

func TestDocsAgentsHoldsEveryFailureSentence(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "AGENTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fc := range failureCases {
		if !strings.Contains(string(doc), strings.ReplaceAll(fc.want, "|", `\|`)) {
			t.Errorf("docs/AGENTS.md lacks the sentence of %s × %s: %s", fc.step, fc.cause, fc.want)
		}
	}
}
