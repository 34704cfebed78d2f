package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
)

// Output bounds of a terminal.
const (
	// DefaultTerminalOutput is how many bytes of a terminal's output are
	// kept when the agent asks no limit.
	DefaultTerminalOutput = 1 << 20
	// MaxTerminalOutput is the most kept whatever the agent asks.
	MaxTerminalOutput = 16 << 20
	// terminalWaitDelay bounds the wait for a terminal's output pipe once
	// its process has exited (a background process may hold it open).
	terminalWaitDelay = 2 * time.Second
)

// terminal is one command the agent runs through terminal/create.
type terminal struct {
	cmd    *exec.Cmd
	out    *boundedOutput
	exited chan struct{} // closed once the process is reaped
	status sdk.TerminalExitStatus
}

// terminals are the terminals of one agent, killed when it closes.
type terminals struct {
	mu     sync.Mutex
	n      int
	byID   map[string]*terminal
	closed bool
}

// boundedOutput keeps the last limit bytes written to it, cut at a
// character boundary.
type boundedOutput struct {
	mu        sync.Mutex
	limit     int
	buf       []byte
	truncated bool
}

func (b *boundedOutput) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		for over < len(b.buf) && !utf8.RuneStart(b.buf[over]) {
			over++
		}
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.truncated = true
	}
	return len(p), nil
}

func (b *boundedOutput) text() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf), b.truncated
}

// terminalDir returns the folder a terminal runs in: the bot's folder when
// cwd is nil, else cwd, which must be an absolute path inside the bot's
// folder, hold no "..", and not lead out of it through a symbolic link.
func (f folder) terminalDir(cwd *string) (string, error) {
	if cwd == nil || *cwd == "" {
		return f.dir, nil
	}
	if _, err := f.rel(*cwd); err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(*cwd)
	if err != nil {
		return "", fmt.Errorf("%q: %w", *cwd, errors.Unwrap(err))
	}
	if r, err := filepath.Rel(f.resolved, resolved); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q leads out of the bot's folder: %w", *cwd, errOutside)
	}
	if st, err := os.Stat(resolved); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%q is not a folder", *cwd)
	}
	return resolved, nil
}

// lookPath finds name in the PATH of env, as the child's shell would.
func lookPath(name string, env []string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) {
		return name, nil
	}
	for _, kv := range env {
		path, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, d := range filepath.SplitList(path) {
			if d == "" || !filepath.IsAbs(d) {
				continue
			}
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%q is not in the agent's PATH", name)
}

// createTerminal starts the request's command in the bot's folder (or a
// folder inside it), with the agent's minimal environment and the
// request's variables, in a process group of its own, inside the agent's
// sandbox (see startChild).
func (a *agent) createTerminal(p sdk.CreateTerminalRequest) (string, error) {
	dir, err := a.dir.terminalDir(p.Cwd)
	if err != nil {
		return "", err
	}
	cfg := a.h.cfg
	env := childEnv(environ(cfg.Environ), cfg.Agent.Env, a.home)
	for _, v := range p.Env {
		if !validEnvName(v.Name) {
			return "", fmt.Errorf("%q is not an environment variable name", v.Name)
		}
		env = append(env, v.Name+"="+v.Value)
	}
	path, err := lookPath(p.Command, env)
	if err != nil {
		return "", err
	}
	limit := DefaultTerminalOutput
	if p.OutputByteLimit != nil && *p.OutputByteLimit >= 0 {
		limit = min(*p.OutputByteLimit, MaxTerminalOutput)
	}
	cmd := exec.Command(path, p.Args...)
	cmd.Args[0] = p.Command
	cmd.Dir, cmd.Env = dir, env
	out := &boundedOutput{limit: limit}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = terminalWaitDelay
	ownGroup(cmd)

	ts := &a.terms
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return "", errClosed
	}
	if err := a.startChild(cmd); err != nil {
		return "", fmt.Errorf("starting %q: %w", p.Command, err)
	}
	t := &terminal{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		if ps := cmd.ProcessState; ps != nil {
			if ws, ok := ps.Sys().(interface {
				Signaled() bool
				Signal() syscall.Signal
			}); ok && ws.Signaled() {
				t.status.Signal = sdk.Ptr(ws.Signal().String())
			} else {
				t.status.ExitCode = sdk.Ptr(ps.ExitCode())
			}
		}
		close(t.exited)
	}()
	ts.n++
	id := "term-" + strconv.Itoa(ts.n)
	if ts.byID == nil {
		ts.byID = map[string]*terminal{}
	}
	ts.byID[id] = t
	a.log.Info("acp: the agent started a terminal", "id", id, "command", p.Command, "dir", dir, "pid", cmd.Process.Pid)
	return id, nil
}

// terminal returns the terminal of id.
func (a *agent) terminal(id string) (*terminal, error) {
	a.terms.mu.Lock()
	defer a.terms.mu.Unlock()
	t := a.terms.byID[id]
	if t == nil {
		return nil, fmt.Errorf("no terminal %q", id)
	}
	return t, nil
}

// exitStatus returns t's exit status, nil while it runs.
func (t *terminal) exitStatus() *sdk.TerminalExitStatus {
	select {
	case <-t.exited:
		s := t.status
		return &s
	default:
		return nil
	}
}

// kill kills t's process group; with wait, it waits for t to be reaped.
func (t *terminal) kill(wait bool) {
	killGroup(t.cmd)
	if !wait {
		return
	}
	timer := time.NewTimer(killWait)
	defer timer.Stop()
	select {
	case <-t.exited:
	case <-timer.C:
	}
}

// releaseTerminal kills the terminal of id and forgets it.
func (a *agent) releaseTerminal(id string) error {
	a.terms.mu.Lock()
	t := a.terms.byID[id]
	delete(a.terms.byID, id)
	a.terms.mu.Unlock()
	if t == nil {
		return fmt.Errorf("no terminal %q", id)
	}
	t.kill(true)
	return nil
}

// closeTerminals kills every terminal and refuses new ones.
func (a *agent) closeTerminals() {
	a.terms.mu.Lock()
	all := a.terms.byID
	a.terms.byID, a.terms.closed = nil, true
	a.terms.mu.Unlock()
	for _, t := range all {
		t.kill(false)
	}
	for _, t := range all {
		t.kill(true)
	}
}

// waitTerminal waits for the terminal of id to exit, or for ctx.
func (a *agent) waitTerminal(ctx context.Context, id string) (sdk.TerminalExitStatus, error) {
	t, err := a.terminal(id)
	if err != nil {
		return sdk.TerminalExitStatus{}, err
	}
	select {
	case <-t.exited:
		return t.status, nil
	case <-ctx.Done():
		return sdk.TerminalExitStatus{}, ctx.Err()
	}
}
