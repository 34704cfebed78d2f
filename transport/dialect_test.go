package transport

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/bots/engine"
)

func TestOlderDialectsGetAFailedTurnsErrorPartAsItsErrorMember(t *testing.T) {
	t.Parallel()
	in := `{"resource":"ahp-chat:/c","title":"C","status":2,"modifiedAt":"x","backgroundWork":[{"kind":"shell","id":"b","label":"l","startedAt":"x"}],"turns":[{"id":"t1","responseParts":[{"kind":"markdown","id":"p","content":"so far"},{"kind":"error","error":{"errorType":"e","message":"m"},"resumable":true}],"state":"error"}],"activeTurn":{"id":"t2","startedAt":"x","message":{"text":"again","origin":{"kind":"user"}},"responseParts":[{"kind":"error","error":{"errorType":"e","message":"paused"}},{"kind":"markdown","id":"q","content":"on"}]}}`
	want := `{"resource":"ahp-chat:/c","title":"C","status":2,"modifiedAt":"x","turns":[{"id":"t1","responseParts":[{"kind":"markdown","id":"p","content":"so far"}],"state":"error","error":{"errorType":"e","message":"m"}}],"activeTurn":{"id":"t2","startedAt":"x","message":{"text":"again","origin":{"kind":"user"}},"responseParts":[{"kind":"markdown","id":"q","content":"on"}]}}`
	for _, d := range []dialect{v07, v06} {
		if got := string(d.state(json.RawMessage(in))); got != want {
			t.Errorf("dialect %d:\n got %s\nwant %s", d, got, want)
		}
	}
}

