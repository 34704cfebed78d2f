package bot_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/access/usersfile"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/internal/goldentest"
	"github.com/agenthost/bots/internal/txtar"
	"github.com/agenthost/bots/record/memrecord"
	"github.com/agenthost/bots/transport"
)

var update = flag.Bool("update", false, "rewrite the golden exchanges in testdata/golden/*.txtar")

// goldenUsers is the users file of the golden exchanges: soft may make
// bots and belongs to backend, kim may read every bot, nemo may do
// nothing.
const goldenUsers = `{
  "root": {"token": "root-token-0123456789"},
  "users": [
    {"id": "soft", "token": "soft-token-0123456789", "grants": ["bot:put", "session:create"], "memberships": ["backend"]},
    {"id": "kim", "token": "kim-token-0123456789", "grants": ["bot:get"]},
    {"id": "nemo", "token": "nemo-token-0123456789"}
  ]
}`

// The golden exchanges of the bot: scheme, the watches and the catalogue,
// over transport.Server.Pipe against a bot.Service on memrecord with a
// clock that ticks one second per reading and personas in AGENTS.md files.
// Each testdata/golden/*.txtar holds a comment saying what it shows and a
// script (internal/goldentest). What each connection received is recorded
// its responses first. A write or delete that succeeded is first followed
// until the catalogue and the watches have published it. The temp folder
// is written $TMP (in base64 data too), etags <etag-N> and watch channels
// ahp-resource-watch:/<watch-N>; a frame sent may use them, and is sent
// with the real values.
func TestGolden(t *testing.T) {
	t.Parallel()
	goldentest.Run(t, "testdata/golden/*.txtar", *update, "go test ./bot -run TestGolden -update",
		func(t *testing.T, _ *txtar.Archive, script string) string { return runGolden(t, script) })
}

// ticker is a clock that starts at a fixed time and moves one second each
// time it is read.
type ticker struct {
	mu  sync.Mutex
	now time.Time
}

func (k *ticker) Now() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.now = k.now.Add(time.Second)
	return k.now
}

