package main

import (
	"bufio"
	"context"
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

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/pgtest"
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
		return &testServer{addr: strings.TrimPrefix(l, "listening on http://"), stopped: true}
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
	ctx := testCtx(t)
	cl := startCluster(t, 3)
	a := connectTo(ctx, t, cl.servers[0], "a")
	b := connectTo(ctx, t, cl.servers[1], "b")
	c := connectTo(ctx, t, cl.servers[2], "c")
	if ids := b.subscribeCatalogue(t); len(ids) != 0 {
		t.Fatalf("b's catalogue starts with %v", ids)
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
	// The back session's row is kept with the chat, under the -config of
	// the instance it runs on, so a restart of that instance continues it.
	if rows, _ := filepath.Glob(filepath.Join(cl.configs[1], "bots", "motion", "sessions", "*.json")); len(rows) != 1 {
		t.Fatalf("the instance that woke the bot keeps rows %v, want one", rows)
	}
	a.editBot(t, "motion", `{"name":"Mover"}`, "")
	c := connectTo(ctx, t, cl.servers[1], "reader")
	if got := c.readBot(t, "motion"); got["name"] != "Mover" || got["description"] != "Reads pull requests." {
		t.Fatalf("the other instance reads %v after the edit", got)
	}
}
