package acp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.opentelemetry.io/otel/attribute"

	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/agents"
)

// killWait bounds the wait for a killed child to be reaped.
const killWait = 5 * time.Second

// errClosed is the error of a turn on a closed agent.
var errClosed = errors.New("acp: the agent is closed")

// turn is the turn an agent runs: the Work it answers through, the
// context that ends when it is stopped, and the watch on its limits.
type turn struct {
	ctx   context.Context
	w     wake.Work
	watch *watch
	// mu orders the showing of a note that the agent cannot reach its
	// model's API (see unreachable) and its taking back; retrying says
	// the turn shows one.
	mu       sync.Mutex
	retrying bool
}

// tell shows note in the turn until the agent's next word.
func (t *turn) tell(note string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.retrying = true
	wake.ReportProgress(t.ctx, note)
}

// heard is called at each word of the agent in the turn: a note that it
// could not reach its API is taken back, since it got through.
func (t *turn) heard() {
	t.watch.touch()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.retrying {
		t.retrying = false
		wake.ReportProgress(t.ctx, "")
	}
}

// agent is one back session's agent: its tool server, and its child while
// one runs.
type agent struct {
	h      *Harness
	info   wake.SessionInfo
	key    string
	bot    string // the bot's name, for failure sentences
	dir    folder
	tools  *toolServer
	heldMu sync.Mutex
	held   wake.ToolSet // the tools the session holds: what its gate allowed at its open, narrowed since
	home   string
	temp   bool // home is a temporary folder of this agent's
	log    *slog.Logger

	startMu sync.Mutex    // serialises starts of a child
	turns   chan struct{} // holds the running turn until its child has ended it
	terms   terminals     // the agent's terminals, killed on Close

	mu     sync.Mutex
	cur    *turn
	child  *child
	closed bool
	notice string // a sentence for the next turn to show (see Turn), "" for none
}

// child is one running agent process and its ACP connection.
type child struct {
	cmd    *exec.Cmd
	conn   *sdk.ClientSideConnection
	stdin  io.Closer
	stdout io.Closer
	exited chan struct{} // closed once the process is reaped
	err    error         // Wait's error, set before exited closes

	out      tail          // its last lines on stderr and non-ACP stdout, for failure sentences
	outDone  chan struct{} // closed once its stderr is read to the end
	scrub    scrubbers     // what takes secrets out of its lines
	began    time.Time     // when it was started
	debugLog string        // the folder of the debug log it keeps, read on a failure; "" for none

	stopMu    sync.Mutex
	stoppedBy string // why the server killed it, when it did

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
	home, temp, err := h.cfg.sessionHome(s)
	if err != nil {
		return nil, err
	}
	a := &agent{h: h, info: s, key: h.cfg.Key(s), bot: botName(s), dir: dir, home: home, temp: temp, log: h.log.With("session", s.URI),
		turns: make(chan struct{}, 1)}
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
		c.stopFor("as its session closed")
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
	release := t.watch.hold() // the agent waits on us, not the other way round
	return t, ctx, func() { release(); stop(); cancel() }, nil
}

