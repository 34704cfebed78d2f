package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
)

func TestSnapshotHoldsExactlyTheReadableBots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	want := map[string][]string{
		"root":   {"alpha", "beta", "gamma"},
		"alice":  {"alpha"},
		"bob":    {"beta"},
		"getter": {"alpha", "beta", "gamma"},
		"lister": {"alpha", "beta", "gamma"},
		"nobody": {},
	}
	for token, ids := range want {
		snap := e.dial(token).subscribe(URI)
		if snap.Resource != URI {
			t.Errorf("%s: snapshot of %q", token, snap.Resource)
		}
		if got := botIDs(t, snap.State); !slices.Equal(got, ids) {
			t.Errorf("%s: snapshot holds %v, want %v", token, got, ids)
		}
	}
}

func TestSnapshotRecordsAreAsAReadAnswersThem(t *testing.T) {
	t.Parallel()
	b := bot("alpha", "user:alice")
	b.Labels = []string{"ci"}
	b.Instructions = "Review."
	e := newEnv(t, Config{}, b)
	snap := e.dial("alice").subscribe(URI)
	var s struct {
		Bots []json.RawMessage `json:"bots"`
	}
	if err := json.Unmarshal(snap.State, &s); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(b)
	if len(s.Bots) != 1 || string(s.Bots[0]) != string(want) {
		t.Fatalf("snapshot bots %s, want [%s]", snap.State, want)
	}
}

func TestSnapshotSeqIsTheLastCatalogueActionPublished(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	first := e.dial("root")
	if snap := first.subscribe(URI); snap.FromSeq != 0 {
		t.Fatalf("fromSeq %d before any catalogue action, want 0", snap.FromSeq)
	}
	e.src.put(bot("delta", "user:alice"))
	e.src.put(bot("epsilon", "user:carol"))
	e.sync()
	envs := first.pending()
	if len(envs) != 2 {
		t.Fatalf("got %v", describeAll(t, envs))
	}
	last := envs[1].ServerSeq
	// An action on another channel moves serverSeq but not the catalogue.
	if _, err := e.bus.Publish("other:/x", engine.Event{Action: map[string]any{"type": "other/x"}}); err != nil {
		t.Fatal(err)
	}

	c := e.dial("alice")
	snap := c.subscribe(URI)
	if snap.FromSeq != last {
		t.Fatalf("fromSeq %d, want %d (the last catalogue action)", snap.FromSeq, last)
	}
	if got := botIDs(t, snap.State); !slices.Equal(got, []string{"alpha", "delta"}) {
		t.Fatalf("snapshot %v", got)
	}
	e.src.put(bot("zeta", "user:alice"))
	e.sync()
	got := c.pending()
	if len(got) != 1 || got[0].ServerSeq <= snap.FromSeq || describe(t, got[0].Action) != "added zeta" {
		t.Fatalf("after the snapshot got %v", got)
	}
}

// view is a client's copy of the catalogue: a snapshot with the actions
// after it applied strictly, so a wrong added, changed or removed fails.
type view struct {
	t    testing.TB
	seq  int64
	bots map[string]record.Record
}

func newView(t testing.TB, snap snapshot) *view {
	t.Helper()
	var s struct {
		Bots []record.Record `json:"bots"`
	}
	if err := json.Unmarshal(snap.State, &s); err != nil {
		t.Fatal(err)
	}
	v := &view{t: t, seq: snap.FromSeq, bots: map[string]record.Record{}}
	for _, b := range s.Bots {
		v.bots[b.ID] = b
	}
	return v
}

