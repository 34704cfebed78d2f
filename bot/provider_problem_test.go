package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
)

// problemsOf is what the problems channel shows c now.
func problemsOf(t *testing.T, c *chatClient) []bot.Problem {
	t.Helper()
	var st struct {
		Problems []bot.Problem `json:"problems"`
	}
	if err := json.Unmarshal(c.subscribe(bot.ProblemsURI), &st); err != nil {
		t.Fatal(err)
	}
	return st.Problems
}

// TestABotNamingAProviderTheHostRunsNoAgentForIsAProblemUntilItDoes: the
// make is accepted (the host may add the agent later), and the bot's
// problems say at once which provider it names and which the host
// offers; the problem goes when the bot is edited to an offered one.
func TestABotNamingAProviderTheHostRunsNoAgentForIsAProblemUntilItDoes(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "far", `{"name": "Far", "provider": "claude"}`)
	e.makeBot(t, "near", `{"name": "Near", "provider": "echo"}`)
	soft := e.connect(t, "soft")
	ps := problemsOf(t, soft)
	if len(ps) != 1 || ps[0].Bot != "far" || !strings.Contains(ps[0].Reason, `provider "claude"`) || !strings.Contains(ps[0].Reason, "it offers echo") {
		t.Fatalf("the owner sees the problems %+v, want one of far naming claude and the offered echo", ps)
	}
	if _, err := e.svc.Edit(context.Background(), access.Principal{User: "soft", Grants: []string{"bot:put"}}, "far", []byte(`{"provider": "echo"}`), ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(problemsOf(t, soft)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the problem stands after the edit: %+v", problemsOf(t, soft))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
