package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestEndToEndConnectorPermissionMatrix drives the built server with a
// users file: soft (member of backend) owns motion; tess is a member of
// backend who may read it, rita a reader with no team, and sam a stranger
// who may read no bot. Every person who can chat with motion has its agent
// call every connector; a call reaches the far end only when the vault
// entry's owners hold both soft and the person, and a refusal names the
// alias and never the value. A bot root owns lends rita an entry only
// when it names her and root:<host>: root passes over no entry's owners.
// The stranger cannot open a chat with motion at all.
func TestEndToEndConnectorPermissionMatrix(t *testing.T) {
	t.Parallel()
	const secret = "tok-matrix-5e6f7a8b9c0d1e2f"
	var (
		mu      sync.Mutex
		reached = map[string]int{}
	)
	far := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached[strings.TrimPrefix(r.URL.Path, "/")]++
		mu.Unlock()
		w.Write([]byte(`{"ok":"yes"}`))
	}))
	defer far.Close()
	owners := map[string][]string{
		"mine": {"user:soft"}, "team": {"team:backend"}, "all": {"*"}, "none": nil, "readers": {"user:rita"},
		"lent": {"user:rita", "root:chathost"},
	}
	entries := map[string]any{}
	connectors := map[string]string{}
	for alias, o := range owners {
		e := map[string]any{"value": secret, "url": far.URL + "/" + alias}
		if o != nil {
			e["owners"] = o
		}
		entries["http/"+alias] = e
		connectors[alias] = "connectors://http/" + alias
	}
	base := t.TempDir()
	vault := filepath.Join(base, "vault.json")
	users := filepath.Join(base, "users.json")
	data, _ := json.Marshal(map[string]any{"connectors": entries})
	if err := os.WriteFile(vault, data, 0o600); err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(map[string]any{"root": map[string]string{"token": "root-token-0123456789"}, "users": []map[string]any{
		{"id": "soft", "token": "soft-token-0123456789", "grants": []string{"bot:put", "session:create"}, "memberships": []string{"backend"}},
		{"id": "tess", "token": "tess-token-0123456789", "grants": []string{"bot:get", "session:create"}, "memberships": []string{"backend"}},
		{"id": "rita", "token": "rita-token-0123456789", "grants": []string{"bot:get", "session:create"}},
		{"id": "sam", "token": "sam-token-0123456789", "grants": []string{"session:create"}},
	}})
	if err := os.WriteFile(users, data, 0o600); err != nil {
		t.Fatal(err)
	}
	setup := newACPSetup(t, "-vault", vault, "-users", users)
	srv := setup.start(t)
	body, _ := json.Marshal(map[string]any{"name": "Motion", "provider": "fake", "connectors": connectors})
	dialChat(t, srv.addr+"/?tkn=soft-token-0123456789", "soft-maker").makeBot("motion", string(body))
	body, _ = json.Marshal(map[string]any{"name": "House", "provider": "fake", "connectors": connectors})
	dialChat(t, srv.addr+"/?tkn=root-token-0123456789", "root-maker").makeBot("house", string(body))

	rows := []struct {
		person, bot string
		allowed     []string
	}{
		{"soft", "motion", []string{"mine", "team", "all"}},
		{"tess", "motion", []string{"team", "all"}},
		{"rita", "motion", []string{"all"}},
		{"rita", "house", []string{"all", "lent"}},
	}
	turn := 0
	for _, row := range rows {
		c := dialChat(t, srv.addr+"/?tkn="+row.person+"-token-0123456789", row.person)
		chat := c.openChat("ahp-session:/"+row.person+"-"+row.bot, row.bot)
		for alias := range owners {
			want := strings.Contains(" "+strings.Join(row.allowed, " ")+" ", " "+alias+" ")
			mu.Lock()
			before := reached[alias]
			mu.Unlock()
			turn++
			said := say(t, c, chat, fmt.Sprint("t", turn), "tool "+alias+" {}")
			mu.Lock()
			got := reached[alias] > before
			mu.Unlock()
			text := strings.Join(said, "\n")
			switch {
			case want && (!got || !strings.HasPrefix(text, "tool: ")):
				t.Errorf("%s on %s, %s: %q (reached the far end: %v); want allowed", row.person, row.bot, alias, text, got)
			case !want && (got || !strings.HasPrefix(text, "tool failed:") || !strings.Contains(text, `connector "`+alias+`" may`)):
				t.Errorf("%s on %s, %s: %q (reached the far end: %v); want refused, naming the alias", row.person, row.bot, alias, text, got)
			}
			if strings.Contains(text, secret) {
				t.Errorf("%s on %s, %s: the answer holds the value", row.person, row.bot, alias)
			}
		}
	}
	sam := dialChat(t, srv.addr+"/?tkn=sam-token-0123456789", "sam")
	if err := sam.call("createSession", map[string]any{"channel": "ahp-session:/sam", "provider": "bot-chat", "config": map[string]any{"bot": "motion"}}, nil, nil); err == nil {
		t.Error("a stranger opened a chat with a bot they may not read")
	}
	srv.stop(t)
}
