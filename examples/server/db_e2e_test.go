package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record/pgrecord"
)

// The end-to-end tests of -db: built servers on one PostgreSQL (a schema
// of the test's own) and one shared root, each with a configuration
// folder of its own.

// cluster is n instances of the built server on one database.
type cluster struct {
	db, root, users string
	configs         []string
	servers         []*testServer
}

// startCluster starts n built servers on a fresh schema and a shared root.
func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	bin := buildServer(t)
	base := t.TempDir()
	c := &cluster{db: pgtest.URL(t), root: filepath.Join(base, "bots"), users: filepath.Join(base, "users.json")}
	writeAtomic(t, c.users, usersJSON("soft"))
	for i := range n {
		config := filepath.Join(base, fmt.Sprintf("config-%d", i))
		c.configs = append(c.configs, config)
		c.servers = append(c.servers, startDBProcess(t, bin, "-db", c.db, "-config", config, "-root", c.root, "-users", c.users))
	}
	return c
}

// startDBProcess runs the built server with args and returns it once it
// listens; cleanup stops it with SIGTERM.
func startDBProcess(t *testing.T, bin string, args ...string) *testServer {
	t.Helper()
	args = append([]string{"-addr", "127.0.0.1:0", "-host-name", hostName, "-log-level", "error"}, args...)
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		return &testServer{addr: mustListening(t, l), stopped: true}
	case <-exited:
		t.Fatalf("the server exited before it listened: %s", cmd.Stderr.(*lockedWriter))
	case <-time.After(30 * time.Second):
		t.Fatal("the server printed no listening line in 30s")
	}
	return nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// connectTo dials server s as root and initializes.
func connectTo(ctx context.Context, t *testing.T, s *testServer, clientID string) *client {
	t.Helper()
	c := dial(ctx, t, s, rootToken, byQuery)
	c.initialize(t, clientID)
	return c
}

func TestDBAMakeOnOneInstanceIsInTheOtherTwoCatalogues(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	cl := startCluster(t, 3)
	a := connectTo(ctx, t, cl.servers[0], "a")
	b := connectTo(ctx, t, cl.servers[1], "b")
	c := connectTo(ctx, t, cl.servers[2], "c")
	if ids := b.subscribeCatalogue(t); slices.Contains(ids, "motion") {
		t.Fatalf("b's catalogue starts with motion: %v", ids)
	}
	c.subscribeCatalogue(t)
	a.makeBot(t, "motion", `{"name":"Motion","instructions":"Review pull requests."}`)
	b.waitFor(t, "bots: added motion")
	c.waitFor(t, "bots: added motion")
	got := c.readBot(t, "motion")
	if got["name"] != "Motion" || got["instructions"] != "Review pull requests." {
		t.Fatalf("c reads %v", got)
	}
	// An edit on c is heard on b, and a delete on b spends the slug for a.
	c.editBot(t, "motion", `{"description":"edited on c"}`, "")
	b.waitFor(t, "bots: changed motion")
	if d := a.readBot(t, "motion")["description"]; d != "edited on c" {
		t.Fatalf("a reads description %v after c's edit", d)
	}
	b.deleteBot(t, "motion")
	c.waitFor(t, "bots: removed motion")
	a.fail(t, "resourceWrite", res("bot://motion", "data", `{"name":"Again"}`, "encoding", "utf-8", "createOnly", true), codeExists, "bot://motion")
}