func runGolden(t *testing.T, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := t.TempDir()
	users, err := usersfile.Parse([]byte(goldenUsers))
	if err != nil {
		t.Fatal(err)
	}
	clock := &ticker{now: time.Date(2026, 10, 11, 9, 0, 0, 0, time.UTC)}
	bus := engine.NewBus(nil)
	store := memrecord.New()
	defer store.Close()
	svc, err := bot.New(ctx, bot.Config{
		Store: store, ConfigDir: filepath.Join(base, "config"), HostName: "golden",
		Options: bot.Options{Root: filepath.Join(base, "bots")}, PersonaIn: bot.PersonaInFiles,
		Now: clock.Now, Users: users, Bus: bus,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	srv, err := transport.New(transport.Config{Host: svc, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fence := newFence(ctx, t, srv)
	sc := &scrubber{base: base, real: map[string]string{}, holder: map[string]string{}, n: map[string]int{}}
	return goldentest.Script{
		Dial: func(ctx context.Context, token string) (goldentest.Conn, error) { return srv.Pipe(ctx, token) },
		In:   sc.in,
		Out:  sc.out,
		// A write or delete that succeeded is followed until the
		// catalogue and the watches have published it.
		Settle: func(frame []byte, got []string, more func() []string) []string {
			if changed(frame, got) {
				fence.wait(ctx, t)
				got = append(got, more()...)
			}
			return got
		},
		Order: responsesFirst,
	}.Run(ctx, t, script)
}

// changed reports whether frame was a resourceWrite or resourceDelete that
// succeeded, by the response among received.
func changed(frame []byte, received []string) bool {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(frame, &req) != nil || req.ID == nil || (req.Method != "resourceWrite" && req.Method != "resourceDelete") {
		return false
	}
	for _, l := range received {
		var res struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(l), &res) == nil && bytes.Equal(res.ID, req.ID) {
			return res.Result != nil
		}
	}
	return false
}

// responsesFirst orders what one connection received in one step: the
// responses, then the notifications in the order they came. A response
// and the actions its request caused are sent by two goroutines.
func responsesFirst(msgs []string) []string {
	var responses, notes []string
	for _, m := range msgs {
		if strings.Contains(m, `"method":`) {
			notes = append(notes, m)
		} else {
			responses = append(responses, m)
		}
	}
	return append(responses, notes...)
}

// fence is a root connection subscribed to the catalogue, which hears of
// every change: once it has, and a subscribe of its own (which waits for
// the catalogue's lock) is answered, the change has been published on the
// catalogue and every watch.
type fence struct {
	conn  *transport.Conn
	recv  <-chan []byte
	ended <-chan error
	id    int
}

func newFence(ctx context.Context, t *testing.T, srv *transport.Server) *fence {
	t.Helper()
	c, err := srv.Pipe(ctx, "root-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	f := &fence{conn: c}
	f.recv, f.ended = goldentest.Receive(ctx, c)
	f.call(ctx, t, `"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"~fence"}`)
	f.call(ctx, t, `"subscribe","params":{"channel":"x-ahpd-bots://"}`)
	return f
}

// call sends a request and waits for its answer, dropping what comes
// before it.
func (f *fence) call(ctx context.Context, t *testing.T, methodAndParams string) {
	t.Helper()
	f.id++
	id := fmt.Sprintf(`"id":%d,`, f.id)
	if err := f.conn.Send(ctx, []byte(`{"jsonrpc":"2.0",`+id+`"method":`+methodAndParams+`}`)); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case msg, ok := <-f.recv:
			if !ok {
				t.Fatalf("the fence connection ended: %v", <-f.ended)
			}
			if bytes.Contains(msg, []byte(id)) && !bytes.Contains(msg, []byte(`"method"`)) {
				if bytes.Contains(msg, []byte(`"error"`)) {
					t.Fatalf("fence: %s", msg)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("the fence heard no answer")
		}
	}
}

// wait returns once the change just made has been published everywhere.
func (f *fence) wait(ctx context.Context, t *testing.T) {
	t.Helper()
	for {
		select {
		case msg, ok := <-f.recv:
			if !ok {
				t.Fatalf("the fence connection ended: %v", <-f.ended)
			}
			if !bytes.Contains(msg, []byte(`"method":"action"`)) {
				continue
			}
			f.call(ctx, t, `"subscribe","params":{"channel":"x-ahpd-bots://"}`)
			return
		case <-ctx.Done():
			t.Fatal("the fence heard of no change")
		}
	}
}

// scrubber writes what varies from run to run as placeholders, and back.
type scrubber struct {
	base   string
	real   map[string]string // placeholder → real value
	holder map[string]string // real value → placeholder
	n      map[string]int
}

var (
	watchRE       = regexp.MustCompile(`ahp-resource-watch:/([A-Z2-7]{26})`)
	ulidRE        = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)
	placeholderRE = regexp.MustCompile(`<(etag|watch)-\d+>`)
	base64RE      = regexp.MustCompile(`"data":"([A-Za-z0-9+/=]*)","encoding":"base64"`)
)

func (s *scrubber) hold(kind, v string) string {
	if h, ok := s.holder[v]; ok {
		return h
	}
	s.n[kind]++
	h := fmt.Sprintf("<%s-%d>", kind, s.n[kind])
	s.holder[v], s.real[h] = h, v
	return h
}

// out scrubs a line the server sent. Base64 data is decoded, scrubbed
// and encoded again.
func (s *scrubber) out(line string) string {
	line = base64RE.ReplaceAllStringFunc(line, func(m string) string {
		sub := base64RE.FindStringSubmatch(m)
		data, err := base64.StdEncoding.DecodeString(sub[1])
		if err != nil {
			return m
		}
		scrubbed := strings.ReplaceAll(string(data), s.base, "$TMP")
		return `"data":"` + base64.StdEncoding.EncodeToString([]byte(scrubbed)) + `","encoding":"base64"`
	})
	line = strings.ReplaceAll(line, s.base, "$TMP")
	line = watchRE.ReplaceAllStringFunc(line, func(m string) string {
		return "ahp-resource-watch:/" + s.hold("watch", strings.TrimPrefix(m, "ahp-resource-watch:/"))
	})
	return ulidRE.ReplaceAllStringFunc(line, func(m string) string { return s.hold("etag", m) })
}

// in puts the real values back into a frame to send.
func (s *scrubber) in(frame string) string {
	frame = strings.ReplaceAll(frame, "$TMP", s.base)
	return placeholderRE.ReplaceAllStringFunc(frame, func(m string) string {
		if v, ok := s.real[m]; ok {
			return v
		}
		return m
	})
}