func (v *view) apply(envs []engine.Envelope) {
	v.t.Helper()
	for _, env := range envs {
		if env.ServerSeq <= v.seq {
			v.t.Fatalf("serverSeq %d after %d", env.ServerSeq, v.seq)
		}
		v.seq = env.ServerSeq
		var a struct {
			Type string        `json:"type"`
			Bot  record.Record `json:"bot"`
			ID   string        `json:"id"`
		}
		if err := json.Unmarshal(env.Action, &a); err != nil {
			v.t.Fatal(err)
		}
		_, has := v.bots[a.Bot.ID]
		switch a.Type {
		case ActionAdded:
			if has {
				v.t.Fatalf("added %s, which the client has", a.Bot.ID)
			}
			v.bots[a.Bot.ID] = a.Bot
		case ActionChanged:
			if !has {
				v.t.Fatalf("changed %s, which the client does not have", a.Bot.ID)
			}
			v.bots[a.Bot.ID] = a.Bot
		case ActionRemoved:
			if _, ok := v.bots[a.ID]; !ok {
				v.t.Fatalf("removed %s, which the client does not have", a.ID)
			}
			delete(v.bots, a.ID)
		default:
			v.t.Fatalf("action %s", env.Action)
		}
	}
}

// check compares the view with the bots of src p may read.
func (v *view) check(who string, src *fakeSource, p access.Principal) {
	v.t.Helper()
	all, _ := src.Bots(context.Background())
	want := map[string]record.Record{}
	for _, b := range all {
		if canRead(p, b) {
			want[b.ID] = b
		}
	}
	if len(want) != len(v.bots) {
		v.t.Fatalf("%s has %d bots, want %d", who, len(v.bots), len(want))
	}
	for id, b := range want {
		if got, ok := v.bots[id]; !ok || !got.Equal(b) {
			v.t.Fatalf("%s has %s as %+v, want %+v", who, id, got, b)
		}
	}
}

func TestSubscribeWhileBotsChangeConvergesToTheReadableBots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	owners := []string{"user:alice", "user:carol", "team:backend"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 400 {
			id := fmt.Sprintf("b%d", r.IntN(12))
			if r.IntN(5) == 0 {
				if e.src.get(id).ID != "" {
					e.src.del(id)
				}
				continue
			}
			b := bot(id, owners[r.IntN(len(owners))])
			b.Description = fmt.Sprint(i)
			e.src.put(b)
		}
	}()
	type sub struct {
		who string
		c   *client
		v   *view
	}
	var subs []sub
	for i := range 12 {
		who := []string{"alice", "bob", "root", "nobody"}[i%4]
		c := e.dial(who)
		subs = append(subs, sub{who: who, c: c, v: newView(t, c.subscribe(URI))})
	}
	<-done
	e.sync()
	for _, s := range subs {
		s.v.apply(s.c.pending())
		s.v.check(s.who, e.src, people()[s.who])
	}
}

func TestActionsPerReader(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	clients := map[string]*client{}
	for token := range people() {
		clients[token] = e.dial(token)
		clients[token].subscribe(URI)
	}
	e.src.put(bot("delta", "user:alice")) // a make
	beta := bot("beta", "team:backend")
	beta.Description = "edited"
	e.src.put(beta)      // an edit
	e.src.del("alpha")   // a delete
	e.src.del("missing") // a delete of a bot the catalogue never had
	e.sync()
	all := []string{"added delta", "changed beta", "removed alpha"}
	want := map[string][]string{
		"root":   all,
		"getter": all,
		"lister": all,
		"alice":  {"added delta", "removed alpha"},
		"bob":    {"changed beta"},
		"nobody": {},
	}
	for token, c := range clients {
		if got := describeAll(t, c.pending()); !slices.Equal(got, want[token]) {
			t.Errorf("%s got %v, want %v", token, got, want[token])
		}
	}
}

func TestEditThatMovesABotOutOfOrIntoSightGivesRemovedOrAddedNeverChanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	clients := map[string]*client{}
	for _, token := range []string{"alice", "bob", "getter"} {
		clients[token] = e.dial(token)
		clients[token].subscribe(URI)
	}
	for _, owner := range []string{"user:carol", "team:backend", "user:alice"} {
		e.src.put(bot("alpha", owner))
	}
	e.sync()
	want := map[string][]string{
		"alice":  {"removed alpha", "added alpha"},
		"bob":    {"added alpha", "removed alpha"},
		"getter": {"changed alpha", "changed alpha", "changed alpha"},
	}
	for token, c := range clients {
		if got := describeAll(t, c.pending()); !slices.Equal(got, want[token]) {
			t.Errorf("%s got %v, want %v", token, got, want[token])
		}
	}
}