func TestDBFiftyEditsWithOneETagOverThreeInstancesLetExactlyOneThrough(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	cl := startCluster(t, 3)
	var clients []*client
	for i, s := range cl.servers {
		clients = append(clients, connectTo(ctx, t, s, fmt.Sprintf("editor-%d", i)))
	}
	clients[0].makeBot(t, "motion", `{"name":"Motion"}`)
	etag := clients[1].etag(t, "motion")
	if other := clients[2].etag(t, "motion"); other != etag {
		t.Fatalf("two instances give one bot etags %s and %s", etag, other)
	}
	const n = 50
	answers := make(chan *message, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := res("bot://motion", "data", fmt.Sprintf(`{"name":"Editor %d"}`, i), "encoding", "utf-8", "ifMatch", etag)
			answers <- clients[i%len(clients)].send(t, "resourceWrite", p)
		})
	}
	wg.Wait()
	close(answers)
	won, winner := 0, ""
	for m := range answers {
		switch {
		case m.Error == nil:
			won++
		case m.Error.Code != codeConflict:
			t.Errorf("a losing edit answered %s, want code %d", m.raw, codeConflict)
		}
	}
	if won != 1 {
		t.Fatalf("%d edits went through, want 1", won)
	}
	// Every instance reads the one edit that won.
	for i, c := range clients {
		name, _ := c.readBot(t, "motion")["name"].(string)
		if i == 0 {
			winner = name
		}
		if !strings.HasPrefix(name, "Editor ") || name != winner {
			t.Fatalf("instance %d reads name %q, instance 0 %q", i, name, winner)
		}
	}
}

func TestDBAnInstanceWhoseRootIsNotTheSharedOneRefusesToStart(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 1)
	local := filepath.Join(t.TempDir(), "bots")
	d := newDirs(t)
	_, err := tryStart([]string{"-addr", "127.0.0.1:0", "-config", d.config, "-root", local, "-users", cl.users, "-db", cl.db, "-log-level", "error"})
	if err == nil || !strings.Contains(err.Error(), "refusing to start") || !strings.Contains(err.Error(), pgrecord.MarkerFile) {
		t.Fatalf("an instance with a root of its own started: %v", err)
	}
	if _, statErr := os.Stat(local); !os.IsNotExist(statErr) {
		t.Fatalf("the refused instance wrote its root %s: %v", local, statErr)
	}
	// Nor does one whose root the service would refuse for another.
	_, err = tryStart([]string{"-addr", "127.0.0.1:0", "-config", d.config, "-root", filepath.Join(d.config, "bots"), "-users", cl.users, "-db", cl.db, "-log-level", "error"})
	if err == nil || !strings.Contains(err.Error(), "is the configuration folder or under it") {
		t.Fatalf("an instance with its root in its configuration folder started: %v", err)
	}
	// The shared root, with a configuration folder of its own, serves.
	s := startServer(t, []string{"-addr", "127.0.0.1:0", "-config", d.config, "-root", cl.root, "-users", cl.users, "-db", cl.db, "-log-level", "error"})
	connectTo(testCtx(t), t, s, "shared")
}

func TestDBABotAnswersInAChatOnAnotherInstanceAndReadsAnswerItsRecord(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	cl := startCluster(t, 2)
	a := connectTo(ctx, t, cl.servers[0], "maker")
	a.makeBot(t, "motion", `{"name":"Motion","description":"Reads pull requests."}`)
	// The persona lives in the record: the make writes no AGENTS.md,
	if _, err := os.Stat(filepath.Join(cl.root, "motion", "AGENTS.md")); !os.IsNotExist(err) {
		t.Fatalf("the make wrote AGENTS.md: %v", err)
	}
	// and the first wake, on the other instance, writes it from the record.
	b := dialChat(t, cl.servers[1].addr+"/?tkn="+rootToken, "talker")
	chat := b.openChat("ahp-session:/db-chat", "motion")
	b.dispatch(chat, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("hello")))
	if got := texts(b.turn(chat, "t1")); !slices.Equal(got, []string{"Motion heard: hello"}) {
		t.Fatalf("the bot answered %q on the other instance", got)
	}
	if _, err := os.Stat(filepath.Join(cl.root, "motion", "AGENTS.md")); err != nil {
		t.Fatalf("no AGENTS.md in the shared root after the wake: %v", err)
	}
	// The back session's row is kept in the database, with the chat's
	// log, so any instance continues it; nothing of it under -config.
	if got := count(t, cl.db, `SELECT count(*) FROM bots_rows`); got != 1 {
		t.Fatalf("the database keeps %d session rows, want one", got)
	}
	if rows, _ := filepath.Glob(filepath.Join(cl.configs[1], "bots", "motion", "sessions", "*")); len(rows) != 0 {
		t.Fatalf("the instance that woke the bot keeps files %v, want none", rows)
	}
	a.editBot(t, "motion", `{"name":"Mover"}`, "")
	c := connectTo(ctx, t, cl.servers[1], "reader")
	if got := c.readBot(t, "motion"); got["name"] != "Mover" || got["description"] != "Reads pull requests." {
		t.Fatalf("the other instance reads %v after the edit", got)
	}
}

