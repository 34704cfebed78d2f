package bots_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/irc"
	"github.com/agenthost/bots/wake/acp"
)

// seriesRe finds the names of series in a query or a text.
var seriesRe = regexp.MustCompile(`\b(?:bots|go|process)_[a-z_]+`)

// family is the family a series name belongs to: a histogram's _bucket,
// _count and _sum are its own.
func family(name string, have map[string]bool) string {
	if have[name] {
		return name
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if f, ok := strings.CutSuffix(name, suffix); ok && have[f] {
			return f
		}
	}
	return name
}

// TestTheDashboardAndTheREADMENameTheSeriesTheServerExports keeps
// docs/grafana-dashboard.json and the README's Operations table true: every
// series they name is one a started server exports, and every bots_
// series it exports is in the README.
func TestTheDashboardAndTheREADMENameTheSeriesTheServerExports(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	srv.Agents = acp.Agents{{Provider: "fake", Agent: acp.Command{Command: "/bin/true"}}}
	srv.AgentsUnsandboxed = true
	// Routes run where the server has networks and people to map senders
	// to: their series are exported then.
	srv.Networks = []route.Network{irc.Network{}}
	srv.UsersFile = filepath.Join(t.TempDir(), "users.json")
	writeFile(t, srv.UsersFile, `{"root": {"token": "root-token-of-some-length"}, "users": []}`)
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fams, err := srv.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}

	data, err := os.ReadFile("docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	queried := 0
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			for _, name := range seriesRe.FindAllString(q.Expr, -1) {
				queried++
				if !have[family(name, have)] {
					t.Errorf("the dashboard's panel %q queries %s, which the server does not export", p.Title, name)
				}
			}
		}
	}
	if queried < 20 {
		t.Errorf("the dashboard queries %d series", queried)
	}

	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, ops, _ := strings.Cut(string(readme), "### Operations")
	ops, _, _ = strings.Cut(ops, "\n## ")
	named := seriesRe.FindAllString(ops, -1)
	for _, name := range named {
		if strings.HasPrefix(name, "bots_") && !have[family(name, have)] {
			t.Errorf("the README names %s, which the server does not export", name)
		}
	}
	for name := range have {
		if strings.HasPrefix(name, "bots_") && !slices.Contains(named, name) {
			t.Errorf("the server exports %s, which the README's Operations does not name", name)
		}
	}
}
