package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// closedWithin waits up to d for the server to close c and returns how it
// closed it.
func closedWithin(t *testing.T, c *client, name string, d time.Duration) websocket.CloseError {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-c.ended:
	case <-timer.C:
		t.Fatalf("%s: the connection was still open after %v", name, d)
	}
	c.mu.Lock()
	err := c.readErr
	c.mu.Unlock()
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: the connection ended with %v, want a close frame", name, err)
	}
	return ce
}

func TestEndToEndUsersFileChangeClosesConnectionsWhoseTokenNoLongerHolds(t *testing.T) {
	// Serial: it holds the server to a second, which the tests beside it would slow.
	ctx := testCtx(t)
	g := newGroup(ctx, t)
	kim := g.connect(t, kimToken, "kim")    // taken out of the file
	soft := g.connect(t, softToken, "soft") // given a new token
	nemo := g.connect(t, nemoToken, "nemo") // made a member of backend: stays
	root := g.connect(t, rootToken, "root")
	soft.makeBot(t, "teams", `{"name":"Team's","owner":"team:backend"}`)
	for _, c := range []*client{kim, soft, nemo} {
		c.subscribeCatalogue(t)
	}

	const newSoftToken = "soft-token-0123456789-2"
	changed := time.Now()
	writeAtomic(t, g.dirs.users, `{"root":{"token":"`+rootToken+`"},"users":[
		{"id":"soft","token":"`+newSoftToken+`","grants":["bot:put","session:create"],"memberships":[]},
		{"id":"nemo","token":"`+nemoToken+`","grants":[],"memberships":["backend"]}]}`)

	for name, c := range map[string]*client{"kim": kim, "soft": soft} {
		ce := closedWithin(t, c, name, time.Second)
		if ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "token") {
			t.Errorf("%s: closed with %d %q, want 1008 and a reason about the token", name, ce.Code, ce.Reason)
		}
	}
	if d := time.Since(changed); d > time.Second {
		t.Errorf("the revoked connections closed %v after the users file changed, want within one second", d)
	}

	t.Run("a membership change keeps the connection and applies at once", func(t *testing.T) {
		nemo.waitFor(t, "bots: added teams")
		wantList(t, "nemo lists", nemo.list(t), []string{"teams"})
		root.result(t, "ping", map[string]any{"channel": "ahp-root://"}, nil)
	})
	t.Run("the old tokens are refused, the new one is served", func(t *testing.T) {
		for _, tok := range []string{kimToken, softToken} {
			c, resp, err := dialErr(ctx, g.srv, tok, byQuery)
			if err == nil {
				c.close()
				t.Fatalf("token %s: the upgrade succeeded", tok)
			}
			if resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("token %s: %v, response %v; want 401", tok, err, resp)
			}
		}
		c := dial(ctx, t, g.srv, newSoftToken, byQuery)
		c.initialize(t, "soft")
		wantList(t, "soft lists", c.list(t), []string{})
	})
}

func TestEndToEndTextFrameWithInvalidUTF8IsClosedWith1007(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	srv := startServer(t, newDirs(t).args())
	c := dial(ctx, t, srv, rootToken, byQuery)
	c.initialize(t, "bad-utf8")
	frame := []byte(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"channel":"ahp-root://","x":"` + "\xff\xfe" + `"}}`)
	if err := c.ws.Write(ctx, websocket.MessageText, frame); err != nil {
		t.Fatal(err)
	}
	ce := closedWithin(t, c, "the client", 10*time.Second)
	if ce.Code != websocket.StatusInvalidFramePayloadData || !strings.Contains(ce.Reason, "UTF-8") {
		t.Errorf("closed with %d %q, want 1007 naming UTF-8", ce.Code, ce.Reason)
	}
}

// catalogue subscribes to x-ahpd-bots:// afresh and returns its bots by
// id.
func (c *client) catalogue(t *testing.T) map[string]map[string]any {
	t.Helper()
	snap := c.subscribe(t, "x-ahpd-bots://", "bots")
	var st struct {
		Bots []map[string]any `json:"bots"`
	}
	if err := json.Unmarshal(snap.State, &st); err != nil {
		t.Fatalf("catalogue snapshot %s: %v", snap.State, err)
	}
	out := map[string]map[string]any{}
	for _, b := range st.Bots {
		out[b["id"].(string)] = b
	}
	return out
}

func TestEndToEndASubscribeAfterAnAcknowledgedWriteSeesIt(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	srv := startServer(t, newDirs(t).args())
	c := dial(ctx, t, srv, rootToken, byQuery)
	c.initialize(t, "ryw")
	for i := range 60 {
		slug := fmt.Sprintf("ryw-%d", i)
		c.makeBot(t, slug, `{"name":"R"}`)
		if _, ok := c.catalogue(t)[slug]; !ok {
			t.Fatalf("iteration %d: the catalogue after the make lacks %s", i, slug)
		}
		desc := fmt.Sprintf("edited %d", i)
		c.editBot(t, slug, `{"description":"`+desc+`"}`, "")
		if got := c.catalogue(t)[slug]["description"]; got != desc {
			t.Fatalf("iteration %d: the catalogue after the edit has description %v, want %q", i, got, desc)
		}
		c.deleteBot(t, slug)
		if _, ok := c.catalogue(t)[slug]; ok {
			t.Fatalf("iteration %d: the catalogue after the delete still has %s", i, slug)
		}
	}
}
