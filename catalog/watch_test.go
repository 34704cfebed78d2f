package catalog

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/transport"
)

// createWatch creates a watch on uri and returns its channel.
func (c *client) createWatch(uri string) string {
	c.t.Helper()
	var res ahp.CreateResourceWatchResult
	raw := c.call(ahp.MethodCreateResourceWatch, map[string]any{"channel": "ahp-root://", "uri": uri})
	if err := json.Unmarshal(raw, &res); err != nil {
		c.t.Fatal(err)
	}
	if !strings.HasPrefix(res.Channel, "ahp-resource-watch:/") {
		c.t.Fatalf("watch channel %q", res.Channel)
	}
	return res.Channel
}

func (c *client) createWatchErr(uri string) int {
	c.t.Helper()
	return c.callErr(ahp.MethodCreateResourceWatch, map[string]any{"channel": "ahp-root://", "uri": uri})
}

func TestWatchOnEveryBotIsOpenToAnybody(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	for token := range people() {
		c := e.dial(token)
		ch := c.createWatch("bot://")
		snap := c.subscribe(ch)
		var st ahp.ResourceWatchState
		if err := json.Unmarshal(snap.State, &st); err != nil {
			t.Fatal(err)
		}
		if snap.Resource != ch || st.Root != "bot://" {
			t.Errorf("%s: snapshot %s of %s", token, snap.State, snap.Resource)
		}
	}
}

func TestWatchOnOneBotIsOpenToItsReadersOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	for token, want := range map[string]int{"alice": 0, "getter": 0, "lister": 0, "root": 0, "bob": transport.CodePermissionDenied, "nobody": transport.CodePermissionDenied} {
		c := e.dial(token)
		if want == 0 {
			ch := c.createWatch("bot://alpha")
			if ch == c.createWatch("bot://alpha/") {
				t.Errorf("%s: two watches share a channel", token)
			}
			continue
		}
		if got := c.createWatchErr("bot://alpha"); got != want {
			t.Errorf("%s: error %d, want %d", token, got, want)
		}
	}
}

func TestWatchOnAMissingBotIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	for _, token := range []string{"root", "nobody"} {
		if got := e.dial(token).createWatchErr("bot://missing"); got != transport.CodeNotFound {
			t.Errorf("%s: error %d, want %d", token, got, transport.CodeNotFound)
		}
	}
}

func TestWatchOnAnythingElseIsInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	if got := e.dial("root").createWatchErr("bot://Not_A_Slug"); got != transport.CodeInvalidParams {
		t.Errorf("error %d, want %d", got, transport.CodeInvalidParams)
	}
	for _, uri := range []string{"", "bot:", "bot:/alpha", "file:///etc", "bots://alpha", "bot://alpha/beta", "bot://-x"} {
		if _, err := e.cat.CreateWatch(context.Background(), access.RootPrincipal(), uri); errcode.Of(err) != errcode.Invalid {
			t.Errorf("%q: %v, want invalid", uri, err)
		}
	}
}

func TestWatchHearsAddedUpdatedDeletedOnePerAction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	c := e.dial("root")
	snap := c.subscribe(c.createWatch("bot://"))
	e.src.put(bot("delta", "user:alice"))
	d := bot("delta", "user:alice")
	d.Color = "red"
	e.src.put(d)
	e.src.del("delta")
	e.sync()
	envs := c.pending()
	want := []string{"added bot://delta", "updated bot://delta", "deleted bot://delta"}
	if got := describeAll(t, envs); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, env := range envs {
		if env.ServerSeq <= snap.FromSeq {
			t.Errorf("serverSeq %d at or below the snapshot's %d", env.ServerSeq, snap.FromSeq)
		}
		var a ahp.ResourceWatchChangedAction
		if err := json.Unmarshal(env.Action, &a); err != nil || len(a.Changes.Items) != 1 {
			t.Errorf("action %s holds other than one change", env.Action)
		}
	}
}

func TestWatchIsFilteredPerWatcher(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	ch := e.dial("root").createWatch("bot://")
	clients := map[string]*client{}
	for _, token := range []string{"alice", "bob", "getter", "nobody"} {
		clients[token] = e.dial(token)
		clients[token].subscribe(ch)
	}
	a := bot("alpha", "user:alice")
	a.Color = "red"
	e.src.put(a)
	b := bot("beta", "team:backend")
	b.Color = "red"
	e.src.put(b)
	e.src.del("alpha") // heard by whoever could read its last revision
	e.src.put(bot("gamma", "user:nobody"))
	e.sync()
	want := map[string][]string{
		"alice":  {"updated bot://alpha", "deleted bot://alpha"},
		"bob":    {"updated bot://beta"},
		"getter": {"updated bot://alpha", "updated bot://beta", "deleted bot://alpha", "updated bot://gamma"},
		"nobody": {"updated bot://gamma"},
	}
	for token, c := range clients {
		if got := describeAll(t, c.pending()); !slices.Equal(got, want[token]) {
			t.Errorf("%s got %v, want %v", token, got, want[token])
		}
	}
}

