package bot_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/internal/waittest"
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
	if !waittest.Within(10*time.Second, func() bool { return len(problemsOf(t, soft)) == 0 }) {
		t.Fatalf("the problem stands after the edit: %+v", problemsOf(t, soft))
	}
}

// TestTheManifestListsTheAgentsAndTemplatesThisHostHas: the make form's
// schema names, as examples, the providers the session host runs and the
// templates under the configuration folder, each with a sentence of help.
func TestTheManifestListsTheAgentsAndTemplatesThisHostHas(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	if err := os.MkdirAll(filepath.Join(e.configDir, "templates"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.configDir, "templates", "reviewer.md"), []byte("---\ntitle: Reviewer\n---\n# {{name}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := e.connect(t, "soft")
	var root struct {
		Meta struct {
			Providers struct {
				Bot struct {
					Manifest struct {
						Properties map[string]struct {
							Description string   `json:"description"`
							Examples    []string `json:"examples"`
						} `json:"properties"`
					} `json:"manifest"`
				} `json:"bot"`
			} `json:"ahpd.resourceProviders"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(c.subscribe("ahp-root://"), &root); err != nil {
		t.Fatal(err)
	}
	props := root.Meta.Providers.Bot.Manifest.Properties
	if got := props["provider"].Examples; !slices.Equal(got, []string{"echo"}) {
		t.Errorf("the manifest's agents are %q, want echo, the one this host runs", got)
	}
	if got := props["template"].Examples; !slices.Equal(got, []string{"reviewer"}) {
		t.Errorf("the manifest's templates are %q, want reviewer", got)
	}
	for _, k := range []string{"provider", "template", "owner", "preset", "model", "workspace", "session", "tools", "connectors"} {
		if d := props[k].Description; len(d) < 30 || !strings.HasSuffix(d, ".") {
			t.Errorf("%s's help is %q, want a sentence", k, d)
		}
	}
}
