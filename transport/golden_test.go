package transport

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/internal/goldentest"
	"github.com/agenthost/bots/internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden exchanges in testdata/*.txtar")

// The golden exchanges: each testdata/*.txtar holds a comment saying what
// it shows, an optional "config" file (JSON: replayBuffer, sendQueue) and a
// script (internal/goldentest) run over Pipe against fakeHost, with two
// commands of its own, and a close recorded as closed CODE "REASON":
//
//	! publish CHANNEL JSON        the host publishes a server action
//	! notify CHANNEL METHOD JSON  the host sends a notification
func TestGolden(t *testing.T) {
	t.Parallel()
	goldentest.Run(t, "testdata/*.txtar", *update, "go test ./transport -run TestGolden -update",
		func(t *testing.T, ar *txtar.Archive, script string) string {
			var cfg struct {
				ReplayBuffer int `json:"replayBuffer"`
				SendQueue    int `json:"sendQueue"`
			}
			if c, ok := ar.File("config"); ok {
				if err := json.Unmarshal(c, &cfg); err != nil {
					t.Fatalf("config: %v", err)
				}
			}
			return runScript(t, script, Config{ReplayBuffer: cfg.ReplayBuffer, SendQueue: cfg.SendQueue})
		})
}

// runScript runs script over Pipe against a fakeHost, with the two
// commands of transport's own: ! publish and ! notify.
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
	return goldentest.Script{
		Dial: func(ctx context.Context, token string) (goldentest.Conn, error) { return srv.Pipe(ctx, token) },
		Command: func(f []string, line string) (bool, error) {
			switch {
			case len(f) >= 4 && f[0] == "notify":
				params := strings.TrimSpace(strings.SplitN(line[2:], f[2], 2)[1])
				return true, bus.Notify(f[1], f[2], json.RawMessage(params))
			case len(f) >= 3 && f[0] == "publish":
				action := strings.TrimSpace(strings.SplitN(line[2:], f[1], 2)[1])
				return true, host.publish(f[1], json.RawMessage(action))
			}
			return false, nil
		},
		Closed: func(err error) (string, bool) {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				return "", false
			}
			return fmt.Sprintf("closed %d %q", ce.Code, ce.Reason), true
		},
	}.Run(ctx, t, script)
}