func TestWatchOnOneBotHearsOnlyThatBot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	c := e.dial("getter")
	c.subscribe(c.createWatch("bot://beta"))
	e.src.put(bot("alpha", "user:carol"))
	e.src.put(bot("beta", "user:carol"))
	e.src.put(bot("delta", "user:carol"))
	e.src.del("gamma")
	e.src.del("beta")
	e.sync()
	if got, want := describeAll(t, c.pending()), []string{"updated bot://beta", "deleted bot://beta"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestWatcherIsJudgedByWhoItWasWhenItSubscribed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, append(defaultBots(), bot("delta", "team:ops"))...)
	c := e.dial("bob")
	ch := c.createWatch("bot://")
	c.subscribe(ch)
	e.dir.set(access.Principal{User: "bob", Memberships: []string{"ops"}})
	e.cat.MembershipsChanged([]string{"bob"})
	touch := func(id, owner string) {
		b := bot(id, owner)
		b.Description = time.Now().String()
		e.src.put(b)
	}
	touch("beta", "team:backend")
	touch("delta", "team:ops")
	e.sync()
	if got, want := describeAll(t, c.pending()), []string{"updated bot://beta"}; !slices.Equal(got, want) {
		t.Fatalf("before attaching again got %v, want %v", got, want)
	}
	c.call("unsubscribe", map[string]any{"channel": ch})
	c.subscribe(ch)
	touch("beta", "team:backend")
	touch("delta", "team:ops")
	e.sync()
	if got, want := describeAll(t, c.pending()), []string{"updated bot://delta"}; !slices.Equal(got, want) {
		t.Fatalf("after attaching again got %v, want %v", got, want)
	}
}

func TestSubscribeToAnUnknownWatchIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	if got := e.dial("root").callErr("subscribe", map[string]any{"channel": "ahp-resource-watch:/nope"}); got != transport.CodeNotFound {
		t.Fatalf("error %d, want %d", got, transport.CodeNotFound)
	}
	if _, ok := e.cat.WatchChannel("ahp-resource-watch:/nope"); ok {
		t.Fatal("WatchChannel found a watch never made")
	}
}

func TestWatchWithNoSubscribersIsForgottenAfterAWhile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{WatchIdle: 20 * time.Millisecond}, defaultBots()...)
	c := e.dial("root")
	kept := c.createWatch("bot://")
	c.subscribe(kept)
	left := c.createWatch("bot://alpha")
	c.subscribe(left)
	c.call("unsubscribe", map[string]any{"channel": left})
	never := c.createWatch("bot://beta")
	waittest.For(t, "idle watches to be forgotten", func() bool {
		_, ok1 := e.cat.WatchChannel(left)
		_, ok2 := e.cat.WatchChannel(never)
		return !ok1 && !ok2
	})
	if _, ok := e.cat.WatchChannel(kept); !ok {
		t.Fatal("a watch with a subscriber was forgotten")
	}
	if got := c.callErr("subscribe", map[string]any{"channel": left}); got != transport.CodeNotFound {
		t.Fatalf("subscribe to a forgotten watch: error %d", got)
	}
	e.src.put(bot("alpha", "user:carol"))
	e.sync()
	if got, want := describeAll(t, c.pending()), []string{"updated bot://alpha"}; !slices.Equal(got, want) {
		t.Fatalf("the kept watch got %v, want %v", got, want)
	}
}

func TestDeleteWithoutItsLastRevisionIsJudgedByTheOneTheCatalogueHad(t *testing.T) {
	t.Parallel()
	// A delete is judged by the last revision the change carries, or the
	// one the catalogue had when the change carries none.
	e := newEnv(t, Config{}, defaultBots()...)
	c := e.dial("alice")
	c.subscribe(c.createWatch("bot://alpha"))
	e.src.mu.Lock()
	delete(e.src.bots, "alpha")
	e.src.sendLocked(record.Change{Kind: record.Deleted, ID: "alpha"})
	e.src.mu.Unlock()
	e.sync()
	if got, want := describeAll(t, c.pending()), []string{"deleted bot://alpha"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestWatchOnABotTheCatalogueHasNotHeardOfYetIsMade(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{}, defaultBots()...)
	e.src.mu.Lock()
	e.src.bots["fresh"] = bot("fresh", "user:alice") // made, its change not yet sent
	e.src.mu.Unlock()
	e.dial("alice").createWatch("bot://fresh")
	if got := e.dial("bob").createWatchErr("bot://fresh"); got != transport.CodePermissionDenied {
		t.Fatalf("bob: error %d, want %d", got, transport.CodePermissionDenied)
	}
}
