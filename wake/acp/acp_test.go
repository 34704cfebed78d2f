package acp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/filesessions"
)

// testCtx is a context that ends with the test, or after ten seconds.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newHarness is a harness running the fake agent: this test binary.
func newHarness(t *testing.T, mod func(*Config)) *Harness {
	t.Helper()
	cfg := Config{
		Provider: "fake",
		Agent:    Command{Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{fakeEnv, "FAKE_NO_LOAD"}},
		Environ: func() []string {
			return []string{fakeEnv + "=1", "OPERATOR_SECRET=hunter2", "PATH=/opt/operator/bin"}
		},
		CancelGrace: 300 * time.Millisecond,
		Logger:      slog.New(slog.NewTextHandler(newTestWriter(t), &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if mod != nil {
		mod(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// testWriter writes log lines to the test's log until the test ends;
// goroutines of a closed connection may log after it.
type testWriter struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func newTestWriter(t *testing.T) *testWriter {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return w
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// open opens an agent of h in dir (a new folder when "").
func open(t *testing.T, h *Harness, dir string) *agent {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	a, err := h.Open(testCtx(t), wake.SessionInfo{URI: "ahp-session:/test", Provider: "fake", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a.(*agent)
}

// fakeWork is a turn's Work that records what the agent does.
type fakeWork struct {
	text    string
	approve bool
	answer  string
	said    chan string // each Reply, when not nil

	mu       sync.Mutex
	reply    strings.Builder
	posts    []string
	thoughts []string
	tools    []wake.ToolReport
	asked    []string
	approved []wake.Approval
}

var (
	_ wake.Work         = (*fakeWork)(nil)
	_ wake.Reasoner     = (*fakeWork)(nil)
	_ wake.ToolReporter = (*fakeWork)(nil)
)

func (w *fakeWork) TurnID() string { return "turn-1" }
func (w *fakeWork) Message() ahp.Message {
	return ahp.Message{Text: w.text, Origin: ahp.MessageOrigin{Kind: ahp.MessageUser}}
}
func (w *fakeWork) Reply(text string) {
	w.mu.Lock()
	w.reply.WriteString(text)
	w.mu.Unlock()
	if w.said != nil {
		w.said <- text
	}
}
func (w *fakeWork) Reason(text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.thoughts = append(w.thoughts, text)
}
func (w *fakeWork) ReportTool(r wake.ToolReport) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tools = append(w.tools, r)
}
func (w *fakeWork) CallTool(ctx context.Context, name string, input json.RawMessage) (ahp.ToolCallResult, error) {
	var in struct{ Text string }
	if err := json.Unmarshal(input, &in); err != nil || name != wake.PostMessage {
		return ahp.ToolCallResult{}, errors.New("bad call")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.posts = append(w.posts, in.Text)
	return ahp.ToolCallResult{Success: true}, nil
}
func (w *fakeWork) Ask(ctx context.Context, qs []ahp.ChatInputQuestion) (ahp.InputResponse, map[string]ahp.ChatInputAnswer, error) {
	w.mu.Lock()
	w.asked = append(w.asked, qs[0].Message)
	w.mu.Unlock()
	return ahp.InputAccept, map[string]ahp.ChatInputAnswer{qs[0].ID: {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: w.answer}}}, nil
}
func (w *fakeWork) Approve(ctx context.Context, a wake.Approval) (bool, error) {
	w.mu.Lock()
	w.approved = append(w.approved, a)
	w.mu.Unlock()
	return w.approve, nil
}

func (w *fakeWork) replied() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reply.String()
}

// runTurn runs one turn of text and returns its Work.
func runTurn(t *testing.T, a *agent, text string) (*fakeWork, error) {
	t.Helper()
	w := &fakeWork{text: text}
	return w, a.Turn(testCtx(t), w)
}

// mustTurn runs one turn that must succeed.
func mustTurn(t *testing.T, a *agent, text string) *fakeWork {
	t.Helper()
	w, err := runTurn(t, a, text)
	if err != nil {
		t.Fatalf("turn %q: %v", text, err)
	}
	return w
}

// pidOf asks the agent for its process id.
func pidOf(t *testing.T, a *agent) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimPrefix(mustTurn(t, a, "pid").replied(), "pid "))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone reports whether no process (not even a zombie) has the id.
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestTurnStreamsTextThoughtsAndToolCalls(t *testing.T) {
	t.Parallel()
	a := open(t, newHarness(t, nil), "")
	w := mustTurn(t, a, "say hello world")
	if got := w.replied(); got != "hello world" {
		t.Errorf("reply = %q, want %q", got, "hello world")
	}
	if len(w.thoughts) != 1 || w.thoughts[0] != "thinking" {
		t.Errorf("thoughts = %q", w.thoughts)
	}
	if len(w.tools) != 2 || !w.tools[0].Started || w.tools[0].Title != "Reading notes" || w.tools[0].Status != "in_progress" || w.tools[1].Status != "completed" {
		t.Errorf("tool reports = %+v", w.tools)
	}
}

func TestPostMessageThroughMCP(t *testing.T) {
	t.Parallel()
	a := open(t, newHarness(t, nil), "")
	w := mustTurn(t, a, "post hello there")
	if len(w.posts) != 1 || w.posts[0] != "hello there" {
		t.Errorf("posts = %q (reply %q)", w.posts, w.replied())
	}
}

func TestAskQuestionThroughMCP(t *testing.T) {
	t.Parallel()
	a := open(t, newHarness(t, nil), "")
	w := &fakeWork{text: "ask favourite colour?", answer: "blue"}
	if err := a.Turn(testCtx(t), w); err != nil {
		t.Fatal(err)
	}
	if len(w.asked) != 1 || w.asked[0] != "favourite colour?" || len(w.posts) != 1 || w.posts[0] != "you said: blue" {
		t.Errorf("asked %q, posts %q (reply %q)", w.asked, w.posts, w.replied())
	}
}

func TestPermissionIsRelayedAndAnswered(t *testing.T) {
	t.Parallel()
	a := open(t, newHarness(t, nil), "")
	for approve, want := range map[bool]string{true: "allowed", false: "rejected"} {
		w := &fakeWork{text: "permit", approve: approve}
		if err := a.Turn(testCtx(t), w); err != nil {
			t.Fatal(err)
		}
		if len(w.approved) != 1 || w.approved[0].DisplayName != "Edit notes.md" || w.approved[0].ToolName != "acp_edit" || !strings.Contains(w.approved[0].Input, "notes.md") {
			t.Errorf("approvals = %+v", w.approved)
		}
		if len(w.posts) != 1 || w.posts[0] != want {
			t.Errorf("approve=%v: posts %q, want %q", approve, w.posts, want)
		}
	}
}

func TestToolServerAnswersOnlyItsTokenAndOnlyDuringATurn(t *testing.T) {
	t.Parallel()
	a := open(t, newHarness(t, nil), "")
	base := a.tools.url[:strings.LastIndex(a.tools.url, "/")]
	resp, err := http.Post(base+"/guess", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a guessed path answered %d, want 404", resp.StatusCode)
	}
	if _, _, err := a.post(testCtx(t), "nobody asked"); err == nil {
		t.Error("post_message outside a turn was taken")
	}
}

func TestMinimalEnvironment(t *testing.T) {
	t.Parallel()
	login := filepath.Join(t.TempDir(), "home")
	a := open(t, newHarness(t, func(c *Config) { c.Home = login }), "")
	env := strings.Split(mustTurn(t, a, "env").replied(), "\n")
	want := map[string]bool{fakeEnv + "=1": true, "PATH=" + DefaultPath: true, "HOME=" + a.home: true, "TMPDIR=" + filepath.Join(a.home, "tmp"): true}
	for _, kv := range env {
		if !want[kv] {
			t.Errorf("the child has %q", kv)
		}
		delete(want, kv)
	}
	if len(want) > 0 {
		t.Errorf("the child lacks %v", want)
	}
	if a.home == login {
		t.Errorf("the session runs with the login's HOME %s", login)
	}
}

func TestConfinement(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("operator secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := open(t, newHarness(t, nil), dir)
	if got := mustTurn(t, a, "read "+filepath.Join(dir, "notes.md")).replied(); got != "inside" {
		t.Errorf("reading inside: %q", got)
	}
	if got := mustTurn(t, a, "write "+filepath.Join(dir, "sub", "new.md")+" fresh").replied(); got != "wrote" {
		t.Errorf("writing inside: %q", got)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "sub", "new.md")); string(data) != "fresh" {
		t.Errorf("the file inside holds %q", data)
	}
	for name, p := range map[string]string{
		"absolute": secret,
		"dotdot":   dir + "/../" + filepath.Base(outside) + "/secret.txt",
		"symlink":  filepath.Join(dir, "out", "secret.txt"),
		"relative": "notes.md",
	} {
		t.Run(name, func(t *testing.T) {
			if got := mustTurn(t, a, "read "+p).replied(); !strings.HasPrefix(got, "refused:") {
				t.Errorf("reading %s: %q", p, got)
			}
			if got := mustTurn(t, a, "write "+p+" overwritten").replied(); !strings.HasPrefix(got, "refused:") {
				t.Errorf("writing %s: %q", p, got)
			}
		})
	}
	if data, _ := os.ReadFile(secret); string(data) != "operator secret" {
		t.Errorf("the file outside was changed: %q", data)
	}
}

func TestCrashFailsTheTurnAndLeavesNoZombie(t *testing.T) {
	t.Parallel()
	a := open(t, newHarness(t, nil), "")
	pid := pidOf(t, a)
	_, err := runTurn(t, a, "crash")
	if err == nil || !strings.Contains(err.Error(), "it exited with status 3") {
		t.Fatalf("crash: err = %v, want the exit status", err)
	}
	if !gone(pid) {
		t.Errorf("process %d is still there after the crash", pid)
	}
	if next := pidOf(t, a); next == pid {
		t.Error("the next turn ran on the crashed child")
	}
}

func TestStopSendsCancel(t *testing.T) {
	t.Parallel()
	a := open(t, newHarness(t, func(c *Config) { c.CancelGrace = 10 * time.Second }), "")
	pid := pidOf(t, a)
	ctx, cancel := context.WithCancel(testCtx(t))
	w := &fakeWork{text: "sleep", said: make(chan string, 1)}
	errc := make(chan error, 1)
	go func() { errc <- a.Turn(ctx, w) }()
	<-w.said
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped turn returned %v", err)
	}
	if again := pidOf(t, a); again != pid {
		t.Errorf("the agent ended the turn, but its child was replaced (%d → %d)", pid, again)
	}
}

func TestChildIgnoringCancelIsKilled(t *testing.T) {
	t.Parallel()
	a := open(t, newHarness(t, nil), "")
	pid := pidOf(t, a)
	ctx, cancel := context.WithCancel(testCtx(t))
	w := &fakeWork{text: "hang", said: make(chan string, 1)}
	errc := make(chan error, 1)
	go func() { errc <- a.Turn(ctx, w) }()
	<-w.said
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped turn returned %v", err)
	}
	if !gone(pid) {
		t.Errorf("process %d ignored the cancel and lives on", pid)
	}
	mustTurn(t, a, "say back again")
}

func TestCloseKillsTheChild(t *testing.T) {
	t.Parallel()
	a := open(t, newHarness(t, nil), "")
	pid := pidOf(t, a)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Errorf("process %d outlived Close", pid)
	}
	if _, err := runTurn(t, a, "say late"); err == nil {
		t.Error("a closed agent ran a turn")
	}
}

func TestSessionLoadContinuesAfterRestart(t *testing.T) {
	t.Parallel()
	store := filesessions.Store{Dir: filepath.Join(t.TempDir(), "ids")}
	key := func(wake.SessionInfo) string { return "motion/user:soft/work" }
	h := newHarness(t, func(c *Config) { c.Store, c.Key = store, key })
	dir := t.TempDir()
	info := wake.SessionInfo{URI: "ahp-session:/one", Provider: "fake", Dir: dir, SystemPrompt: "SYSTEM"}
	first, err := h.Open(testCtx(t), info)
	if err != nil {
		t.Fatal(err)
	}
	w := &fakeWork{text: "prompt"}
	if err := first.Turn(testCtx(t), w); err != nil || !strings.HasPrefix(w.replied(), "SYSTEM "+QuestionPrompt+"\n\n") {
		t.Fatalf("a new session's first prompt = %q, %v; want the system prompt first", w.replied(), err)
	}
	w = &fakeWork{text: "session"}
	first.Turn(testCtx(t), w)
	id, _, _ := strings.Cut(strings.TrimPrefix(w.replied(), "session "), " ")
	first.Close()

	info.URI = "ahp-session:/two"
	second, err := h.Open(testCtx(t), info)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	w = &fakeWork{text: "session"}
	if err := second.Turn(testCtx(t), w); err != nil {
		t.Fatal(err)
	}
	if want := "session " + id + " loaded=true"; w.replied() != want {
		t.Errorf("after a restart: %q, want %q", w.replied(), want)
	}
	w = &fakeWork{text: "prompt"}
	second.Turn(testCtx(t), w)
	if w.replied() != "prompt" {
		t.Errorf("a loaded session was prompted with %q", w.replied())
	}
	rec, ok, err := store.Load(testCtx(t), key(info))
	if err != nil || !ok || rec.ID != id || rec.Fresh || rec.Reason != "" || rec.LoadedAt.IsZero() || rec.StartedAt.IsZero() {
		t.Errorf("record after a load = %+v, %v, %v; want id %s continued", rec, ok, err, id)
	}
}

func TestRecordSaysWhenASessionStartedFresh(t *testing.T) {
	t.Parallel()
	key := func(wake.SessionInfo) string { return "k" }
	cases := []struct {
		name   string
		noLoad bool
		before string // the file's content before the start, "" for none
		reason string
	}{
		{"no earlier session", false, "", agents.ReasonNoEarlier},
		{"agent cannot load", true, "fake-1-1\n", agents.ReasonNoLoad},
		{"load failed", false, `{"id":"gone-1","fresh":false}`, agents.ReasonLoadFailed},
		{"old one-line id file that fails to load", false, "gone-2\n", agents.ReasonLoadFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := filesessions.Store{Dir: t.TempDir()}
			if tc.before != "" {
				if err := os.WriteFile(store.Path("k"), []byte(tc.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			h := newHarness(t, func(c *Config) {
				c.Store, c.Key = store, key
				if tc.noLoad {
					env := c.Environ
					c.Environ = func() []string { return append(env(), "FAKE_NO_LOAD=1") }
				}
			})
			a := open(t, h, "")
			got := mustTurn(t, a, "session").replied()
			rec, ok, err := store.Load(testCtx(t), "k")
			if err != nil || !ok {
				t.Fatalf("no record: %v", err)
			}
			if !rec.Fresh || !strings.HasPrefix(rec.Reason, tc.reason) || rec.StartedAt.IsZero() || !strings.HasPrefix(got, "session "+rec.ID+" loaded=false") {
				t.Errorf("record %+v after %q; want a fresh session, reason %q", rec, got, tc.reason)
			}
			if tc.reason == agents.ReasonLoadFailed && rec.Reason == agents.ReasonLoadFailed {
				t.Errorf("reason %q names no error", rec.Reason)
			}
		})
	}
}

func TestOldOneLineIDFileIsContinued(t *testing.T) {
	t.Parallel()
	store := filesessions.Store{Dir: t.TempDir()}
	if err := os.WriteFile(store.Path("k"), []byte("fake-7-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Store, c.Key = store, func(wake.SessionInfo) string { return "k" } })
	a := open(t, h, "")
	if got := mustTurn(t, a, "session").replied(); got != "session fake-7-1 loaded=true" {
		t.Errorf("an old id file: %q, want it continued", got)
	}
	if rec, _, err := store.Load(testCtx(t), "k"); err != nil || rec.ID != "fake-7-1" || rec.Fresh {
		t.Errorf("record %+v, %v", rec, err)
	}
}

func TestNoLoadSessionStartsAFreshSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		env := c.Environ
		c.Environ = func() []string { return append(env(), "FAKE_NO_LOAD=1") }
		c.Key = func(wake.SessionInfo) string { return "k" }
	})
	dir := t.TempDir()
	var ids []string
	for range 2 {
		a := open(t, h, dir)
		ids = append(ids, mustTurn(t, a, "session").replied())
		a.Close()
	}
	if ids[0] == ids[1] || strings.Contains(ids[1], "loaded=true") {
		t.Errorf("sessions %q: want two fresh ones", ids)
	}
}

func TestBadCommandRefusesTheSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.Agent.Command = filepath.Join(t.TempDir(), "missing") })
	if _, err := h.Open(testCtx(t), wake.SessionInfo{URI: "ahp-session:/x", Dir: t.TempDir()}); err == nil {
		t.Error("a missing command opened")
	}
	if _, err := New(Config{Provider: "x", Agent: Command{Command: "a", Env: []string{"A=B"}}}); err == nil {
		t.Error("an env entry that is no name was taken")
	}
}

func TestTerminalRunsOnlyInsideTheBotsFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := open(t, newHarness(t, nil), dir)
	resolved, _ := filepath.EvalSymlinks(dir)
	if got := mustTurn(t, a, "terminal - pwd").replied(); got != "exit 0: "+resolved+"\n" && got != "exit 0: "+dir+"\n" {
		t.Errorf("pwd in the bot's folder: %q", got)
	}
	if got := mustTurn(t, a, "terminal "+filepath.Join(dir, "sub")+" pwd").replied(); got != "exit 0: "+filepath.Join(resolved, "sub")+"\n" {
		t.Errorf("a run in a folder inside: %q", got)
	}
	got := mustTurn(t, a, "terminal "+filepath.Join(dir, "sub")+" env").replied()
	if !strings.HasPrefix(got, "exit 0: ") || strings.Contains(got, "OPERATOR_SECRET") || !strings.Contains(got, "PATH="+DefaultPath) {
		t.Errorf("a terminal's environment: %q", got)
	}
	if got := mustTurn(t, a, "terminal - false").replied(); got != "exit 1: " {
		t.Errorf("exit status: %q", got)
	}
	for name, cwd := range map[string]string{
		"absolute": outside,
		"dotdot":   dir + "/../" + filepath.Base(outside),
		"symlink":  filepath.Join(dir, "out"),
		"relative": "sub",
		"root":     "/",
	} {
		t.Run(name, func(t *testing.T) {
			if got := mustTurn(t, a, "terminal "+cwd+" pwd").replied(); !strings.HasPrefix(got, "refused:") {
				t.Errorf("a terminal in %s: %q", cwd, got)
			}
		})
	}
}

func TestTerminalsAreKilledWhenTheSessionCloses(t *testing.T) {
	t.Parallel()
	a := open(t, newHarness(t, nil), "")
	if got := mustTurn(t, a, "background sleep 60").replied(); got != "started term-1" {
		t.Fatalf("background: %q", got)
	}
	term, err := a.terminal("term-1")
	if err != nil {
		t.Fatal(err)
	}
	pid := term.cmd.Process.Pid
	a.Close()
	select {
	case <-term.exited:
	case <-testCtx(t).Done():
		t.Fatal("the terminal outlived its session")
	}
	if !gone(pid) {
		t.Errorf("process %d is still there", pid)
	}
}

func TestBoundedOutputKeepsTheEndAtACharacterBoundary(t *testing.T) {
	t.Parallel()
	b := &boundedOutput{limit: 5}
	b.Write([]byte("abc"))
	b.Write([]byte("dé€f"))
	out, truncated := b.text()
	if !truncated || len(out) > 5 || !strings.HasSuffix(out, "€f") || !utf8.ValidString(out) {
		t.Errorf("output %q, truncated %v", out, truncated)
	}
}
