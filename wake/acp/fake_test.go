package acp

import (
	"os"
	"testing"

	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/wake/acp/acpfake"
)

// fakeEnv is the variable that makes the test binary run as the fake ACP
// agent (acpfake).
const fakeEnv = acpfake.Env

func TestMain(m *testing.M) {
	acpfake.Main()
	waittest.Parallel(4) // its tests mostly wait on agents and their time limits
	os.Exit(m.Run())
}
