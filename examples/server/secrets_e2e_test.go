package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/acp/acpfake"
)

// TestEndToEndCredentialAnAgentHandsBackLeavesItNowhere: an agent that
// knows a connector's credential (the operator passed it to the agent's
// environment) uses the connector, then hands the credential back every
// way it can: post_message, a reply streamed in two pieces that split it,
// and a question. The main chat shows "[redacted]" each time, and after the
// server stops the value is in no file under the config and root folders,
// no log line, and no WebSocket frame.
func TestEndToEndCredentialAnAgentHandsBackLeavesItNowhere(t *testing.T) {
	t.Parallel()
	raw := make([]byte, 16)
	rand.Read(raw)
	secret := "tok-post-" + hex.EncodeToString(raw)
	var (
		mu    sync.Mutex
		calls []string
	)
	far := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":"yes"}`))
	}))
	defer far.Close()
	vault := filepath.Join(t.TempDir(), "vault.json")
	entry, _ := json.Marshal(map[string]any{"connectors": map[string]any{"http/crm": map[string]any{
		"value": secret, "header": "X-Api-Key", "url": far.URL, "owners": []string{"*"},
	}}})
	if err := os.WriteFile(vault, entry, 0o600); err != nil {
		t.Fatal(err)
	}
	setup := newACPSetup(t, "-vault", vault)
	setup.environ = []string{"CRM_KEY=" + secret}
	agents, _ := json.Marshal(map[string]any{"agents": map[string]any{"fake": map[string]any{
		"command": os.Args[0], "args": []string{"-test.run=^$"}, "env": []string{acpfake.Env, "CRM_KEY"},
	}}})
	if err := os.WriteFile(setup.agents, agents, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "leak")
	c.makeBot("motion", `{"name": "Motion", "provider": "fake", "connectors": {"crm": "connectors://http/crm"}}`)
	chat := c.openChat("ahp-session:/leak", "motion")

	if said := say(t, c, chat, "t1", `tool crm {"q": "accounts"}`); len(said) != 1 || !strings.Contains(said[0], `"ok":"yes"`) {
		t.Fatalf("the connector call says %q", said)
	}
	mu.Lock()
	if len(calls) != 1 || calls[0] != secret {
		t.Fatalf("the far end got %d calls; want one carrying the credential", len(calls))
	}
	mu.Unlock()
	if said := say(t, c, chat, "t2", "expand post the key is $CRM_KEY"); !slices.Equal(said, []string{"the key is [redacted]"}) {
		t.Errorf("post_message of the credential shows %q in the main chat", said)
	}
	if said := say(t, c, chat, "t3", "expand say key $CRM_KEY end"); !slices.Equal(said, []string{"key [redacted] end"}) {
		t.Errorf("a reply streaming the credential in two pieces shows %q in the main chat", said)
	}
	c.dispatch(chat, ahp.TurnStarted("t4", time.Now(), ahp.UserMessage("expand ask is $CRM_KEY yours?")))
	st := c.waitChat(chat, "the question", func(s ahp.ChatState) bool {
		return slices.ContainsFunc(active(s), func(p ahp.ResponsePart) bool { return p.InputRequest != nil })
	})
	for _, p := range active(st) {
		if p.InputRequest == nil {
			continue
		}
		if q := p.InputRequest.Request.Questions; len(q) != 1 || q[0].Message != "is [redacted] yours?" {
			t.Errorf("the question shows %+v", q)
		}
		c.dispatch(chat, ahp.InputCompleted(p.InputRequest.Request.ID, ahp.InputAccept, map[string]ahp.ChatInputAnswer{
			acp.QuestionID: {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: "no"}},
		}))
	}
	if got := texts(c.turn(chat, "t4")); !slices.Equal(got, []string{"you said: no"}) {
		t.Errorf("after the answer the agent posts %q", got)
	}
	srv.stop(t)

	if bytes.Contains(setup.wire.Bytes(), []byte("permessage-deflate")) {
		t.Fatal("the WebSocket traffic is compressed; grepping it proves nothing")
	}
	half := len(secret) / 2
	for name, data := range map[string][]byte{"the logs": setup.logs.Bytes(), "the WebSocket traffic": setup.wire.Bytes()} {
		if len(data) == 0 {
			t.Fatalf("nothing was captured of %s", name)
		}
		for _, v := range []string{secret, secret[:half], secret[half:]} {
			if bytes.Contains(data, []byte(v)) {
				t.Errorf("%s hold the credential (or a piece of it, %q)", name, v)
			}
		}
	}
	t.Logf("grepped %d bytes of logs and %d bytes of WebSocket traffic", len(setup.logs.Bytes()), len(setup.wire.Bytes()))
	files := 0
	for _, dir := range []string{setup.config, setup.root} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			files++
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte(secret)) || bytes.Contains(data, []byte(secret[:half])) || bytes.Contains(data, []byte(secret[half:])) {
				t.Errorf("%s holds the credential", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files == 0 {
		t.Fatal("no files under the config and root folders")
	}
	t.Logf("grepped %d files under the config and root folders", files)
}