func TestMembershipChangeSendsTheFlipsToThatSubscriberOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, append(defaultBots(), bot("delta", "team:ops"), bot("eta", "project:shop:web"))...)
	bob, alice, getter := e.dial("bob"), e.dial("alice"), e.dial("getter")
	for _, c := range []*client{bob, alice, getter} {
		c.subscribe(URI)
	}
	e.dir.set(access.Principal{User: "bob", Memberships: []string{"ops", "shop:web"}})
	e.dir.set(access.Principal{User: "alice"}) // unchanged, but named too
	e.cat.MembershipsChanged([]string{"bob", "alice"})
	if got, want := describeAll(t, bob.pending()), []string{"removed beta", "added delta", "added eta"}; !slices.Equal(got, want) {
		t.Errorf("bob got %v, want %v", got, want)
	}
	for name, c := range map[string]*client{"alice": alice, "getter": getter} {
		if got := c.pending(); len(got) != 0 {
			t.Errorf("%s got %v", name, describeAll(t, got))
		}
	}
	// What bob now has keeps to his new memberships.
	d := bot("delta", "team:ops")
	d.Description = "edited"
	e.src.put(d)
	e.src.put(bot("beta", "team:backend"))
	e.sync()
	if got, want := describeAll(t, bob.pending()), []string{"changed delta"}; !slices.Equal(got, want) {
		t.Errorf("after edits bob got %v, want %v", got, want)
	}
}

func TestMembershipChangesRacingEditsNeverSendAWrongAction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, bot("beta", "team:backend"), bot("delta", "team:ops"))
	bob := e.dial("bob")
	v := newView(t, bob.subscribe(URI))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 300 {
			e.src.put(bot("beta", []string{"team:ops", "team:backend", "user:carol"}[i%3]))
			e.src.put(bot(fmt.Sprintf("x%d", i%7), []string{"team:ops", "team:backend"}[i%2]))
		}
	})
	wg.Go(func() {
		for i := range 300 {
			e.dir.set(access.Principal{User: "bob", Memberships: [][]string{{"ops"}, {"backend"}, {}, {"ops", "backend"}}[i%4]})
			e.cat.MembershipsChanged([]string{"bob"})
		}
	})
	for range 20 {
		v.apply(bob.pending())
	}
	wg.Wait()
	e.sync()
	v.apply(bob.pending())
	v.check("bob", e.src, e.dir.principal(&engine.Subscriber{Caller: engine.Caller{Principal: access.Principal{User: "bob"}}}))
}

func TestDispatchToTheCatalogueIsRejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	c := e.dial("root")
	c.subscribe(URI)
	m, before := c.request("dispatchAction", map[string]any{
		"channel": URI, "clientSeq": 1,
		"action": map[string]any{"type": ActionRemoved, "id": "alpha"},
	})
	if m.Error != nil {
		t.Fatalf("dispatchAction answered an error: %+v", m.Error)
	}
	if len(before) != 1 || before[0].Method != "action" {
		t.Fatalf("got %+v, want the rejected action", before)
	}
	var env engine.Envelope
	if err := json.Unmarshal(before[0].Params, &env); err != nil {
		t.Fatal(err)
	}
	if env.RejectionReason != "a client cannot dispatch an action to the channel" {
		t.Fatalf("rejection reason %q", env.RejectionReason)
	}
	d, ok := e.cat.Channel().(engine.Dispatcher)
	if !ok {
		t.Fatal("the catalogue channel is not a Dispatcher")
	}
	if err := d.Dispatch(context.Background(), engine.Dispatch{Channel: URI}); err == nil {
		t.Fatal("Dispatch accepted an action")
	}
	if got := describeAll(t, c.pending()); len(got) != 0 {
		t.Fatalf("after the rejection got %v", got)
	}
}

