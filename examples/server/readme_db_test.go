package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTheREADMEPutsNoDatabasePasswordOnACommandLine: a -db URL given on
// the command line is shown to every user of the machine by ps, so no
// command or URL of the README carries a password; it shows
// BOTS_DATABASE_URL and a passfile instead.
func TestTheREADMEPutsNoDatabasePasswordOnACommandLine(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	withPassword := regexp.MustCompile(`postgres(?:ql)?://[^\s:@/]+:[^\s@/]+@`)
	for i, line := range strings.Split(readme, "\n") {
		if m := withPassword.FindString(line); m != "" {
			t.Errorf("README line %d holds a database URL with a password (%s…): %s", i+1, m, line)
		}
		if strings.Contains(line, "go run ./examples/server") && regexp.MustCompile(`-db\s+\S`).MatchString(line) {
			t.Errorf("README line %d passes -db on the command line, where ps shows it: %s", i+1, line)
		}
	}
	for _, want := range []string{"BOTS_DATABASE_URL=", "PGPASSFILE"} {
		if !strings.Contains(readme, want) {
			t.Errorf("the README does not show %s", want)
		}
	}
}
