package acp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/agenthost/bots/wake/acp/sandbox"
)

// policy is what the agent and its terminals may reach besides the
// system: read its command's location and Command.Read, read and write
// the bot's folder and the agent's HOME; never Config.Protect, nor a TCP
// port of Config.RefuseConnect but its tool server's.
func (a *agent) policy() sandbox.Policy {
	cfg := a.h.cfg
	var read []string
	if path, err := exec.LookPath(cfg.Agent.Command); err == nil {
		read = sandbox.CommandPaths(path)
	}
	var refuse []uint16
	if cfg.RefuseConnect != nil {
		tools := a.tools.port()
		refuse = slices.DeleteFunc(slices.Clone(cfg.RefuseConnect()), func(p uint16) bool { return p == tools })
	}
	return sandbox.Policy{
		Read:          append(read, cfg.Agent.Read...),
		Write:         []string{a.dir.resolved, a.home},
		Protect:       cfg.Protect,
		RefuseConnect: refuse,
	}
}

// startChild starts cmd, the agent or one of its terminals, inside the
// sandbox of policy, with TMPDIR a folder of the agent's HOME. Where the
// kernel offers no sandbox it fails, unless Config.AllowUnsandboxed
// starts cmd unconfined, logged at Warn.
func (a *agent) startChild(cmd *exec.Cmd) error {
	tmp := filepath.Join(a.home, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("a TMPDIR in the agent's home: %w", err)
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	err := sandbox.Start(cmd, a.policy())
	if errors.Is(err, sandbox.ErrUnavailable) && a.h.cfg.AllowUnsandboxed {
		a.log.Warn("acp: starting without a sandbox, as allowed", "command", cmd.Path, "why", err)
		return cmd.Start()
	}
	return err
}
