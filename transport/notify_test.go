package transport

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/bots/engine"
)

func TestNotifyForSendsOnlyToTheSubscribersItNames(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	root := dialPipe(t, srv, "root-token")
	root.initialize("root", "test:/notes")
	soft := dialPipe(t, srv, "soft-token")
	soft.initialize("soft", "test:/notes")
	bob := dialPipe(t, srv, "bob-token")
	bob.initialize("bob", "test:/notes")
	var asked []string
	to := func(sub *engine.Subscriber) bool {
		asked = append(asked, sub.Principal.String())
		return sub.Principal.Root || sub.Principal.User == "soft"
	}
	if err := srv.Bus().NotifyFor("test:/notes", "root/sessionAdded", map[string]any{"summary": map[string]any{"resource": "s"}}, to); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		client *pipeClient
		want   int
	}{{"root", root, 1}, {"soft", soft, 1}, {"bob", bob, 0}} {
		msgs := c.client.ping()
		if len(msgs) != c.want {
			t.Fatalf("%s got %d notifications, want %d", c.name, len(msgs), c.want)
		}
		for _, m := range msgs {
			var p map[string]any
			json.Unmarshal(m.Params, &p)
			if m.Method != "root/sessionAdded" || p["channel"] != "test:/notes" {
				t.Fatalf("%s got %s", c.name, m.raw)
			}
		}
	}
	if len(asked) != 3 {
		t.Fatalf("the filter was asked %d times (%v), want once per subscriber", len(asked), asked)
	}
	if err := srv.Bus().NotifyFor("test:/notes", "x", "not an object", to); err == nil {
		t.Fatal("NotifyFor with params that are not an object succeeded")
	}
	// nil sends to every subscriber, as Notify does.
	if err := srv.Bus().NotifyFor("test:/notes", "root/sessionRemoved", map[string]any{"session": "s"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*pipeClient{root, soft, bob} {
		if msgs := c.ping(); len(msgs) != 1 {
			t.Fatalf("a notification for all reached a subscriber %d times", len(msgs))
		}
	}
}