// burst is a connection that sends requests without waiting for their
// answers and records which were answered without an error: what the
// server acknowledged.
type burst struct {
	ws    *websocket.Conn
	mu    sync.Mutex
	slugs map[int64]string // request id → the slug it makes
	acked []string
	done  chan struct{}
}

func newBurst(ctx context.Context, t *testing.T, s *testServer) *burst {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, s.wsURL()+"?tkn="+rootToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	b := &burst{ws: ws, slugs: map[int64]string{}, done: make(chan struct{})}
	frame := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"burst"}}`
	if err := ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(b.done)
		for {
			_, data, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			var m struct {
				ID    *int64          `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(data, &m) != nil || m.ID == nil || m.Error != nil {
				continue
			}
			b.mu.Lock()
			if slug, ok := b.slugs[*m.ID]; ok {
				b.acked = append(b.acked, slug)
			}
			b.mu.Unlock()
		}
	}()
	return b
}

// make sends a make of slug as request id; an error means the connection
// is gone.
func (b *burst) make(ctx context.Context, id int64, slug string) error {
	b.mu.Lock()
	b.slugs[id] = slug
	b.mu.Unlock()
	p, _ := json.Marshal(res("bot://"+slug, "data", `{"name":"Written"}`, "encoding", "utf-8", "createOnly", true))
	frame := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resourceWrite","params":%s}`, id, p)
	return b.ws.Write(ctx, websocket.MessageText, []byte(frame))
}

func (b *burst) ackedSoFar() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.acked)
}

func TestDBKillDashNineDuringAThousandWritesLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	bin := buildServer(t)
	cl := startCluster(t, 1)
	// The victim is a process of its own, so that kill -9 takes it alone.
	victimCmd, victim := startKillable(t, bin, "-db", cl.db, "-config", filepath.Join(t.TempDir(), "config"), "-root", cl.root, "-users", cl.users)
	const conns, n = 10, 1000
	var bursts []*burst
	for range conns {
		bursts = append(bursts, newBurst(ctx, t, victim))
	}
	var wg sync.WaitGroup
	for c, b := range bursts {
		wg.Go(func() {
			for i := c; i < n; i += conns {
				if b.make(ctx, int64(i+1), fmt.Sprintf("w-%04d", i)) != nil {
					return
				}
			}
		})
	}
	// Kill it once a fifth of the writes are acknowledged, many more in
	// flight.
	var total int
	if !waittest.Within(20*time.Second, func() bool {
		total = 0
		for _, b := range bursts {
			total += len(b.ackedSoFar())
		}
		return total >= n/5
	}) {
		t.Fatalf("only %d writes acknowledged in 20s", total)
	}
	if err := victimCmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var acked []string
	for _, b := range bursts {
		<-b.done // the connection is gone: no acknowledgement comes after this
		acked = append(acked, b.ackedSoFar()...)
	}
	if len(acked) >= n {
		t.Fatalf("all %d writes were acknowledged before the kill: the test proves nothing", len(acked))
	}
	other := connectTo(ctx, t, cl.servers[0], "survivor")
	listed := other.list(t)
	for _, slug := range acked {
		if !slices.Contains(listed, slug) {
			t.Errorf("the acknowledged make of %s is lost", slug)
		}
	}
	t.Logf("%d of %d writes acknowledged before kill -9; all %d listed on the other instance (%d bots in all)", len(acked), n, len(acked), len(listed))
}

