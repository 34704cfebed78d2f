package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden exchanges in testdata/*.txtar")

// The golden exchanges: each testdata/*.txtar holds a comment saying what
// it shows, an optional "config" file (JSON: replayBuffer, sendQueue) and a
// "script" file run over Pipe against fakeHost. Script lines:
//
//	! conn NAME TOKEN        open a connection
//	! close NAME             the client closes it
//	! publish CHANNEL JSON   the host publishes a server action
//	! notify CHANNEL METHOD JSON  the host sends a notification
//	NAME> JSON               the client sends a frame (any text)
//	NAME< …                  what the server sent: rewritten by -update
//	# …                      a comment
//
// After each command every open connection is synchronised with a ping,
// and what each received is recorded as NAME< lines (NAME< closed CODE
// "REASON" when the server closed it).
func TestGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ar := txtar.Parse(data)
			script, ok := ar.File("script")
			if !ok {
				t.Fatal("no script file")
			}
			var cfg struct {
				ReplayBuffer int `json:"replayBuffer"`
				SendQueue    int `json:"sendQueue"`
			}
			if c, ok := ar.File("config"); ok {
				if err := json.Unmarshal(c, &cfg); err != nil {
					t.Fatalf("config: %v", err)
				}
			}
			got := runScript(t, string(script), Config{ReplayBuffer: cfg.ReplayBuffer, SendQueue: cfg.SendQueue})
			if *update {
				ar.Set("script", []byte(got))
				if err := os.WriteFile(file, ar.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(strings.Split(string(script), "\n"), strings.Split(got, "\n")); diff != "" {
				t.Errorf("exchange differs from %s (-want +got); run go test -run TestGolden -update to accept:\n%s", file, diff)
			}
		})
	}
}

// scriptConn is one connection of a script, with a goroutine receiving
// from it.
type scriptConn struct {
	conn  *Conn
	recv  chan []byte
	ended chan error // the error Recv ended with
	dead  bool
}

func runScript(t *testing.T, script string, cfg Config) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bus := engine.NewBus(nil)
	host := newFakeHost(bus)
	cfg.Host, cfg.Bus = host, bus
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	conns := map[string]*scriptConn{}
	var order []string
	var out strings.Builder
	lines := strings.Split(strings.TrimRight(script, "\n"), "\n")
	for n, line := range lines {
		if strings.Contains(line, "< ") && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "!") {
			if name, _, ok := strings.Cut(line, "< "); ok && !strings.Contains(name, " ") && !strings.Contains(name, ">") {
				continue // a recorded answer: made again below
			}
		}
		out.WriteString(line + "\n")
		fail := func(format string, args ...any) {
			t.Fatalf("script line %d (%s): %s", n+1, line, fmt.Sprintf(format, args...))
		}
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "! "):
			f := strings.Fields(line[2:])
			switch {
			case len(f) == 3 && f[0] == "conn":
				c, err := srv.Pipe(ctx, f[2])
				if err != nil {
					fail("%v", err)
				}
				sc := &scriptConn{conn: c, recv: make(chan []byte, 1024), ended: make(chan error, 1)}
				go func() {
					defer close(sc.recv)
					for {
						msg, err := c.Recv(ctx)
						if err != nil {
							sc.ended <- err
							return
						}
						sc.recv <- msg
					}
				}()
				conns[f[1]] = sc
				order = append(order, f[1])
			case len(f) == 2 && f[0] == "close":
				sc := conns[f[1]]
				if sc == nil {
					fail("no connection %s", f[1])
				}
				sc.conn.Close()
				sc.dead = true
			case len(f) >= 4 && f[0] == "notify":
				params := strings.TrimSpace(strings.SplitN(line[2:], f[2], 2)[1])
				if err := bus.Notify(f[1], f[2], json.RawMessage(params)); err != nil {
					fail("%v", err)
				}
			case len(f) >= 3 && f[0] == "publish":
				action := strings.TrimSpace(strings.SplitN(line[2:], f[1], 2)[1])
				if err := host.publish(f[1], json.RawMessage(action)); err != nil {
					fail("%v", err)
				}
			default:
				fail("unknown command")
			}
		default:
			name, frame, ok := strings.Cut(line, "> ")
			sc := conns[name]
			if !ok || sc == nil {
				fail("not a command")
			}
			if err := sc.conn.Send(ctx, []byte(frame)); err != nil {
				var ce websocket.CloseError
				if !errors.As(err, &ce) {
					fail("send: %v", err)
				}
			}
		}
		// The connection that sent comes first: once it is synchronised,
		// all its frame caused has been queued for the others.
		syncOrder := order
		if name, _, ok := strings.Cut(line, "> "); ok && conns[name] != nil {
			syncOrder = append([]string{name}, order...)
		}
		synced := map[string]bool{}
		for _, name := range syncOrder {
			sc := conns[name]
			if synced[name] {
				continue
			}
			synced[name] = true
			if sc.dead {
				continue
			}
			for _, l := range syncConn(ctx, t, sc) {
				out.WriteString(name + "< " + l + "\n")
			}
		}
	}
	return out.String()
}

const syncFrame = `{"jsonrpc":"2.0","id":"~sync","method":"ping"}`

// syncConn pings the connection and returns what it received before the
// answer, or until the server closed it.
func syncConn(ctx context.Context, t *testing.T, sc *scriptConn) []string {
	t.Helper()
	var got []string
	sendErr := sc.conn.Send(ctx, []byte(syncFrame))
	for {
		select {
		case msg, ok := <-sc.recv:
			if !ok {
				err := <-sc.ended
				sc.dead = true
				return append(got, fmt.Sprintf("closed %d %q", websocket.CloseStatus(err), closeReason(err)))
			}
			if bytes.Contains(msg, []byte(`"id":"~sync"`)) {
				return got
			}
			got = append(got, string(msg))
		case <-ctx.Done():
			t.Fatalf("no answer to the sync ping (send: %v)", sendErr)
		}
	}
}

func closeReason(err error) string {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return err.Error()
}