func TestReaderWithoutGrantsIsLetInEmptyAndHearsWhatBecomesReadable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	c := e.dial("nobody")
	if got := botIDs(t, c.subscribe(URI).State); len(got) != 0 {
		t.Fatalf("snapshot %v, want none", got)
	}
	e.src.put(bot("gamma", "user:nobody")) // an edit gives it to nobody
	e.src.put(bot("omega", "user:nobody")) // a make for nobody
	e.src.put(bot("psi", "user:carol"))    // not nobody's
	e.sync()
	if got, want := describeAll(t, c.pending()), []string{"added gamma", "added omega"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestUnsubscribeForgetsTheSubscriber(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	c := e.dial("alice")
	c.subscribe(URI)
	readers := func() int {
		e.cat.smu.Lock()
		defer e.cat.smu.Unlock()
		return len(e.cat.readers)
	}
	if n := readers(); n != 1 {
		t.Fatalf("%d readers after subscribe", n)
	}
	c.call("unsubscribe", map[string]any{"channel": URI})
	if n := readers(); n != 0 {
		t.Fatalf("%d readers after unsubscribe", n)
	}
}

func TestSubscriberThatLeftBeforeItsSnapshotIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	ch := e.cat.Channel()
	sub := &engine.Subscriber{ID: 1, URI: URI, Caller: engine.Caller{Principal: access.RootPrincipal()}}
	ch.(engine.Unsubscriber).Unsubscribe(sub)
	_, err := ch.Subscribe(context.Background(), sub)
	if errcode.Of(err) != errcode.NotFound {
		t.Fatalf("Subscribe after Unsubscribe: %v", err)
	}
	if len(e.cat.readers) != 0 || len(e.cat.early) != 0 {
		t.Fatalf("kept %d readers, %d marks", len(e.cat.readers), len(e.cat.early))
	}
}

func TestInfoAdvertisesTheChannel(t *testing.T) {
	t.Parallel()
	info := Info()
	for k, v := range map[string]string{"scheme": "x-ahpd-bots", "title": "Bots", "grant": "bot:read"} {
		if info[k] != v {
			t.Errorf("%s = %v, want %q", k, info[k], v)
		}
	}
	if s, _ := info["description"].(string); s == "" {
		t.Error("no description")
	}
	if !strings.HasPrefix(URI, info["scheme"].(string)+"://") {
		t.Errorf("URI %q is not of the scheme", URI)
	}
}

func TestNewMissesNoChangeMadeWhileListing(t *testing.T) {
	t.Parallel()
	src := newFakeSource(defaultBots()...)
	listed := false
	src.onBots = func() {
		if listed {
			return
		}
		listed = true
		// The changes land in the feed, and the listing may or may not
		// hold them: here it is taken after, so it does.
		src.put(bot("late", "user:alice"))
		src.del("gamma")
	}
	bus := engine.NewBus(nil)
	cat, err := New(context.Background(), Config{Source: src, Bus: bus, CanRead: canRead})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	<-cat.ready // the listing is made in the background; later comes after it
	src.put(bot("later", "user:alice"))
	waittest.For(t, "the feed to be taken", func() bool {
		cat.mu.Lock()
		defer cat.mu.Unlock()
		return cat.applied >= src.sentCount()
	})
	cat.mu.Lock()
	order := slices.Clone(cat.orderedLocked())
	cat.mu.Unlock()
	if got, want := order, []string{"alpha", "beta", "late", "later"}; !slices.Equal(got, want) {
		t.Fatalf("bots %v, want %v", got, want)
	}
	if cat.catSeq != bus.Seq() || bus.Seq() != 1 {
		t.Fatalf("catalogue seq %d, bus %d: want one action, for later", cat.catSeq, bus.Seq())
	}
}