// hold stops the running turn's idle clock while the agent waits on us;
// the function returned starts it again.
func (a *agent) hold() func() {
	if t := a.current(); t != nil {
		return t.watch.hold()
	}
	return func() {}
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

// stopFor kills the child, saying why: how then tells it.
func (c *child) stopFor(why string) {
	c.stopMu.Lock()
	if c.stoppedBy == "" {
		c.stoppedBy = why
	}
	c.stopMu.Unlock()
	c.kill()
}

// how says how the child ended, looking before it is killed: it waits up
// to wait for a child that closed its connection to exit by itself, then
// says its exit status or signal, or why the server killed it.
func (c *child) how(wait time.Duration) string {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
		return "it closed its connection and did not exit"
	}
	c.stopMu.Lock()
	why := c.stoppedBy
	c.stopMu.Unlock()
	if why != "" {
		return "the server stopped it " + why
	}
	return exitWords(c.err)
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
// session/load or session/new, within Config.StartTimeout. It reports its
// steps to ctx's wake.Progress. A failure is a *StepError, logged at Warn,
// or ctx's error when ctx ended.
func (a *agent) start(ctx context.Context) (c *child, err error) {
	ctx, op := a.h.meters.hub.Begin(ctx, telemetry.Cell{}, instr, "agent start", attribute.String("bots.agent", a.h.cfg.Provider))
	defer func() {
		op.End(err)
		if err == nil {
			a.h.meters.starts.Inc("ok")
		}
	}()
	cfg := a.h.cfg
	wake.ReportProgress(ctx, "Starting "+cfg.DisplayName+"…")
	c, err = a.spawn()
	if err != nil {
		return nil, a.startFailed(nil, &StepError{Step: StepStart, Cause: spawnWords(cfg.Agent.Command, err),
			Hint: fmt.Sprintf("Check the command of %s in the agents file.", cfg.Provider), Err: err})
	}
	began := time.Now()
	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	fail := func(step Step, method string, err error) (*child, error) {
		return nil, a.failStart(ctx, sctx, c, step, method, err)
	}
	ictx, iop := a.h.meters.call(sctx, "initialize")
	req := initializeRequest()
	req.Meta = traceMeta(ictx, req.Meta)
	init, err := c.conn.Initialize(ictx, req)
	iop.End(err)
	if err != nil {
		return fail(StepStart, "initialize", err)
	}
	c.auth = init.AuthMethods
	c.debugLog = debugLogDir(init.AgentInfo, a.home)
	if err := a.signIn(sctx, c, c.auth); err != nil {
		return fail(StepSignIn, "authenticate", err)
	}
	name := cfg.DisplayName
	if ai := init.AgentInfo; ai != nil && ai.Title != nil && *ai.Title != "" {
		name = clean(*ai.Title)
	}
	wake.ReportProgress(ctx, "Opening a session on "+name+"…")
	servers := a.toolServers(init.AgentCapabilities)
	prompt := a.systemPrompt()
	var meta map[string]any
	if prompt != "" && promptInMeta(init.AgentInfo) {
		meta = map[string]any{"systemPrompt": map[string]any{"append": prompt}}
	}
	reason := agents.ReasonNoLoad
	if init.AgentCapabilities.LoadSession {
		reason = agents.ReasonNoEarlier
		rec, ok, err := cfg.Store.Load(sctx, a.key)
		if err != nil {
			a.log.Warn("acp: reading the agent session record failed", "err", err)
		}
		if ok {
			lctx, lop := a.h.meters.call(sctx, "session/load")
			_, err := c.conn.LoadSession(lctx, sdk.LoadSessionRequest{Cwd: a.dir.dir, McpServers: servers, SessionId: sdk.SessionId(rec.ID), Meta: traceMeta(lctx, meta)})
			lop.End(err)
			if err == nil {
				c.session = sdk.SessionId(rec.ID)
				rec.LoadedAt, rec.Fresh, rec.Reason = time.Now().UTC(), false, ""
				if err := cfg.Store.Save(sctx, a.key, rec); err != nil {
					a.log.Warn("acp: keeping the agent session record failed", "err", err)
				}
				a.log.Info("acp: continued the agent session", "id", rec.ID, "ready", time.Since(began))
				wake.ReportProgress(ctx, "")
				return c, nil
			}
			if !c.alive() || sctx.Err() != nil {
				return fail(StepOpen, "session/load", err)
			}
			said := agentWords(err)
			reason = agents.ReasonLoadFailed + said
			a.log.Info("acp: the agent could not load its session; starting a new one", "id", rec.ID, "said", said)
			a.setNotice(fmt.Sprintf("%s could not continue the earlier session (it answered \"%s\"); this one starts afresh.", name,
				strings.TrimRight(strings.TrimPrefix(said, "Internal error: "), ".")))
		}
	}
	nctx, nop := a.h.meters.call(sctx, "session/new")
	resp, err := c.conn.NewSession(nctx, sdk.NewSessionRequest{Cwd: a.dir.dir, McpServers: servers, Meta: traceMeta(nctx, meta)})
	nop.End(err)
	if err != nil {
		return fail(StepOpen, "session/new", a.explainAuth("session/new", err, c.auth))
	}
	c.session, c.fresh = resp.SessionId, meta == nil
	rec := agents.SessionRecord{ID: string(resp.SessionId), StartedAt: time.Now().UTC(), Fresh: true, Reason: reason}
	if err := cfg.Store.Save(sctx, a.key, rec); err != nil {
		a.log.Warn("acp: keeping the agent session record failed; a restart starts a new session", "err", err)
	}
	a.log.Info("acp: started a fresh agent session", "id", rec.ID, "why", reason, "ready", time.Since(began))
	wake.ReportProgress(ctx, "")
	return c, nil
}

// failStart ends a child whose start failed at step, waiting on method,
// and returns the failure: ctx's error when ctx ended (the turn that
// waited was stopped), else a *StepError saying how, logged at Warn. sctx
// is ctx bounded by Config.StartTimeout.
func (a *agent) failStart(ctx, sctx context.Context, c *child, step Step, method string, err error) error {
	cfg := a.h.cfg
	if ctx.Err() != nil {
		c.kill()
		return ctx.Err()
	}
	e := &StepError{Step: step, Err: err}
	var lines []string // what it wrote, read before it is killed: what it says then is no cause
	switch {
	case sctx.Err() != nil && c.alive():
		lines = c.said(outMark{})
		c.stopFor(fmt.Sprintf("after its startTimeout (%s)", cfg.StartTimeout))
		e.Cause = fmt.Sprintf("it did not answer %s within %s (the agent's startTimeout), so it was stopped", method, cfg.StartTimeout)
		e.Hint = fmt.Sprintf("Check that %s can reach its service and is signed in, or raise startTimeout for it in the agents file.", cfg.Provider)
	case !c.alive():
		e.Cause = c.how(killWait)
		lines = c.said(outMark{})
		if !disconnected(err) {
			e.Cause = agentWords(err) + "; " + e.Cause
		}
		c.kill()
	default:
		e.Cause = agentWords(err)
		lines = c.said(outMark{})
		c.kill()
	}
	return a.startFailed(lines, e)
}

// startFailed is e, a failure of a start, told with lines, what the
// child last wrote (see failed).
func (a *agent) startFailed(lines []string, e *StepError) error {
	return a.h.failed(a.log, a.bot, e, lines)
}

// turnFailed is a *StepError of the turn step, told with lines, what the
// child wrote during the turn (see failed).
func (a *agent) turnFailed(lines []string, cause, hint string, err error) error {
	return a.h.failed(a.log, a.bot, &StepError{Step: StepTurn, Cause: cause, Hint: hint, Err: err}, lines)
}

// failed fills in e's bot and agent, completes it from lines, what the
// agent last wrote on stderr (see explain), logs it at Warn on log and
// returns it: every failure of a start or a turn passes here.
func (h *Harness) failed(log *slog.Logger, bot string, e *StepError, lines []string) error {
	e.Bot, e.Agent = bot, h.cfg.Provider
	h.explain(e, lines)
	h.meters.failures.Inc(stepLabels[e.Step])
	if e.Step != StepTurn {
		h.meters.starts.Inc("failed")
	}
	msg := "acp: the agent did not start"
	if e.Step == StepTurn {
		msg = "acp: the agent failed a turn"
	}
	log.Warn(msg, "bot", bot, "step", string(e.Step), "cause", e.Cause, "said", e.Said)
	return e
}

// How long a failure waits for an agent's last words on stderr: a child
// that ended, until its stderr is read to the end (up to outWait); one
// that runs, until it has written nothing for outQuiet (up to outWait).
const (
	outWait  = time.Second
	outQuiet = 100 * time.Millisecond
)

// said returns the lines c wrote outside ACP since m (the zero outMark:
// since it started), once its last words are in, then those of its debug
// log when it keeps one (see agentlog.go); nil for no child.
func (c *child) said(m outMark) []string {
	if c == nil {
		return nil
	}
	if m.at.IsZero() {
		m.at = c.began
	}
	select {
	case <-c.exited:
		t := time.NewTimer(outWait)
		defer t.Stop()
		select {
		case <-c.outDone:
		case <-t.C:
		}
	default:
		c.out.quiet(outQuiet, outWait)
	}
	return c.sofar(m)
}

// sofar is what said returns, without waiting for last words: what c
// has written since m by now, for a look while a turn runs.
func (c *child) sofar(m outMark) []string {
	lines := c.out.since(m)
	if c.debugLog != "" {
		lines = append(lines, debugLogLines(c.debugLog, m.at, c.scrub)...)
	}
	return lines
}

// disconnected reports whether err is the connection's own error for a
// peer that went away, which says nothing of the agent's.
func disconnected(err error) bool {
	var re *sdk.RequestError
	if !errors.As(err, &re) {
		return errors.Is(err, io.EOF)
	}
	d, _ := re.Data.(map[string]any)
	s, _ := d["error"].(string)
	return re.Code == -32603 && strings.HasPrefix(s, "peer ")
}

// spawnWords says why a command did not start, without the Go words.
func spawnWords(command string, err error) string {
	inner := err
	var ee *exec.Error
	var pe *fs.PathError
	switch {
	case errors.As(err, &ee):
		inner = ee.Err
	case errors.As(err, &pe):
		inner = pe.Err
	}
	return fmt.Sprintf("its command %q could not be run (%s)", command, clean(inner.Error()))
}

// spawn starts the agent command in the bot's folder, in a process group
// of its own, inside the sandbox (see startChild), with the minimal
// environment, on pipes of our own (so that reaping the process never
// races reading its output).
func (a *agent) spawn() (*child, error) {
	cfg := a.h.cfg
	if err := copyLogin(cfg.Home, a.home); err != nil {
		return nil, err
	}
	if err := pruneHome(a.home); err != nil {
		a.log.Warn("acp: what the agent left in its HOME could not be pruned", "home", a.home, "err", err)
	}
	cmd := exec.Command(cfg.Agent.Command, cfg.Agent.Args...)
	cmd.Dir = a.dir.dir
	cmd.Env = childEnv(environ(cfg.Environ), cfg.Agent.Env, a.home)
	scrub := childScrubbers(cfg, cmd.Env)
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
	if err := a.startChild(cmd); err != nil {
		closeAll()
		return nil, fmt.Errorf("acp: starting agent %s: %w", cfg.Provider, err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	c := &child{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{}), outDone: make(chan struct{}), scrub: scrub, began: time.Now()}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	log := a.log.With("pid", cmd.Process.Pid)
	go func() {
		defer close(c.outDone)
		defer errR.Close()
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			line := scrub.line(sc.Text())
			log.Debug("acp: agent stderr", "line", line)
			if line != "" {
				c.out.add(line)
			}
		}
	}()
	// Text on stdout that is not ACP is logged once per start at Warn,
	// then at Debug, and kept with stderr. Only the connection's reader
	// calls noise.
	noisy := false
	noise := func(raw string) {
		line := scrub.line(raw)
		c.out.add(line)
		if !noisy {
			noisy = true
			log.Warn("acp: the agent writes text that is not ACP on its stdout; the rest of it is logged at Debug", "first", line)
			return
		}
		log.Debug("acp: agent stdout that is not ACP", "line", line)
	}
	// The connection reads at once, and logs when the child is gone:
	// nothing is read before its logger is set.
	set := make(chan struct{})
	c.conn = sdk.NewClientSideConnection(&clientSide{a: a, c: c}, inW, gated{newACPOnly(outR, noise), set})
	c.conn.SetLogger(log)
	close(set)
	return c, nil
}

// setNotice keeps a sentence for the next turn to show.
func (a *agent) setNotice(text string) {
	a.mu.Lock()
	a.notice = text
	a.mu.Unlock()
}

// takeNotice returns the sentence kept for the next turn, once.
func (a *agent) takeNotice() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.notice
	a.notice = ""
	return n
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
// agent's updates into w until the agent ends the turn. Turns run one at a
// time: a turn waits until the one before has ended on the child. A turn
// stopped, or one the agent leaves silent for Config.TurnIdle or running
// for Config.TurnTimeout, sends session/cancel, and the child is killed
// when it does not end the turn within Config.CancelGrace; the next turn
// then starts a new child, which continues the session. A child that
// exits fails the turn; the next turn starts a new one. A failure is a
// *StepError.
func (a *agent) Turn(ctx context.Context, w wake.Work) error {
	select {
	case a.turns <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-a.turns }()
	a.syncTools(ctx)
	c, err := a.ensure(ctx)
	if err != nil {
		return err
	}
	if n := a.takeNotice(); n != "" {
		if nw, ok := w.(wake.Notifier); ok {
			nw.Notify(n)
		}
	}
	cfg := a.h.cfg
	wt := newWatch(cfg.TurnIdle, cfg.TurnTimeout)
	defer wt.stop()
	t := &turn{ctx: ctx, w: w, watch: wt}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return errClosed
	}
	a.cur = t
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.cur == t {
			a.cur = nil
		}
		a.mu.Unlock()
	}()
	text := w.Message().Text
	if c.fresh && a.systemPrompt() != "" {
		text = a.systemPrompt() + "\n\n" + text
	}
	c.fresh = false
	mark := c.out.mark()

	type result struct {
		resp sdk.PromptResponse
		err  error
	}
	// The prompt is not cancelled with ctx (a stop sends session/cancel
	// and waits its grace), but carries its span.
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer pcancel()
	pctx, pop := a.h.meters.call(pctx, "session/prompt")
	done := make(chan result, 1)
	go func() {
		resp, err := c.conn.Prompt(pctx, sdk.PromptRequest{SessionId: c.session, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}, Meta: traceMeta(pctx, nil)})
		pop.End(err)
		done <- result{resp, err}
	}()
	var hit *limit
	var lines []string
	// An agent that cannot reach its model's API retries in silence and
	// says so only on stderr, or in Claude Code's debug log, which is
	// looked at now and then: the turn shows it while the idle clock
	// runs, rather than working until turnIdle.
	said := c.out.next()
	var poll <-chan time.Time
	if c.debugLog != "" {
		tk := time.NewTicker(debugLogPoll)
		defer tk.Stop()
		poll = tk.C
	}
	look := func() {
		if note := a.unreachable(c.sofar(mark)); note != "" {
			t.tell(note)
			said, poll = nil, nil // told once a turn
		}
	}
