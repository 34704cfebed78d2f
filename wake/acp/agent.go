package acp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agenthost/bots/wake"
)

// killWait bounds the wait for a killed child to be reaped.
const killWait = 5 * time.Second

// errClosed is the error of a turn on a closed agent.
var errClosed = errors.New("acp: the agent is closed")

// turn is the turn an agent runs: the Work it answers through, and the
// context that ends when it is stopped.
type turn struct {
	ctx context.Context
	w   wake.Work
}

// agent is one back session's agent: its tool server, and its child while
// one runs.
type agent struct {
	h     *Harness
	info  wake.SessionInfo
	key   string
	dir   folder
	tools *toolServer
	home  string
	temp  bool // home is a temporary folder of this agent's
	log   *slog.Logger

	startMu sync.Mutex // serialises starts of a child
	terms   terminals  // the agent's terminals, killed on Close

	mu     sync.Mutex
	cur    *turn
	child  *child
	closed bool
}

// child is one running agent process and its ACP connection.
type child struct {
	cmd    *exec.Cmd
	conn   *sdk.ClientSideConnection
	stdin  io.Closer
	stdout io.Closer
	exited chan struct{} // closed once the process is reaped
	err    error         // Wait's error, set before exited closes

	session sdk.SessionId
	auth    []sdk.AuthMethod // the sign-in methods initialize offered
	// fresh is true until the first prompt of a new (not loaded) session,
	// which carries the system prompt.
	fresh bool
}

func newAgent(h *Harness, s wake.SessionInfo) (*agent, error) {
	dir, err := newFolder(s.Dir)
	if err != nil {
		return nil, err
	}
	a := &agent{h: h, info: s, key: h.cfg.Key(s), dir: dir, home: h.cfg.Home, log: h.log.With("session", s.URI)}
	if a.home == "" {
		home, err := os.MkdirTemp("", "acp-home-")
		if err != nil {
			return nil, fmt.Errorf("acp: a home for the agent: %w", err)
		}
		a.home, a.temp = home, true
	} else if err := os.MkdirAll(a.home, 0o700); err != nil {
		return nil, fmt.Errorf("acp: the agent's home: %w", err)
	}
	tools, err := startTools(a, a.log)
	if err != nil {
		a.removeHome()
		return nil, err
	}
	a.tools = tools
	return a, nil
}

func (a *agent) removeHome() {
	if a.temp {
		os.RemoveAll(a.home)
	}
}

// Close kills the child with its process group and stops the tool
// server.
func (a *agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	c := a.child
	a.child = nil
	a.mu.Unlock()
	if c != nil {
		c.kill()
	}
	a.closeTerminals()
	err := a.tools.close()
	a.removeHome()
	return err
}

// current returns the running turn, or nil.
func (a *agent) current() *turn {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

// during returns the running turn and a context that ends with ctx or
// with the turn. It is an error when no turn runs: the bot's tools answer
// only the message a turn answers.
func (a *agent) during(ctx context.Context) (*turn, context.Context, context.CancelFunc, error) {
	t := a.current()
	if t == nil {
		return nil, nil, nil, errors.New("no message is being answered now: the bot's tools work only during a turn")
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(t.ctx, cancel)
	return t, ctx, func() { stop(); cancel() }, nil
}

// alive reports whether the child still runs and talks.
func (c *child) alive() bool {
	select {
	case <-c.exited:
		return false
	case <-c.conn.Done():
		return false
	default:
		return true
	}
}

// kill kills the child's process group and waits for it to be reaped.
func (c *child) kill() {
	c.stdin.Close()
	killGroup(c.cmd)
	t := time.NewTimer(killWait)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
	}
	c.stdout.Close()
}

// exitText says how the child ended.
func (c *child) exitText() string {
	select {
	case <-c.exited:
		if c.err == nil {
			return "exited"
		}
		return "exited: " + c.err.Error()
	default:
		return "closed its connection"
	}
}

// drop kills c and forgets it, so that the next turn starts a new child.
func (a *agent) drop(c *child) {
	c.kill()
	a.mu.Lock()
	if a.child == c {
		a.child = nil
	}
	a.mu.Unlock()
}

// ensure returns the running child, starting one when none runs.
func (a *agent) ensure(ctx context.Context) (*child, error) {
	a.startMu.Lock()
	defer a.startMu.Unlock()
	a.mu.Lock()
	c, closed := a.child, a.closed
	a.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if c != nil && c.alive() {
		return c, nil
	}
	if c != nil {
		a.drop(c)
	}
	c, err := a.start(ctx)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		c.kill()
		return nil, errClosed
	}
	a.child = c
	a.mu.Unlock()
	return c, nil
}