func TestCloseStopsFollowingAndRefusesNewSubscribers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	if err := e.cat.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.Close(); err != nil {
		t.Fatal(err)
	}
	waittest.For(t, "the feed to be released", func() bool {
		e.src.mu.Lock()
		defer e.src.mu.Unlock()
		return len(e.src.feeds) == 0
	})
	sub := &engine.Subscriber{ID: 1, URI: URI, Caller: engine.Caller{Principal: access.RootPrincipal()}}
	if _, err := e.cat.Channel().Subscribe(context.Background(), sub); errcode.Of(err) != errcode.Unavailable {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	if _, err := e.cat.CreateWatch(context.Background(), access.RootPrincipal(), "bot://"); errcode.Of(err) != errcode.Unavailable {
		t.Fatalf("CreateWatch after Close: %v", err)
	}
}

func TestSlowClientDoesNotHoldUpTheCatalogue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	slow := e.dial("root")
	slow.subscribe(URI) // and never reads again
	fast := e.dial("alice")
	fast.subscribe(URI)
	for i := range 500 {
		b := bot("alpha", "user:alice")
		b.Description = fmt.Sprint(i)
		e.src.put(b)
	}
	e.sync()
	if n := len(fast.pending()); n != 500 {
		t.Fatalf("the reading client got %d actions, want 500", n)
	}
}

func TestNewRequiresSourceBusAndCanRead(t *testing.T) {
	t.Parallel()
	ok := Config{Source: newFakeSource(), Bus: engine.NewBus(nil), CanRead: canRead}
	for name, mod := range map[string]func(*Config){
		"no source":     func(c *Config) { c.Source = nil },
		"no bus":        func(c *Config) { c.Bus = nil },
		"no canRead":    func(c *Config) { c.CanRead = nil },
		"negative idle": func(c *Config) { c.WatchIdle = -1 },
	} {
		cfg := ok
		mod(&cfg)
		if c, err := New(context.Background(), cfg); err == nil {
			c.Close()
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestASubscribeWhileTheFirstListingIsMadeWaitsForEveryBot(t *testing.T) {
	t.Parallel()
	src := newFakeSource(defaultBots()...)
	release := make(chan struct{})
	src.onBots = func() { <-release }
	cat, err := New(context.Background(), Config{Source: src, Bus: engine.NewBus(nil), CanRead: canRead})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	got := make(chan engine.Snapshot, 1)
	go func() {
		snap, err := cat.Channel().Subscribe(context.Background(), &engine.Subscriber{ID: 1, URI: URI, Caller: engine.Caller{Principal: access.RootPrincipal()}})
		if err != nil {
			t.Error(err)
		}
		got <- snap
	}()
	close(release)
	snap := <-got
	if n := len(snap.State.(State).Bots); n != len(defaultBots()) {
		t.Fatalf("the snapshot holds %d bots, want %d", n, len(defaultBots()))
	}
}

func TestASubscribeAfterTheFirstListingFailedIsUnavailableSayingWhy(t *testing.T) {
	t.Parallel()
	cat, err := New(context.Background(), Config{Source: failingSource{}, Bus: engine.NewBus(nil), CanRead: canRead})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	_, err = cat.Channel().Subscribe(context.Background(), &engine.Subscriber{ID: 1, URI: URI, Caller: engine.Caller{Principal: access.RootPrincipal()}})
	if errcode.Of(err) != errcode.Unavailable || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("subscribe: %v, want Unavailable naming the listing's error", err)
	}
}

// failingSource watches but cannot list.
type failingSource struct{}

func (failingSource) Bots(context.Context) ([]record.Record, error) {
	return nil, errors.New("disk on fire")
}

func (failingSource) Watch(ctx context.Context) (<-chan record.Change, error) {
	ch := make(chan record.Change)
	context.AfterFunc(ctx, func() { close(ch) })
	return ch, nil
}
