package pgtest

import (
	"strings"
	"testing"
)

// TestAPackageWhoseTestsDoNotRunThroughMainIsToldToAddIt: a package whose
// tests take a PostgreSQL without Main would leave the throwaway cluster
// running after every run; URL fails such a test naming the TestMain to
// add.
func TestAPackageWhoseTestsDoNotRunThroughMainIsToldToAddIt(t *testing.T) {
	t.Parallel()
	var c cluster
	if p := c.outsideMain(); !strings.Contains(p, "func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }") {
		t.Errorf("outside Main: %q, want it to name the TestMain to add", p)
	}
	c.inMain.Store(true)
	if p := c.outsideMain(); p != "" {
		t.Errorf("inside Main: %q", p)
	}
}
