// Package sandboxtest holds what tests of sandboxed processes share.
package sandboxtest

import (
	"os"
	"testing"

	"github.com/agenthost/bots/wake/acp/sandbox"
)

// RequireEnv set to "1" makes a test that needs the sandbox fail, rather
// than skip, where the kernel offers none.
const RequireEnv = "BOTS_REQUIRE_SANDBOX"

// Require skips t, in one line, where the kernel offers no sandbox, or
// fails it when RequireEnv is "1". It returns the Landlock ABI.
func Require(t testing.TB) int {
	t.Helper()
	abi, err := sandbox.Available()
	if err == nil {
		return abi
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%v (%s=1 requires the sandbox)", err, RequireEnv)
	}
	t.Skipf("skipped: %v", err)
	return 0
}
