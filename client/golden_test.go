package client_test

import (
	"context"
	"encoding/json"
	"flag"
	"github.com/agenthost/bots/client"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/sent.golden with the frames the client sends")

// recording is a client.Conn that keeps every frame the client sends.
type recording struct {
	client.Conn
	mu   sync.Mutex
	sent []string
}

func (r *recording) Send(ctx context.Context, msg []byte) error {
	r.mu.Lock()
	r.sent = append(r.sent, string(msg))
	r.mu.Unlock()
	return r.Conn.Send(ctx, msg)
}

// varying are the parts of a frame that change from run to run: ULIDs
// (turns, sessions, pending messages) and times.
var varying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-z]{26}`), "<ulid>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`), "<time>"},
	{regexp.MustCompile(`ahp-chat://default/[A-Za-z0-9_-]+`), "ahp-chat://default/<base64url of the session>"},
}

// TestTheFramesTheClientSendsAreTheGoldenOnes runs each operation once
// against a server and compares the frames the client sent, in order,
// with testdata/sent.golden: what the client puts on the wire is
// reviewed like code (go test -run TestTheFramesTheClientSends -update
// rewrites it).
func TestTheFramesTheClientSendsAreTheGoldenOnes(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	ctx := testCtx(t)
	conn, err := client.DialWS(ctx, url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recording{Conn: conn}
	c := client.New(rec, client.Options{ClientID: "golden"})
	defer c.Close()
	b, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal", Labels: []string{"ci"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Edit(ctx, "motion", client.Fields{Color: "red", Clear: []string{"labels"}}, b.ETag); err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		t.Fatal(err)
	}
	turn, err := chat.Send(ctx, "ask Which colour?")
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range turn.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == client.EventQuestion {
			if err := chat.Answer(ctx, e.Question.ID, map[string]string{"answer": "teal"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := chat.History(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "motion"); err != nil {
		t.Fatal(err)
	}

	rec.mu.Lock()
	got := strings.Join(rec.sent, "\n") + "\n"
	rec.mu.Unlock()
	quoted, _ := json.Marshal(b.ETag) // an etag is a quoted string, escaped in the frame
	got = strings.ReplaceAll(got, string(quoted[1:len(quoted)-1]), "<etag>")
	for _, v := range varying {
		got = v.re.ReplaceAllString(got, v.with)
	}
	file := filepath.Join("testdata", "sent.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -run TestTheFramesTheClientSends -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("the client sent other frames than %s (-want +got); run go test -run TestTheFramesTheClientSends -update to accept:\n%s", file, diff)
	}
}