wait:
	for {
		select {
		case r := <-done:
			return a.ended(c, mark, r.resp, r.err)
		case <-ctx.Done():
			break wait
		case l := <-wt.hit:
			hit, lines = &l, c.said(mark) // before it is cancelled
			break wait
		case <-said:
			said = c.out.next()
			look()
		case <-poll:
			look()
		}
	}
	grace := cfg.CancelGrace
	cctx, ccancel := context.WithTimeout(context.Background(), grace)
	defer ccancel()
	if err := c.conn.Cancel(cctx, sdk.CancelNotification{SessionId: c.session}); err != nil {
		a.log.Debug("acp: session/cancel did not send", "err", err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	killed := false
	select {
	case r := <-done:
		if r.err != nil && !c.alive() {
			a.drop(c)
		}
	case <-timer.C:
		a.log.Warn("acp: the agent did not end a stopped turn; killing it", "bot", a.bot, "grace", grace)
		c.stopFor(fmt.Sprintf("when it did not end a stopped turn within %s", grace))
		a.drop(c)
		pcancel()
		<-done
		killed = true
	}
	if hit == nil {
		return ctx.Err()
	}
	cause := hit.words()
	if killed {
		cause += fmt.Sprintf("; it did not stop within %s, so it was killed, and the next message continues the session in a new process", grace)
	}
	return a.turnFailed(lines, cause, hit.hint(cfg.Provider), context.DeadlineExceeded)
}

// unreachable is what a turn shows when the agent's lines say it cannot
// reach its model's API, or "" when they do not.
func (a *agent) unreachable(lines []string) string {
	d := diagnose("", lines)
	if d.kind != causeUnreachable {
		return ""
	}
	host := d.host
	if host == "" {
		host = "its model's API"
	}
	cfg := a.h.cfg
	return fmt.Sprintf("%s says it cannot reach %s and keeps trying; the turn stops after %s without a word from it (its turnIdle). Check this machine's network, or a proxy (HTTPS_PROXY in %s's env in the agents file).",
		cfg.DisplayName, host, cfg.TurnIdle, cfg.Provider)
}

// ended is how a turn whose prompt returned ends; mark is where the
// turn's lines of c's output begin.
func (a *agent) ended(c *child, mark outMark, resp sdk.PromptResponse, err error) error {
	if err != nil {
		if !c.alive() {
			how := c.how(killWait)
			lines := c.said(mark)
			a.drop(c)
			if !disconnected(err) {
				how = agentWords(err) + "; " + how
			}
			return a.turnFailed(lines, how, "", err)
		}
		err = a.explainAuth("session/prompt", err, c.auth)
		return a.turnFailed(c.said(mark), agentWords(err), "", err)
	}
	stopped := func(cause, hint string) error { return a.turnFailed(c.said(mark), cause, hint, nil) }
	const again = "Send the message again."
	switch resp.StopReason {
	case sdk.StopReasonEndTurn:
		return nil
	case sdk.StopReasonCancelled:
		return stopped("it cancelled the turn", again)
	case sdk.StopReasonRefusal:
		return stopped("it refused to go on", "Ask in other words, or ask for something else.")
	case sdk.StopReasonMaxTokens:
		return stopped("it reached its limit of tokens (max_tokens)", "Ask for a shorter answer, or split the work into smaller messages.")
	case sdk.StopReasonMaxTurnRequests:
		return stopped("it reached its limit of model requests in a turn (max_turn_requests)", "Send \"go on\" to let it continue, or split the work into smaller messages.")
	}
	return stopped("it stopped: "+clean(string(resp.StopReason)), again)
}
