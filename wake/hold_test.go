package wake_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/memchatlog"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/memlease"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/internal/maintest"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/wake/memrows"
)

// instance is one of several Wakers, each on a local.Host of its own,
// sharing logs, rows and leases as instances on one database do.
func instance(t *testing.T, name string, logs chatlog.Logs, rows wake.Rows, leases lease.Leases) *wake.Waker {
	t.Helper()
	h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}}, Logs: logs, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	w, err := wake.New(wake.Config{Host: h, Rows: rows, DefaultAgent: echo.Provider, Leases: leases, Holder: name,
		LeaseTTL: 5 * time.Second, LeasePoll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestMessagesToOneNameOnTwoInstancesGoToOneBackSessionAndAllAreAnswered(t *testing.T) {
	t.Parallel()
	logs, rows, leases := &memchatlog.Logs{}, &memrows.Rows{}, &memlease.Leases{}
	ws := []*wake.Waker{instance(t, "a", logs, rows, leases), instance(t, "b", logs, rows, leases)}
	e := newEnv(t, nil) // for its bot and folder
	const n = 20
	mains := make([]*maintest.Main, n)
	turns := make([]*wake.Turn, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id, text := fmt.Sprintf("turn-%d", i), fmt.Sprintf("m-%d", i)
			mains[i] = maintest.New(id, text)
			turns[i] = ws[i%2].Wake(wake.Message{Bot: e.bot, Person: "user:soft", Session: fmt.Sprintf("ahp-session:/main-%d", i),
				Chat: fmt.Sprintf("ahp-chat://main-%d", i), TurnID: id, Text: text, StartedAt: time.Now()}, mains[i])
		})
	}
	wg.Wait()
	sessions := map[string]bool{}
	for i := range n {
		turn := mains[i].Ended(t)
		if want := []string{fmt.Sprintf("Motion heard: m-%d", i)}; turn.State != ahp.TurnStateComplete || !slices.Equal(texts(turn), want) {
			t.Errorf("message %d: the main turn ended %s: %s", i, turn.State, maintest.JSON(turn))
		}
		sessions[turns[i].Session()] = true
	}
	if len(sessions) != 1 {
		t.Errorf("the messages went to %d back sessions, want 1", len(sessions))
	}
	keys, err := logs.List(ctx(t), chatlog.Back)
	if err != nil || len(keys) != 1 {
		t.Fatalf("the shared logs hold %d back-session logs, %v; want 1", len(keys), err)
	}
}

func TestAWakerWithLeasesNeedsAHolder(t *testing.T) {
	t.Parallel()
	if _, err := wake.New(wake.Config{Host: newEnv(t, nil).host, Rows: &memrows.Rows{}, Leases: &memlease.Leases{}}); err == nil {
		t.Fatal("a Waker with Leases and no Holder was made")
	}
}

func TestAWakerThatClosesLetsGoOfItsLeaseSoAnotherTakesTheSessionOverAtOnce(t *testing.T) {
	t.Parallel()
	logs, rows, leases := &memchatlog.Logs{}, &memrows.Rows{}, &memlease.Leases{}
	e := newEnv(t, nil)
	wakeOn := func(h *local.Host, name string) *wake.Waker {
		w, err := wake.New(wake.Config{Host: h, Rows: rows, DefaultAgent: echo.Provider, Leases: leases, Holder: name,
			LeaseTTL: time.Hour, LeasePoll: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return w
	}
	host := func() *local.Host {
		h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}}, Logs: logs, Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	ha := host()
	a := wakeOn(ha, "a")
	msg := func(i int, text string) (*maintest.Main, wake.Message) {
		id := fmt.Sprintf("turn-%d", i)
		return maintest.New(id, text), wake.Message{Bot: e.bot, Person: "user:soft", Session: fmt.Sprintf("ahp-session:/main-%d", i),
			Chat: fmt.Sprintf("ahp-chat://main-%d", i), TurnID: id, Text: text, StartedAt: time.Now()}
	}
	m1, msg1 := msg(1, "sleep 30")
	t1 := a.Wake(msg1, m1)
	m1.Wait(t, "the back session", func(c ahp.ChatState, _ ahp.SessionState) bool { return t1.Session() != "" })
	// The instance goes away mid-turn, its lease an hour from expiring.
	a.Close()
	ha.Close()
	b := wakeOn(host(), "b")
	m2, msg2 := msg(2, "hello")
	t2 := b.Wake(msg2, m2)
	turn := m2.Ended(t)
	if turn.State != ahp.TurnStateComplete || !slices.Equal(texts(turn), []string{"Motion heard: hello"}) {
		t.Fatalf("the other instance's turn ended %s: %s", turn.State, maintest.JSON(turn))
	}
	if t2.Session() != t1.Session() {
		t.Errorf("the other instance used %s, want the same back session %s", t2.Session(), t1.Session())
	}
}
