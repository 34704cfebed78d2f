package bot_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportGraph keeps the layering of DESIGN.md: the ports' packages
// never import the service, nothing imports the reference server, and
// production packages never import testing.
func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/agenthost/bots/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/agenthost/bots/"
	lower := []string{"ahp", "access", "errcode", "record", "persona", "wake", "connector", "catalog", "transport", "internal"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		rel := strings.TrimPrefix(pkg, mod)
		isTestSupport := strings.HasSuffix(rel, "test")
		for _, imp := range imports {
			if imp == mod+"bot" {
				for _, l := range lower {
					if rel == l || strings.HasPrefix(rel, l+"/") {
						t.Errorf("%s imports the bot service", pkg)
					}
				}
			}
			if strings.HasPrefix(imp, mod+"examples") {
				t.Errorf("%s imports %s", pkg, imp)
			}
			if imp == "testing" && !isTestSupport {
				t.Errorf("production package %s imports testing", pkg)
			}
		}
	}
}