// start starts a child and opens its session: initialize, then
// session/load or session/new.
func (a *agent) start(ctx context.Context) (*child, error) {
	cfg := a.h.cfg
	c, err := a.spawn()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	fail := func(step string, err error) (*child, error) {
		ended := !c.alive() // before the kill, which ends it
		c.kill()
		if ended {
			return nil, fmt.Errorf("acp: agent %s %s during %s: %w", cfg.Provider, c.exitText(), step, err)
		}
		return nil, fmt.Errorf("acp: agent %s: %s: %w", cfg.Provider, step, err)
	}
	init, err := c.conn.Initialize(ctx, initializeRequest())
	if err != nil {
		return fail("initialize", err)
	}
	c.auth = init.AuthMethods
	if err := a.signIn(ctx, c, c.auth); err != nil {
		return fail("authenticate", err)
	}
	servers := a.toolServers(init.AgentCapabilities)
	reason := ReasonNoLoad
	if init.AgentCapabilities.LoadSession {
		reason = ReasonNoEarlier
		rec, ok, err := cfg.Store.Load(ctx, a.key)
		if err != nil {
			a.log.Warn("acp: reading the agent session record failed", "err", err)
		}
		if ok {
			_, err := c.conn.LoadSession(ctx, sdk.LoadSessionRequest{Cwd: a.dir.dir, McpServers: servers, SessionId: sdk.SessionId(rec.ID)})
			if err == nil {
				c.session = sdk.SessionId(rec.ID)
				rec.LoadedAt, rec.Fresh, rec.Reason = time.Now().UTC(), false, ""
				if err := cfg.Store.Save(ctx, a.key, rec); err != nil {
					a.log.Warn("acp: keeping the agent session record failed", "err", err)
				}
				a.log.Info("acp: continued the agent session", "id", rec.ID, "ready", time.Since(began))
				return c, nil
			}
			if !c.alive() {
				return fail("session/load", err)
			}
			reason = ReasonLoadFailed + err.Error()
			a.log.Info("acp: the agent could not load its session; starting a new one", "id", rec.ID, "err", err)
		}
	}
	resp, err := c.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: a.dir.dir, McpServers: servers})
	if err != nil {
		return fail("session/new", a.explainAuth("session/new", err, c.auth))
	}
	c.session, c.fresh = resp.SessionId, true
	rec := Record{ID: string(resp.SessionId), StartedAt: time.Now().UTC(), Fresh: true, Reason: reason}
	if err := cfg.Store.Save(ctx, a.key, rec); err != nil {
		a.log.Warn("acp: keeping the agent session record failed; a restart starts a new session", "err", err)
	}
	a.log.Info("acp: started a fresh agent session", "id", rec.ID, "why", reason, "ready", time.Since(began))
	return c, nil
}

// spawn starts the agent command in the bot's folder, in a process group
// of its own, with the minimal environment, on pipes of our own (so that
// reaping the process never races reading its output).
func (a *agent) spawn() (*child, error) {
	cfg := a.h.cfg
	cmd := exec.Command(cfg.Agent.Command, cfg.Agent.Args...)
	cmd.Dir = a.dir.dir
	cmd.Env = childEnv(environ(cfg.Environ), cfg.Agent.Env, a.home)
	ownGroup(cmd)
	var files []*os.File
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, fmt.Errorf("acp: pipes for the agent: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("acp: starting agent %s: %w", cfg.Provider, err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	c := &child{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	log := a.log.With("pid", cmd.Process.Pid)
	go func() {
		defer errR.Close()
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			log.Debug("acp: agent stderr", "line", sc.Text())
		}
	}()
	// The connection reads at once, and logs when the child is gone:
	// nothing is read before its logger is set.
	set := make(chan struct{})
	c.conn = sdk.NewClientSideConnection(&clientSide{a: a, c: c}, inW, gated{outR, set})
	c.conn.SetLogger(log)
	close(set)
	return c, nil
}

// gated reads from r once open is closed.
type gated struct {
	r    io.Reader
	open <-chan struct{}
}

func (g gated) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

// Turn sends the turn's message as one session/prompt and streams the
// agent's updates into w until the agent ends the turn. A stopped turn
// sends session/cancel, and the child is killed when it does not end the
// turn within Config.CancelGrace. A child that exits fails the turn; the
// next turn starts a new one.
func (a *agent) Turn(ctx context.Context, w wake.Work) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return errClosed
	}
	t := &turn{ctx: ctx, w: w}
	a.cur = t
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.cur == t {
			a.cur = nil
		}
		a.mu.Unlock()
	}()
	a.syncConnectors(ctx)
	c, err := a.ensure(ctx)
	if err != nil {
		return err
	}
	text := w.Message().Text
	if c.fresh && a.info.SystemPrompt != "" {
		text = a.info.SystemPrompt + "\n\n" + text
	}
	c.fresh = false

	type result struct {
		resp sdk.PromptResponse
		err  error
	}
	pctx, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	done := make(chan result, 1)
	go func() {
		resp, err := c.conn.Prompt(pctx, sdk.PromptRequest{SessionId: c.session, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		return a.ended(c, r.resp, r.err)
	case <-ctx.Done():
	}
	grace := a.h.cfg.CancelGrace
	cctx, ccancel := context.WithTimeout(context.Background(), grace)
	defer ccancel()
	if err := c.conn.Cancel(cctx, sdk.CancelNotification{SessionId: c.session}); err != nil {
		a.log.Debug("acp: session/cancel did not send", "err", err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil && !c.alive() {
			a.drop(c)
		}
	case <-timer.C:
		a.log.Warn("acp: the agent did not end a stopped turn; killing it", "grace", grace)
		a.drop(c)
		pcancel()
		<-done
	}
	return ctx.Err()
}

// ended is how a turn whose prompt returned ends.
func (a *agent) ended(c *child, resp sdk.PromptResponse, err error) error {
	if err != nil {
		if !c.alive() {
			a.drop(c)
			a.log.Warn("acp: the agent ended during a turn", "how", c.exitText())
			return fmt.Errorf("acp: the agent %s", c.exitText())
		}
		return fmt.Errorf("acp: session/prompt: %w", a.explainAuth("session/prompt", err, c.auth))
	}
	switch resp.StopReason {
	case sdk.StopReasonEndTurn:
		return nil
	case sdk.StopReasonCancelled:
		return errors.New("acp: the agent cancelled the turn")
	case sdk.StopReasonRefusal:
		return errors.New("acp: the agent refused to go on")
	}
	return fmt.Errorf("acp: the agent stopped: %s", resp.StopReason)
}
