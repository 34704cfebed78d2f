package main

import (
	"fmt"
	"log/slog"
)

// agentSandbox is how the agents' sandbox is configured: whether agents
// may run without one, and the paths no grant may reach.
type agentSandbox struct {
	allowUnsandboxed bool
	protect          []string
}

// protected returns the paths an agent's sandbox must never grant: the
// configuration folder, the bots' root, the vault and the users file
// (those given).
func protected(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// checkSandbox refuses to start agents (other than echo, which runs in
// the server) where available says the kernel offers no sandbox, unless
// allowUnsandboxed; with allowUnsandboxed it warns at every start.
func checkSandbox(agents int, allowUnsandboxed bool, available func() (int, error), log *slog.Logger) error {
	abi, err := available()
	if allowUnsandboxed {
		if err != nil {
			log.Warn("-agents-unsandboxed: agents run without a sandbox and can read everything this server can", "why", err)
		} else {
			log.Warn("-agents-unsandboxed is given, but the kernel offers a sandbox: agents run inside it", "landlock_abi", abi)
		}
		return nil
	}
	if agents > 0 && err != nil {
		return fmt.Errorf("refusing to start agents other than echo without a sandbox (%v); pass -agents-unsandboxed to run them unconfined", err)
	}
	return nil
}
