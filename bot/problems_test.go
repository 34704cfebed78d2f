package bot_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/transport"
)

// problemsClient is a connection subscribed to the problems channel.
type problemsClient struct {
	t    *testing.T
	conn *transport.Conn
	id   int
}

func subscribeProblems(t *testing.T, srv *transport.Server, token string) (*problemsClient, []map[string]any) {
	t.Helper()
	conn, err := srv.Pipe(ctx(t), token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &problemsClient{t: t, conn: conn}
	c.call("initialize", `{"channel":"ahp-root://","protocolVersions":["1.1.0"],"clientId":"problems-`+token+`"}`)
	res := c.call("subscribe", `{"channel":"`+bot.ProblemsURI+`"}`)
	var r struct {
		Snapshot struct {
			State struct {
				Problems []map[string]any `json:"problems"`
			} `json:"state"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Snapshot.State.Problems == nil {
		t.Fatalf("subscribe %s: %s %v", bot.ProblemsURI, res, err)
	}
	return c, r.Snapshot.State.Problems
}

// call sends a request and returns its result, skipping notifications.
func (c *problemsClient) call(method, params string) json.RawMessage {
	c.t.Helper()
	c.id++
	if err := c.conn.Send(ctx(c.t), []byte(`{"jsonrpc":"2.0","id":`+itoa(c.id)+`,"method":"`+method+`","params":`+params+`}`)); err != nil {
		c.t.Fatal(err)
	}
	for {
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		c.recv(&m)
		if m.ID != nil && *m.ID == c.id {
			if m.Error != nil {
				c.t.Fatalf("%s: %s", method, m.Error)
			}
			return m.Result
		}
	}
}

func (c *problemsClient) recv(v any) {
	c.t.Helper()
	data, err := c.conn.Recv(ctx(c.t))
	if err != nil {
		c.t.Fatalf("receive: %v", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		c.t.Fatalf("receive %s: %v", data, err)
	}
}

// next returns the problems of the next problems action.
func (c *problemsClient) next() []map[string]any {
	c.t.Helper()
	for {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Channel string `json:"channel"`
				Action  struct {
					Type     string           `json:"type"`
					Problems []map[string]any `json:"problems"`
				} `json:"action"`
			} `json:"params"`
		}
		c.recv(&m)
		if m.Method == "action" && m.Params.Channel == bot.ProblemsURI {
			if m.Params.Action.Type != bot.ActionProblemsChanged || m.Params.Action.Problems == nil {
				c.t.Fatalf("problems action %+v", m.Params.Action)
			}
			return m.Params.Action.Problems
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A store that keeps no problems (memrecord): the service's own work
// folder problems are pushed as they appear and clear, to the bot's
// readers only, with the path for root alone.
func TestTheServicesOwnFolderProblemsArePushedToTheBotsReaders(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", `{"name":"Motion"}`)
	owner, none := subscribeProblems(t, e.srv, "soft")
	if len(none) != 0 {
		t.Fatalf("the first snapshot holds %v", none)
	}
	root, _ := subscribeProblems(t, e.srv, "root")
	e.users.(chatUsers)["nobody"] = nobody

	folder := filepath.Join(e.options.Root, "motion")
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), folder); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Read(context.Background(), soft, "motion"); err == nil {
		t.Fatal("a read through a swapped folder was answered")
	}
	ps := owner.next()
	if len(ps) != 1 || ps[0]["bot"] != "motion" || ps[0]["path"] != nil || !strings.Contains(ps[0]["reason"].(string), "out of root") {
		t.Fatalf("the owner hears %v", ps)
	}
	if ps := root.next(); len(ps) != 1 || ps[0]["path"] != folder {
		t.Fatalf("root hears %v, want the problem with its path", ps)
	}
	// A reader who may not read the bot subscribes and sees none of it.
	if _, seen := subscribeProblems(t, e.srv, "nobody"); len(seen) != 0 {
		t.Fatalf("a stranger's snapshot holds %v", seen)
	}

	if err := os.Remove(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Read(context.Background(), soft, "motion"); err != nil {
		t.Fatal(err)
	}
	if ps := owner.next(); len(ps) != 0 {
		t.Fatalf("with the folder back the owner hears %v", ps)
	}
	if ps := root.next(); len(ps) != 0 {
		t.Fatalf("with the folder back root hears %v", ps)
	}
}
