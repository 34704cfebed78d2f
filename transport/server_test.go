package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/waittest"
)

func TestNewRefusesConfigWithoutHost(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a host succeeded")
	}
	if _, err := New(Config{Host: newFakeHost(engine.NewBus(nil)), ReadLimit: -1}); err == nil {
		t.Fatal("New with a negative read limit succeeded")
	}
}

func TestNewFillsDefaults(t *testing.T) {
	t.Parallel()
	srv, err := New(Config{Host: newFakeHost(engine.NewBus(nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.cfg.ReadLimit != 16<<20 || srv.cfg.SendQueue != 4096 || srv.cfg.ReplayBuffer != 1024 ||
		srv.cfg.ReplayRetention != time.Minute || srv.cfg.ServerInfo.Name != "agenthost-bots" || srv.Bus() == nil {
		t.Fatalf("defaults not filled: %+v", srv.cfg)
	}
}

func TestPipeRefusesWrongToken(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	_, err := srv.Pipe(testContext(t), "wrong")
	if errcode.Of(err) != errcode.Unauthenticated {
		t.Fatalf("Pipe with a wrong token: %v, want Unauthenticated", err)
	}
}

func TestPipeAfterCloseFails(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := srv.Pipe(testContext(t), "root-token"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Pipe after Close: %v, want ErrClosed", err)
	}
}

func TestCloseEndsPipeConnections(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	c := dialPipe(t, srv, "root-token")
	c.initialize("closing")
	srv.Close()
	_, err := c.conn.Recv(c.ctx)
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("after Close, Recv: %v, want status 1001", err)
	}
}

func TestShutdownSendsQueuedAnswersThenCloses(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	c := dialPipe(t, srv, "root-token")
	c.initialize("shutting")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	// the server reads the second frame once it has answered the first.
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(testContext(t)) }()
	if m := c.recv(); string(m.ID) != "1" {
		t.Fatalf("got %s, want the answer to ping 1", m.raw)
	}
	var err error
	for err == nil {
		_, err = c.conn.Recv(c.ctx)
	}
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("after Shutdown, Recv: %v, want status 1001", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestShutdownGivesUpWhenContextEnds(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	c := dialPipe(t, srv, "root-token")
	c.initialize("stuck")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`) // never read
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown with a done context: %v", err)
	}
}

func TestServerSeqIsOneSequenceAcrossChannels(t *testing.T) {
	t.Parallel()
	srv, host := newTestServer(t, Config{})
	c := dialPipe(t, srv, "root-token")
	c.initialize("seq", "test:/notes", "test:/feed")
	for i := range 6 {
		ch := []string{"test:/notes", "test:/feed"}[i%2]
		if err := host.publish(ch, json.RawMessage(fmt.Sprintf(`{"type":"x/add","owner":"soft","n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []int64
	var chans []string
	for _, m := range c.ping() {
		env := m.envelope(t)
		seqs = append(seqs, env.ServerSeq)
		chans = append(chans, env.Channel)
	}
	if !slices.Equal(seqs, []int64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("serverSeqs %v, want 1..6", seqs)
	}
	if chans[0] != "test:/notes" || chans[1] != "test:/feed" {
		t.Fatalf("channels %v", chans)
	}
	if got := srv.Bus().Seq(); got != 6 {
		t.Fatalf("Bus.Seq() = %d, want 6", got)
	}
}

// TestSnapshotThenActionsNeverOverlap subscribes while another goroutine
// publishes: the snapshot plus the actions after it must be every item
// once, and envelopes must come in increasing serverSeq order.
func TestSnapshotThenActionsNeverOverlap(t *testing.T) {
	t.Parallel()
	srv, host := newTestServer(t, Config{})
	const total = 400
	for round := range 5 {
		c := dialPipe(t, srv, "root-token")
		c.initialize(fmt.Sprintf("overlap-%d", round), "ahp-root://")
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range total {
				if err := host.publish("test:/feed", json.RawMessage(fmt.Sprintf(`{"type":"feed/item","owner":"soft","n":"%d-%d"}`, round, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		close(start)
		c.send(`{"jsonrpc":"2.0","id":"sub","method":"subscribe","params":{"channel":"test:/feed"}}`)
		wg.Wait()
		msgs := c.ping()
		var snap struct {
			Snapshot struct {
				State struct {
					Items []map[string]any `json:"items"`
				} `json:"state"`
				FromSeq int64 `json:"fromSeq"`
			} `json:"snapshot"`
		}
		if string(msgs[0].ID) != `"sub"` {
			t.Fatalf("first message %s, want the subscribe answer", msgs[0].raw)
		}
		if err := json.Unmarshal(msgs[0].Result, &snap); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, it := range snap.Snapshot.State.Items {
			seen[it["n"].(string)]++
		}
		last := snap.Snapshot.FromSeq
		for _, m := range msgs[1:] {
			env := m.envelope(t)
			if env.ServerSeq <= last {
				t.Fatalf("serverSeq %d after %d", env.ServerSeq, last)
			}
			last = env.ServerSeq
			var a map[string]any
			json.Unmarshal(env.Action, &a)
			seen[a["n"].(string)]++
		}
		for i := range total {
			if n := seen[fmt.Sprintf("%d-%d", round, i)]; n != 1 {
				t.Fatalf("round %d item %d seen %d times", round, i, n)
			}
		}
	}
}

func TestSlowReaderIsClosedAndLogged(t *testing.T) {
	t.Parallel()
	var logs waittest.Log
	srv, host := newTestServer(t, Config{SendQueue: 8, Logger: logs.Logger(slog.LevelDebug)})
	slow := dialPipe(t, srv, "root-token")
	slow.initialize("slow", "test:/notes")
	fast := dialPipe(t, srv, "root-token")
	fast.initialize("fast", "test:/notes")
	// fast reads as it goes; slow reads nothing.
	for i := range 100 {
		if err := host.publish("test:/notes", json.RawMessage(fmt.Sprintf(`{"type":"notes/add","text":"%d"}`, i))); err != nil {
			t.Fatal(err)
		}
		if env := fast.recv().envelope(t); env.ServerSeq != int64(i+1) {
			t.Fatalf("the fast reader got serverSeq %d, want %d", env.ServerSeq, i+1)
		}
	}
	// slow gets what fitted, then the close.
	var err error
	for err == nil {
		_, err = slow.conn.Recv(slow.ctx)
	}
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation || !strings.Contains(closeReason(err), "too far behind") {
		t.Fatalf("slow reader ended with %v, want 1008 too far behind", err)
	}
	if !containsAll(logs.String(), "level=WARN", "too far behind", "client=slow") {
		t.Fatalf("no Warn line for the slow reader:\n%s", logs.String())
	}
}

func TestInternalErrorIsLoggedOnceAndAnsweredGenerically(t *testing.T) {
	t.Parallel()
	var logs waittest.Log
	srv, _ := newTestServer(t, Config{Logger: logs.Logger(slog.LevelDebug)})
	c := dialPipe(t, srv, "root-token")
	c.initialize("boom")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"resourceRead","params":{"uri":"mem://boom"}}`)
	m := c.recv()
	if m.Error == nil || m.Error.Code != CodeInternalError || m.Error.Message != "internal error" {
		t.Fatalf("answer %s, want -32603 internal error", m.raw)
	}
	if strings.Contains(string(m.raw), "secret") {
		t.Fatalf("the answer leaks the detail: %s", m.raw)
	}
	if n := strings.Count(logs.String(), "disk on fire"); n != 1 {
		t.Fatalf("the detail is logged %d times, want once:\n%s", n, logs.String())
	}
}

func TestUnsubscribeTellsTheChannel(t *testing.T) {
	t.Parallel()
	srv, host := newTestServer(t, Config{})
	c := dialPipe(t, srv, "root-token")
	c.initialize("unsub", "test:/notes")
	c.send(`{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"test:/notes"}}`)
	c.ping()
	if got := host.unsubscribed(); len(got) != 1 || !strings.HasPrefix(got[0], "test:/notes#") {
		t.Fatalf("unsubscribed %v, want test:/notes once", got)
	}
	// nothing more arrives on it
	host.publish("test:/notes", json.RawMessage(`{"type":"notes/add","text":"after"}`))
	if msgs := c.ping(); len(msgs) != 0 {
		t.Fatalf("after unsubscribe got %s", msgs[0].raw)
	}
}

func TestGoneClientIsUnsubscribedAfterRetention(t *testing.T) {
	t.Parallel()
	srv, host := newTestServer(t, Config{ReplayRetention: 5 * time.Millisecond})
	c := dialPipe(t, srv, "root-token")
	c.initialize("gone", "test:/notes", "ahp-root://")
	c.conn.Close()
	waittest.For(t, "both channels to hear the client leave", func() bool { return len(host.unsubscribed()) == 2 })
}

func TestGoneClientIsUnsubscribedAtOnceWithoutRetention(t *testing.T) {
	t.Parallel()
	srv, host := newTestServer(t, Config{ReplayRetention: -1})
	c := dialPipe(t, srv, "root-token")
	c.initialize("gone-now", "test:/notes")
	c.conn.Close()
	waittest.For(t, "the channel to hear the client leave", func() bool { return len(host.unsubscribed()) == 1 })
}

func TestReconnectTakesOverALiveConnection(t *testing.T) {
	t.Parallel()
	srv, host := newTestServer(t, Config{})
	old := dialPipe(t, srv, "root-token")
	old.initialize("twice", "test:/notes")
	host.publish("test:/notes", json.RawMessage(`{"type":"notes/add","text":"one"}`))
	c := dialPipe(t, srv, "root-token")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"reconnect","params":{"clientId":"twice","lastSeenServerSeq":0,"subscriptions":["test:/notes"]}}`)
	m := c.recv()
	var res replayResult
	if err := json.Unmarshal(m.Result, &res); err != nil || res.Type != "replay" || len(res.Actions) != 1 {
		t.Fatalf("reconnect answered %s, want a replay of one action", m.raw)
	}
	// the old connection is closed once it has what was queued.
	var err error
	for err == nil {
		_, err = old.conn.Recv(old.ctx)
	}
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("old connection ended with %v", err)
	}
	host.publish("test:/notes", json.RawMessage(`{"type":"notes/add","text":"two"}`))
	if msgs := c.ping(); len(msgs) != 1 || msgs[0].envelope(t).ServerSeq != 2 {
		t.Fatalf("after the takeover got %d messages", len(msgs))
	}
}

func TestEndedChannelIsMissingOnReconnect(t *testing.T) {
	t.Parallel()
	srv, host := newTestServer(t, Config{})
	c := dialPipe(t, srv, "root-token")
	c.initialize("ended", "test:/notes", "ahp-root://")
	srv.Bus().End("test:/notes")
	host.publish("test:/notes", json.RawMessage(`{"type":"notes/add","text":"unseen"}`))
	if msgs := c.ping(); len(msgs) != 0 {
		t.Fatalf("an ended channel still delivers: %s", msgs[0].raw)
	}
	c.conn.Close()
	c2 := dialPipe(t, srv, "root-token")
	c2.send(`{"jsonrpc":"2.0","id":1,"method":"reconnect","params":{"clientId":"ended","lastSeenServerSeq":0,"subscriptions":["test:/notes","ahp-root://"]}}`)
	m := c2.recv()
	var res replayResult
	if err := json.Unmarshal(m.Result, &res); err != nil || res.Type != "replay" || !slices.Equal(res.Missing, []string{"test:/notes"}) {
		t.Fatalf("reconnect answered %s, want test:/notes missing", m.raw)
	}
	if len(host.unsubscribed()) != 0 {
		t.Fatalf("End called Unsubscribe: %v", host.unsubscribed())
	}
}

func TestNotifySetsEachSubscribersChannel(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	c := dialPipe(t, srv, "root-token")
	c.initialize("notify", "test:/notes", "test:///notes")
	if err := srv.Bus().Notify("test:/notes", "root/sessionAdded", map[string]any{"summary": map[string]any{"resource": "s"}}); err != nil {
		t.Fatal(err)
	}
	msgs := c.ping()
	if len(msgs) != 2 {
		t.Fatalf("got %d notifications, want 2", len(msgs))
	}
	for i, want := range []string{"test:/notes", "test:///notes"} {
		var p map[string]any
		json.Unmarshal(msgs[i].Params, &p)
		if msgs[i].Method != "root/sessionAdded" || p["channel"] != want || p["summary"] == nil {
			t.Fatalf("notification %s, want channel %s", msgs[i].raw, want)
		}
	}
	if srv.Bus().Seq() != 0 {
		t.Fatal("a notification took a serverSeq")
	}
	if err := srv.Bus().Notify("test:/notes", "x", []int{1}); err == nil {
		t.Fatal("Notify with params that are not an object succeeded")
	}
}

func TestPublishRefusesActionThatDoesNotMarshal(t *testing.T) {
	t.Parallel()
	bus := engine.NewBus(nil)
	if _, err := bus.Publish("x", engine.Event{Action: json.RawMessage(`{`)}); err == nil {
		t.Fatal("Publish of invalid JSON succeeded")
	}
	if _, err := bus.Publish("x", engine.Event{Action: func() {}}); err == nil {
		t.Fatal("Publish of a func succeeded")
	}
	if bus.Seq() != 0 {
		t.Fatal("a failed Publish took a serverSeq")
	}
}

func TestFrameOverLimitClosesThePipe(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{ReadLimit: 64})
	c := dialPipe(t, srv, "root-token")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://","pad":"` + strings.Repeat("x", 100) + `"}}`)
	_, err := c.conn.Recv(c.ctx)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("Recv after a large frame: %v, want 1009", err)
	}
}

func TestOpenHostMakesEveryConnectionRoot(t *testing.T) {
	t.Parallel()
	bus := engine.NewBus(nil)
	host := newFakeHost(bus)
	host.open = true
	srv, err := New(Config{Host: host, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := dialPipe(t, srv, "")
	var res struct {
		Meta map[string]any `json:"_meta"`
	}
	json.Unmarshal(c.initialize("open"), &res)
	if res.Meta["ahpd.principal"] != "root" {
		t.Fatalf("principal %v, want root", res.Meta["ahpd.principal"])
	}
}

func TestSchemeOf(t *testing.T) {
	t.Parallel()
	for uri, want := range map[string]string{
		"bot://x": "bot", "BOT://x": "bot", "x-ahpd-bots://": "x-ahpd-bots", "a+b.c-d:x": "a+b.c-d",
		"": "", "nocolon": "", ":x": "", "1abc:x": "", "sp ace:x": "",
	} {
		got, ok := schemeOf(uri)
		if got != want || ok != (want != "") {
			t.Errorf("schemeOf(%q) = %q, %v; want %q", uri, got, ok, want)
		}
	}
}

// closeReason is the reason a close error gives, or the error.
func closeReason(err error) string {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return err.Error()
}