// startKillable runs the built server with args and returns its process
// and address; cleanup kills it.
func startKillable(t *testing.T, bin string, args ...string) (*exec.Cmd, *testServer) {
	t.Helper()
	args = append([]string{"-addr", "127.0.0.1:0", "-host-name", hostName, "-log-level", "error"}, args...)
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		return cmd, &testServer{addr: mustListening(t, l), stopped: true}
	case <-time.After(30 * time.Second):
		t.Fatal("the server printed no listening line in 30s")
	}
	return nil, nil
}

func TestDBEditsWithoutAnETagOverThreeInstancesAllGoThrough(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	cl := startCluster(t, 3)
	var clients []*client
	for i, s := range cl.servers {
		clients = append(clients, connectTo(ctx, t, s, fmt.Sprintf("editor-%d", i)))
	}
	clients[0].makeBot(t, "motion", `{"name":"Motion"}`)
	// An edit without ifMatch applies to whatever the bot is now: one
	// that races another instance's edit is merged again onto the bot as
	// it became, never answered with a conflict it did not ask for.
	const n = 30
	answers := make(chan *message, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := res("bot://motion", "data", fmt.Sprintf(`{"description":"edit %d"}`, i), "encoding", "utf-8")
			answers <- clients[i%len(clients)].send(t, "resourceWrite", p)
		})
	}
	wg.Wait()
	close(answers)
	for m := range answers {
		if m.Error != nil {
			t.Errorf("an edit without ifMatch answered %s", m.raw)
		}
	}
}

func TestDBFiftyMakesOfOneSlugOverThreeInstancesLetExactlyOneThrough(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	cl := startCluster(t, 3)
	var clients []*client
	for i, s := range cl.servers {
		clients = append(clients, connectTo(ctx, t, s, fmt.Sprintf("maker-%d", i)))
	}
	const n = 50
	answers := make(chan *message, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := res("bot://motion", "data", fmt.Sprintf(`{"name":"Maker %d"}`, i), "encoding", "utf-8", "createOnly", true)
			answers <- clients[i%len(clients)].send(t, "resourceWrite", p)
		})
	}
	wg.Wait()
	close(answers)
	won := 0
	for m := range answers {
		switch {
		case m.Error == nil:
			won++
		case m.Error.Code != codeExists:
			t.Errorf("a losing make answered %s, want code %d", m.raw, codeExists)
		}
	}
	if won != 1 {
		t.Fatalf("%d makes went through, want 1", won)
	}
}

func TestDBMakesOfManyBotsInOneFolderOverThreeInstancesLetOneHaveIt(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	cl := startCluster(t, 3)
	var clients []*client
	for i, s := range cl.servers {
		clients = append(clients, connectTo(ctx, t, s, fmt.Sprintf("maker-%d", i)))
	}
	folder := filepath.Join(cl.root, "shared-work")
	const n = 30
	answers := make(chan *message, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"name":"Maker %d","workspace":%q}`, i, folder)
			p := res(fmt.Sprintf("bot://maker-%d", i), "data", body, "encoding", "utf-8", "createOnly", true)
			answers <- clients[i%len(clients)].send(t, "resourceWrite", p)
		})
	}
	wg.Wait()
	close(answers)
	won := 0
	for m := range answers {
		switch {
		case m.Error == nil:
			won++
		case m.Error.Code != codeInvalidParams || !strings.Contains(m.Error.Message, "is taken"):
			t.Errorf("a losing make answered %s, want %d saying the folder is taken", m.raw, codeInvalidParams)
		}
	}
	if won != 1 {
		t.Fatalf("%d bots were made in one folder, want 1", won)
	}
}
