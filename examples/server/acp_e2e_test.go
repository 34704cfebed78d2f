package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
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
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/acp/acpfake"
)

// The end-to-end tests of back sessions on an ACP agent: the fake agent
// (acpfake, run by this test binary) through the built server.

func TestMain(m *testing.M) {
	acpfake.Main()
	if os.Getenv(asServerEnv) == "1" {
		// Run as the server itself, its arguments after "--".
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"server"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	waittest.Parallel(3)
	code := pgtest.Main(m) // stops the throwaway PostgreSQL of the -db tests
	removeServerBinary()
	stopBrowser()
	os.Exit(code)
}

// acpServer is the built server running the fake agent as provider
// "fake", its logs (at debug) captured, and a recording proxy in front of
// it through which every WebSocket byte passes.
type acpServer struct {
	cmd    *exec.Cmd
	addr   string // the proxy's address
	direct string // the server's own address, behind the proxy
	exited chan struct{}
}

// acpSetup is what the servers of one test share: folders, files and the
// captured logs and traffic.
type acpSetup struct {
	bin, config, root, agents string
	extra                     []string
	environ                   []string // more of the server's environment, NAME=value
	logs, wire                *waittest.Log
	// tmp is the servers' TMPDIR, removed when the test ends: a server
	// killed while it checks its agents leaves the check's folder there.
	// Its name is short, for the UNIX sockets made in it.
	tmp string
}

// env is the environment of a server of s: the test's, with the fake
// agent, tmp and environ.
func (s *acpSetup) env() []string {
	return append(append(os.Environ(), acpfake.Env+"=1", "TMPDIR="+s.tmp), s.environ...)
}

func newACPSetup(t *testing.T, extra ...string) *acpSetup {
	t.Helper()
	bin := buildServer(t)
	base := t.TempDir()
	tmp, err := os.MkdirTemp("", "srv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	s := &acpSetup{bin: bin, config: filepath.Join(base, "config"), root: filepath.Join(base, "bots"),
		agents: filepath.Join(base, "agents.json"), extra: extra, logs: &waittest.Log{}, wire: &waittest.Log{}, tmp: tmp}
	agents, err := json.Marshal(map[string]any{"agents": map[string]any{"fake": map[string]any{
		"command": os.Args[0], "args": []string{"-test.run=^$"}, "env": []string{acpfake.Env},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.agents, agents, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// start runs the server and a recording proxy in front of it.
func (s *acpSetup) start(t *testing.T) *acpServer {
	t.Helper()
	args := append([]string{"-addr", "127.0.0.1:0", "-config", s.config, "-root", s.root, "-host-name", "chathost",
		"-log-level", "debug", "-agents", s.agents}, s.extra...)
	cmd := exec.Command(s.bin, args...)
	cmd.Env = s.env()
	cmd.Stderr = s.logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	srv := &acpServer{cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(srv.exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-srv.exited })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		io.Copy(io.Discard, out)
	}()
	var addr string
	select {
	case l := <-line:
		addr = mustListening(t, l)
	case <-srv.exited:
		t.Fatalf("the server exited: %s", s.logs.Bytes())
	case <-time.After(30 * time.Second):
		t.Fatal("the server printed no listening line")
	}
	srv.direct, srv.addr = addr, recordingProxy(t, addr, s.wire)
	return srv
}

// stop ends the server gracefully (SIGTERM) and waits for it.
func (srv *acpServer) stop(t *testing.T) {
	t.Helper()
	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-srv.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop on SIGTERM")
	}
}

// recordingProxy forwards loopback connections to addr, writing every byte
// both ways to wire before it forwards it, and returns its own address.
func recordingProxy(t *testing.T, addr string, wire io.Writer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{}, 2)
				// Recorded before forwarded: what an end has read is
				// already in wire.
				go func() { io.Copy(io.MultiWriter(wire, up), c); up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				go func() { io.Copy(io.MultiWriter(wire, c), up); done <- struct{}{} }()
				<-done
				<-done
			}()
		}
	}()
	if tok, ok := localTokens.Load(addr); ok {
		localTokens.Store(ln.Addr().String(), tok)
	}
	return ln.Addr().String()
}

// say starts a turn in chat and returns the texts of the main turn.
func say(t *testing.T, c *ahpClient, chat, id, words string) []string {
	t.Helper()
	c.dispatch(chat, ahp.TurnStarted(id, time.Now(), ahp.UserMessage(words)))
	turn := c.turn(chat, id)
	if turn.State != ahp.TurnStateComplete {
		b, _ := json.Marshal(turn)
		t.Fatalf("%q: the main turn ended %s: %s", words, turn.State, b)
	}
	return texts(turn)
}

func TestEndToEndACPAgentPostsThroughMCPAndContinuesItsSessionAfterARestart(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t)
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "acp")
	c.makeBot("motion", `{"name": "Motion", "provider": "fake"}`)
	chat := c.openChat("ahp-session:/acp", "motion")
	if got := say(t, c, chat, "t1", "post hello through MCP"); len(got) != 1 || got[0] != "hello through MCP" {
		t.Fatalf("the main turn says %q, want the agent's post_message", got)
	}
	got := say(t, c, chat, "t2", "session")
	if len(got) != 1 || !strings.HasSuffix(got[0], " loaded=false") {
		t.Fatalf("the agent session: %q", got)
	}
	id := strings.TrimSuffix(got[0], " loaded=false")
	srv.stop(t)

	srv = setup.start(t)
	c = dialChat(t, srv.addr, "acp-2")
	c.subscribe("ahp-session:/acp")
	c.subscribe(chat)
	if got := say(t, c, chat, "t3", "session"); len(got) != 1 || got[0] != id+" loaded=true" {
		t.Errorf("after the restart the agent says %q, want %q (the same session, loaded)", got, id+" loaded=true")
	}
	if got := say(t, c, chat, "t4", "post still here"); len(got) != 1 || got[0] != "still here" {
		t.Errorf("after the restart post_message says %q", got)
	}
	srv.stop(t)
}