func TestOlderDialectsCallAFailedSessionCreationFailed(t *testing.T) {
	t.Parallel()
	in := `{"provider":"p","title":"t","status":2,"lifecycle":"failed","creationError":{"errorType":"e","message":"m"},"activeClients":[],"chats":[{"resource":"ahp-chat:/c","title":"C","status":1,"modifiedAt":"x","changes":{"files":1},"movable":true}]}`
	want := `{"provider":"p","title":"t","status":2,"lifecycle":"creationFailed","creationError":{"errorType":"e","message":"m"},"activeClients":[],"chats":[{"resource":"ahp-chat:/c","title":"C","status":1,"modifiedAt":"x"}]}`
	if got := string(v07.state(json.RawMessage(in))); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestDialect06HasOneWorkingDirectoryWhereLaterVersionsHaveASet(t *testing.T) {
	t.Parallel()
	in := `{"provider":"p","title":"t","status":1,"workingDirectories":["file:///a","file:///b"],"lifecycle":"ready","activeClients":[],"chats":[{"resource":"ahp-chat:/c","title":"C","status":1,"modifiedAt":"x","workingDirectories":[]}]}`
	want06 := `{"provider":"p","title":"t","status":1,"workingDirectory":"file:///a","lifecycle":"ready","activeClients":[],"chats":[{"resource":"ahp-chat:/c","title":"C","status":1,"modifiedAt":"x"}]}`
	if got := string(v06.state(json.RawMessage(in))); got != want06 {
		t.Errorf("0.6:\n got %s\nwant %s", got, want06)
	}
	if got := string(v07.state(json.RawMessage(in))); got != in {
		t.Errorf("0.7 changed the working directories:\n got %s\nwant %s", got, in)
	}
	// what a 0.6 client sends: its one directory becomes the set.
	params := `{"channel":"ahp-session:/s","provider":"p","workingDirectory":"file:///a"}`
	if got, want := string(v06.upParams("createSession", json.RawMessage(params))), `{"channel":"ahp-session:/s","provider":"p","workingDirectories":["file:///a"]}`; got != want {
		t.Errorf("createSession params:\n got %s\nwant %s", got, want)
	}
	if got := string(v07.upParams("createSession", json.RawMessage(params))); got != params {
		t.Errorf("0.7 createSession params changed: %s", got)
	}
}

func TestOlderDialectsAreNotSentTheActions090Added(t *testing.T) {
	t.Parallel()
	for typ := range newerActions {
		if _, ok := v07.action(json.RawMessage(`{"type":"` + typ + `"}`)); ok {
			t.Errorf("%s is sent to 0.8", typ)
		}
	}
	envs := v07.envelopes([]engine.Envelope{
		{Channel: "ahp-chat:/c", Action: json.RawMessage(`{"type":"chat/turnResume","turnId":"t"}`), ServerSeq: 1},
		{Channel: "ahp-chat:/c", Action: json.RawMessage(`{"type":"chat/delta","turnId":"t","partId":"p","content":"x"}`), ServerSeq: 2},
	})
	if len(envs) != 1 || envs[0].ServerSeq != 2 {
		t.Errorf("replay = %+v, want the delta alone", envs)
	}
	// an error part comes with chat/error, never alone.
	if _, ok := v07.action(json.RawMessage(`{"type":"chat/responsePart","turnId":"t","part":{"kind":"error","error":{"errorType":"e","message":"m"}}}`)); ok {
		t.Error("a chat/responsePart of an error part is sent to 0.8")
	}
}

func TestOlderDialectsTranslateChatErrorBothWays(t *testing.T) {
	t.Parallel()
	current := `{"type":"chat/error","turnId":"t","duration":5,"part":{"kind":"error","error":{"errorType":"e","message":"m"},"resumable":true},"_meta":{"k":1}}`
	old := `{"type":"chat/error","turnId":"t","duration":5,"error":{"errorType":"e","message":"m"},"_meta":{"k":1}}`
	got, ok := v07.action(json.RawMessage(current))
	if !ok || string(got) != old {
		t.Errorf("down: got %s, %v\nwant %s", got, ok, old)
	}
	up := `{"type":"chat/error","turnId":"t","duration":5,"part":{"kind":"error","error":{"errorType":"e","message":"m"}},"_meta":{"k":1}}`
	if got := string(v07.upAction(json.RawMessage(old))); got != up {
		t.Errorf("up: got %s\nwant %s", got, up)
	}
	if got := string(v07.upAction(json.RawMessage(up))); got != up {
		t.Errorf("an action already in the current shape changed: %s", got)
	}
}

func TestOlderDialectsTranslateSummariesInNotificationsAndResults(t *testing.T) {
	t.Parallel()
	m := v07.notification(engine.Message{Method: "root/sessionAdded", Channel: "ahp-root://", Params: map[string]json.RawMessage{
		"summary": json.RawMessage(`{"provider":"p","title":"t","status":1,"resource":"ahp-session:/s","createdAt":"x","modifiedAt":"x","chats":[{"resource":"ahp-chat:/c","title":"C"}],"defaultChat":"ahp-chat:/c"}`),
	}})
	if got, want := string(m.Params["summary"]), `{"provider":"p","title":"t","status":1,"resource":"ahp-session:/s","createdAt":"x","modifiedAt":"x"}`; got != want {
		t.Errorf("root/sessionAdded summary:\n got %s\nwant %s", got, want)
	}
	res := v07.result("listSessions", json.RawMessage(`{"items":[{"resource":"ahp-session:/s","defaultChat":"ahp-chat:/c"}],"nextCursor":"n"}`))
	if got, want := string(res), `{"items":[{"resource":"ahp-session:/s"}],"nextCursor":"n"}`; got != want {
		t.Errorf("listSessions: got %s, want %s", got, want)
	}
	act, _ := v07.action(json.RawMessage(`{"type":"session/chatUpdated","chat":"ahp-chat:/c","changes":{"title":"T","interactivity":"read-only","movable":false}}`))
	if got, want := string(act), `{"type":"session/chatUpdated","chat":"ahp-chat:/c","changes":{"title":"T"}}`; got != want {
		t.Errorf("session/chatUpdated: got %s, want %s", got, want)
	}
}

func TestAConnectionAt080DispatchingAChatErrorInItsShapeReachesOthersInTheirs(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	old := dialPipe(t, srv, "root-token")
	old.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersions":["0.8.0"],"clientId":"old","initialSubscriptions":["ahp-chat:/c1"]}}`)
	if m := old.recv(); m.Error != nil {
		t.Fatalf("initialize 0.8.0: %s", m.raw)
	}
	cur := dialPipe(t, srv, "root-token")
	cur.initialize("cur", "ahp-chat:/c1")
	old.send(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-chat:/c1","clientSeq":1,"action":{"type":"chat/turnStarted","turnId":"t","startedAt":"2026-01-01T00:00:00.000Z","message":{"text":"hi","origin":{"kind":"user"}}}}}`)
	old.send(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-chat:/c1","clientSeq":2,"action":{"type":"chat/error","turnId":"t","duration":1,"error":{"errorType":"e","message":"m"}}}}`)
	var oldGot, curGot []string
	for _, m := range old.ping() {
		oldGot = append(oldGot, string(m.envelope(t).Action))
	}
	for _, m := range cur.ping() {
		curGot = append(curGot, string(m.envelope(t).Action))
	}
	if len(oldGot) != 2 || len(curGot) != 2 {
		t.Fatalf("0.8 got %q, 1.0 got %q; want two actions each", oldGot, curGot)
	}
	if want := `{"type":"chat/error","turnId":"t","duration":1,"error":{"errorType":"e","message":"m"}}`; oldGot[1] != want {
		t.Errorf("0.8 got %s, want %s", oldGot[1], want)
	}
	if want := `{"type":"chat/error","turnId":"t","duration":1,"part":{"kind":"error","error":{"errorType":"e","message":"m"}}}`; curGot[1] != want {
		t.Errorf("1.0 got %s, want %s", curGot[1], want)
	}
}

// FuzzDialectTranslations: whatever a state, an action or a client's
// action holds, translating it never panics and valid JSON stays valid.
func FuzzDialectTranslations(f *testing.F) {
	f.Add(`{"turns":[{"id":"t","responseParts":[{"kind":"error","error":{"errorType":"e","message":"m"}}],"state":"error"}],"activeTurn":{"responseParts":[{"kind":"error"}]}}`)
	f.Add(`{"lifecycle":"failed","workingDirectories":["a"],"chats":[{"movable":true,"workingDirectories":[]}]}`)
	f.Add(`{"type":"chat/error","turnId":"t","part":{"kind":"error","error":{}}}`)
	f.Add(`{"type":"chat/error","error":{"errorType":"e"}}`)
	f.Add(`{"type":"session/chatUpdated","changes":{"interactivity":"full"}}`)
	f.Add(`{"items":[{"defaultChat":"x"}],"turns":[1,{"responseParts":"no"}]}`)
	f.Add(`{"workingDirectory":null}`)
	f.Add(`[1,2`)
	f.Fuzz(func(t *testing.T, in string) {
		raw := json.RawMessage(in)
		valid := json.Valid(raw)
		for _, d := range []dialect{v07, v06} {
			outs := []json.RawMessage{d.state(raw), d.upAction(raw), d.upParams("createSession", raw), d.result("listSessions", raw), d.result("fetchTurns", raw)}
			if a, ok := d.action(raw); ok {
				outs = append(outs, a)
			}
			for _, out := range outs {
				if valid && !json.Valid(out) {
					t.Fatalf("dialect %d made invalid JSON of %s: %s", d, in, out)
				}
				if !valid && string(out) != in {
					t.Fatalf("dialect %d changed invalid JSON %q to %q", d, in, out)
				}
			}
		}
	})
}

// BenchmarkActionFrame is what writing one chat action costs a connection
// per dialect: a 1.x connection encodes it as it is; an older one
// translates it first (the chat/delta of a streamed reply passes through
// unchanged, a chat/error is rewritten).
func BenchmarkActionFrame(b *testing.B) {
	delta := &engine.Envelope{Channel: "ahp-chat:/c1", ServerSeq: 42, Action: json.RawMessage(`{"type":"chat/delta","turnId":"turn-1","partId":"p1","content":"a few words of the reply"}`)}
	failed := &engine.Envelope{Channel: "ahp-chat:/c1", ServerSeq: 43, Action: json.RawMessage(`{"type":"chat/error","turnId":"turn-1","duration":1200,"part":{"kind":"error","error":{"errorType":"agentFailed","message":"the agent stopped"}}}`)}
	for _, bc := range []struct {
		name string
		d    dialect
		env  *engine.Envelope
	}{
		{"1.x/delta", current, delta},
		{"0.8/delta", v07, delta},
		{"0.8/error", v07, failed},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := &conn{dialect: bc.d}
			e := getEncoder()
			defer e.free()
			b.ReportAllocs()
			for b.Loop() {
				m := engine.Message{Action: bc.env}
				if c.dialect != current {
					m, _ = c.translate(m)
				}
				e.buf.Reset()
				if err := e.message(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