func TestEndToEndConnectorCallLeavesTheCredentialNowhere(t *testing.T) {
	t.Parallel()
	raw := make([]byte, 16)
	rand.Read(raw)
	secret := "tok-e2e-" + hex.EncodeToString(raw)
	var (
		mu  sync.Mutex
		got []string
	)
	far := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		mu.Lock()
		got = append(got, auth)
		mu.Unlock()
		// The far end echoes the credential: the server must take it out.
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"ok": "yes", "echo": auth})
	}))
	defer far.Close()
	secrets := t.TempDir()
	vault := filepath.Join(secrets, "vault.json")
	entry, _ := json.Marshal(map[string]any{"connectors": map[string]any{"http/crm": map[string]any{"value": secret, "url": far.URL, "owners": []string{"*"}}}})
	if err := os.WriteFile(vault, entry, 0o600); err != nil {
		t.Fatal(err)
	}
	setup := newACPSetup(t, "-vault", vault)
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "secrets")
	c.makeBot("motion", `{"name": "Motion", "provider": "fake", "connectors": {"crm": "connectors://http/crm"}}`)
	chat := c.openChat("ahp-session:/secrets", "motion")
	said := say(t, c, chat, "t1", `tool crm {"q": "accounts"}`)
	if len(said) != 1 || !strings.HasPrefix(said[0], "tool: ") || !strings.Contains(said[0], `"ok":"yes"`) {
		t.Fatalf("the connector call says %q", said)
	}
	t.Logf("the connector call says %q", said[0])
	mu.Lock()
	calls := got
	mu.Unlock()
	if len(calls) != 1 || !strings.Contains(calls[0], secret) {
		t.Fatalf("the far end got %d calls with Authorization %q; want one carrying the credential", len(calls), calls)
	}
	// The bot's connectors map is read live: taken out, the call fails clearly.
	c.must("resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://motion", "encoding": "utf-8", "data": `{"connectors": {}}`}, nil)
	said = say(t, c, chat, "t2", `tool crm {}`)
	if len(said) != 1 || !strings.HasPrefix(said[0], "tool failed:") {
		t.Errorf("a call after the alias was taken out says %q", said)
	}
	srv.stop(t)

	if bytes.Contains(setup.wire.Bytes(), []byte("permessage-deflate")) {
		t.Fatal("the WebSocket traffic is compressed; grepping it proves nothing")
	}
	if len(setup.wire.Bytes()) == 0 || len(setup.logs.Bytes()) == 0 {
		t.Fatal("no traffic or no logs were captured")
	}
	for name, data := range map[string][]byte{"the logs": setup.logs.Bytes(), "the WebSocket traffic": setup.wire.Bytes()} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s hold the credential", name)
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
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds the credential", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("grepped %d files under the config and root folders", files)
	if files == 0 {
		t.Fatal("no files under the config and root folders")
	}
}

func TestEndToEndACPQuestionAndPermissionGoThroughTheMainChat(t *testing.T) {
	t.Parallel()
	setup := newACPSetup(t)
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "acp-ask")
	c.makeBot("motion", `{"name": "Motion", "provider": "fake"}`)

	chat := c.openChat("ahp-session:/acp-ask", "motion")
	c.dispatch(chat, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("ask your name?")))
	st := c.waitChat(chat, "the question", func(s ahp.ChatState) bool {
		return slices.ContainsFunc(active(s), func(p ahp.ResponsePart) bool { return p.InputRequest != nil })
	})
	var id string
	for _, p := range active(st) {
		if p.InputRequest != nil {
			id = p.InputRequest.Request.ID
			if q := p.InputRequest.Request.Questions; len(q) != 1 || q[0].Message != "your name?" {
				t.Errorf("question %+v", q)
			}
		}
	}
	c.dispatch(chat, ahp.InputCompleted(id, ahp.InputAccept, map[string]ahp.ChatInputAnswer{
		acp.QuestionID: {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: "Ada"}},
	}))
	if got := texts(c.turn(chat, "t1")); !slices.Equal(got, []string{"you said: Ada"}) {
		t.Errorf("after the answer the agent posts %q", got)
	}

	for i, approve := range []bool{true, false} {
		turn := fmt.Sprint("p", i)
		c.dispatch(chat, ahp.TurnStarted(turn, time.Now(), ahp.UserMessage("permit")))
		st := c.waitChat(chat, "the permission", func(s ahp.ChatState) bool {
			return slices.ContainsFunc(active(s), func(p ahp.ResponsePart) bool {
				return p.ToolCall != nil && p.ToolCall.Status == ahp.ToolCallStatusPendingConfirmation
			})
		})
		for _, p := range active(st) {
			if p.ToolCall != nil && p.ToolCall.Status == ahp.ToolCallStatusPendingConfirmation {
				c.dispatch(chat, ahp.ToolCallConfirmed(turn, p.ToolCall.ToolCallID, approve))
			}
		}
		want := map[bool]string{true: "allowed", false: "rejected"}[approve]
		if got := texts(c.turn(chat, turn)); !slices.Equal(got, []string{want}) {
			t.Errorf("approve=%v: the agent posts %q, want %s", approve, got, want)
		}
	}
	srv.stop(t)
}
