package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The README's example exchanges are transcripts this test replays against
// the real server, so that they cannot drift from what it does.
//
// A transcript is a ```text block whose lines are "→ <frame>" (a frame the
// client sends) and "← <frame>" (a frame the server answers); a blank line
// ends an exchange. The frames expected of an exchange may come in any
// order. A frame the server sends that the exchange does not show fails
// it, unless the exchange has a line "← …" (more frames come, not shown).
// In an expected frame, … stands for what varies or is left out: as a
// value, any value; as a member of an object, any other members; as the
// last element of an array, any more elements; inside a string, any text.
// A string "<name>" is any string, remembered as name: a later frame sent
// has <name> replaced by it, and a later "<name>" expected must be it. A
// string value holding JSON (a resource's data) is matched as JSON.

// exchange is one step of a transcript: frames sent, then frames expected.
type exchange struct {
	line   int // of the README, where it starts
	sends  []string
	expect []string
	more   bool // "← …": frames not shown may come too
}

// readmeExchanges returns the exchanges of every transcript in the README,
// in order.
func readmeExchanges(t *testing.T, path string) []exchange {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []exchange
	var cur *exchange
	inBlock, isText := false, false
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			flush()
			inBlock = !inBlock
			isText = inBlock && strings.TrimSpace(strings.TrimPrefix(line, "```")) == "text"
			continue
		}
		if !inBlock || !isText {
			continue
		}
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case strings.HasPrefix(line, "→ "):
			if cur != nil && len(cur.expect) > 0 {
				flush()
			}
			if cur == nil {
				cur = &exchange{line: n}
			}
			cur.sends = append(cur.sends, strings.TrimPrefix(line, "→ "))
		case strings.HasPrefix(line, "← "):
			if cur == nil {
				t.Fatalf("README line %d: an answer with nothing sent before it", n)
			}
			if f := strings.TrimPrefix(line, "← "); f == "…" {
				cur.more = true
			} else {
				cur.expect = append(cur.expect, f)
			}
		default:
			t.Fatalf("README line %d: a transcript line is neither → nor ←: %q", n, line)
		}
	}
	flush()
	return out
}

// Sentinels of a parsed pattern.
const (
	anyValue    = "\x00any"  // … as a value or array element
	moreMembers = "\x00more" // … as an object member
)

// parsePattern parses an expected frame into a JSON value in which …
// outside strings became the sentinels.
func parsePattern(s string) (any, error) {
	var b strings.Builder
	var stack []byte // '{' or '['
	expectKey, inString, escaped := false, false, false
	for _, r := range s {
		if inString {
			b.WriteRune(r)
			switch {
			case escaped:
				escaped = false
			case r == '\\':
				escaped = true
			case r == '"':
				inString = false
			}
			continue
		}
		switch r {
		case '"':
			inString = true
		case '{':
			stack = append(stack, '{')
			expectKey = true
		case '[':
			stack = append(stack, '[')
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		case ':':
			expectKey = false
		case '…':
			if expectKey {
				b.WriteString(`"\u0000more":true`) // moreMembers, escaped
			} else {
				b.WriteString(`"\u0000any"`) // anyValue, escaped
			}
			continue
		}
		b.WriteRune(r)
	}
	return decode([]byte(b.String()))
}

func decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

var placeholder = regexp.MustCompile(`^<([^<>]+)>$`)

// match reports whether got matches the pattern want, binding the
// placeholders it names in caps.
func match(want, got any, caps map[string]string) bool {
	switch w := want.(type) {
	case string:
		if w == anyValue {
			return true
		}
		g, ok := got.(string)
		if !ok {
			return false
		}
		if m := placeholder.FindStringSubmatch(w); m != nil {
			if have, ok := caps[m[1]]; ok {
				return have == g
			}
			if g == "" {
				return false
			}
			caps[m[1]] = g
			return true
		}
		if strings.HasPrefix(w, "{") || strings.HasPrefix(w, "[") {
			wp, err1 := parsePattern(w)
			gv, err2 := decode([]byte(g))
			if err1 == nil && err2 == nil {
				return match(wp, gv, caps)
			}
		}
		return glob(w, g)
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		_, more := w[moreMembers]
		for k, wv := range w {
			if k == moreMembers {
				continue
			}
			gv, ok := g[k]
			if !ok || !match(wv, gv, caps) {
				return false
			}
		}
		if !more {
			for k := range g {
				if _, ok := w[k]; !ok {
					return false
				}
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return false
		}
		rest := len(w) > 0 && w[len(w)-1] == anyValue
		if rest {
			w = w[:len(w)-1]
			if len(g) < len(w) {
				return false
			}
		} else if len(g) != len(w) {
			return false
		}
		for i := range w {
			if !match(w[i], g[i], caps) {
				return false
			}
		}
		return true
	case json.Number:
		g, ok := got.(json.Number)
		return ok && g == w
	}
	return fmt.Sprint(want) == fmt.Sprint(got)
}

// glob matches s against pattern, in which … is any text.
func glob(pattern, s string) bool {
	parts := strings.Split(pattern, "…")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// fillIn replaces each <name> of a frame to send with what it was bound to.
func fillIn(t *testing.T, line int, frame string, caps map[string]string) string {
	t.Helper()
	return regexp.MustCompile(`<([^<>"]+)>`).ReplaceAllStringFunc(frame, func(s string) string {
		v, ok := caps[s[1:len(s)-1]]
		if !ok {
			t.Fatalf("README line %d sends %s, which no earlier answer gave", line, s)
		}
		return v
	})
}

// replayer is one connection replaying exchanges.
type replayer struct {
	t      *testing.T
	ctx    context.Context
	ws     *websocket.Conn
	frames chan []byte
	caps   map[string]string
	dump   bool
}

func (r *replayer) read() {
	defer close(r.frames)
	for {
		_, data, err := r.ws.Read(r.ctx)
		if err != nil {
			return
		}
		if r.dump {
			r.t.Logf("← %s", data)
		}
		r.frames <- data
	}
}

func (r *replayer) send(frame string) {
	r.t.Helper()
	if err := r.ws.Write(r.ctx, websocket.MessageText, []byte(frame)); err != nil {
		r.t.Fatalf("send %s: %v", frame, err)
	}
}

func (r *replayer) next(what func() string) []byte {
	r.t.Helper()
	select {
	case f, ok := <-r.frames:
		if !ok {
			r.t.Fatalf("the connection ended; %s", what())
		}
		return f
	case <-time.After(10 * time.Second):
		r.t.Fatalf("waited 10s; %s", what())
	}
	return nil
}

// replay runs one exchange.
func (r *replayer) replay(ex exchange) {
	t := r.t
	t.Helper()
	wants := make([]any, len(ex.expect))
	for i, e := range ex.expect {
		w, err := parsePattern(e)
		if err != nil {
			t.Fatalf("README line %d: the frame %s is not JSON with …: %v", ex.line, e, err)
		}
		wants[i] = w
	}
	for _, s := range ex.sends {
		r.send(fillIn(t, ex.line, s, r.caps))
	}
	matched := make([]bool, len(wants))
	left := len(wants)
	var extra []string
	status := func() string {
		var missing []string
		for i, m := range matched {
			if !m {
				missing = append(missing, ex.expect[i])
			}
		}
		return fmt.Sprintf("README line %d: the server has not answered\n  %s\nit sent besides\n  %s", ex.line,
			strings.Join(missing, "\n  "), strings.Join(extra, "\n  "))
	}
	for left > 0 {
		f := r.next(status)
		got, err := decode(f)
		if err != nil {
			t.Fatalf("the server sent %s: %v", f, err)
		}
		found := false
		for i, w := range wants {
			if matched[i] {
				continue
			}
			caps := map[string]string{}
			for k, v := range r.caps {
				caps[k] = v
			}
			if match(w, got, caps) {
				matched[i], found, r.caps = true, true, caps
				left--
				break
			}
		}
		if !found {
			extra = append(extra, string(f))
			if !ex.more {
				t.Fatalf("README line %d: the server sent a frame the README does not show:\n  %s\n%s", ex.line, f, status())
			}
		}
	}
	if ex.more {
		return
	}
	// Nothing more comes before the answer to a ping sent now.
	r.send(`{"jsonrpc":"2.0","id":"readme-barrier","method":"ping","params":{}}`)
	for {
		f := r.next(func() string { return "no answer to the ping" })
		if bytes.Contains(f, []byte(`"readme-barrier"`)) {
			return
		}
		t.Fatalf("README line %d: the server sent a frame the README does not show:\n  %s", ex.line, f)
	}
}

func TestREADMETranscriptsReplayAgainstTheServer(t *testing.T) {
	t.Parallel()
	exchanges := readmeExchanges(t, filepath.Join("..", "..", "README.md"))
	if len(exchanges) < 5 {
		t.Fatalf("the README has %d example exchanges; the transcript parser no longer finds them", len(exchanges))
	}
	d := newDirs(t)
	d.users = "" // as a newcomer runs it: no users file, the local token makes a connection root
	s := startServer(t, d.args())
	ctx := testCtx(t)
	ws, _, err := websocket.Dial(ctx, withLocalToken(s.wsURL(), s.addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)
	r := &replayer{t: t, ctx: ctx, ws: ws, frames: make(chan []byte, 1024), caps: map[string]string{}, dump: os.Getenv("BOTS_README_DUMP") != ""}
	go r.read()
	for _, ex := range exchanges {
		r.replay(ex)
	}
	// What the README says of the files.
	for _, f := range []string{filepath.Join(d.config, "bots", "motion", "bot.md"), filepath.Join(d.root, "motion", "AGENTS.md"),
		filepath.Join(d.config, "bots", "motion", "logs", "YWhwLXNlc3Npb246L2ZpcnN0.jsonl")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the README names %s: %v", f, err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(d.root, "motion", "CLAUDE.md")); err != nil || !strings.Contains(string(data), "@AGENTS.md") {
		t.Errorf("the README says CLAUDE.md imports @AGENTS.md; it holds %q (%v)", data, err)
	}
	if rows, _ := filepath.Glob(filepath.Join(d.config, "bots", "motion", "sessions", "work@*.json")); len(rows) != 1 {
		t.Errorf("the README names the back session's row work@….json; the sessions folder holds %v", rows)
	}
}

func TestTranscriptPatternsMatchWhatTheySay(t *testing.T) {
	t.Parallel()
	cases := []struct {
		want, got string
		ok        bool
	}{
		{`{"a":1,…}`, `{"a":1,"b":2}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`{"a":…}`, `{"a":[1,2]}`, true},
		{`{"a":[…]}`, `{"a":[]}`, true},
		{`{"a":[1,…]}`, `{"a":[1,2,3]}`, true},
		{`{"a":[1,…]}`, `{"a":[2]}`, false},
		{`{"a":[1]}`, `{"a":[1,2]}`, false},
		{`{"a":"x…z"}`, `{"a":"xyyz"}`, true},
		{`{"a":"x…z"}`, `{"a":"xyy"}`, false},
		{`{"d":"{\"id\":\"m\",…}"}`, `{"d":"{\"id\":\"m\",\"n\":1}"}`, true},
		{`{"d":"{\"id\":\"m\",…}"}`, `{"d":"{\"id\":\"x\",\"n\":1}"}`, false},
		{`{"id":"<turn>"}`, `{"id":"t-9"}`, true},
		{`{"id":"<turn>"}`, `{"id":""}`, false},
	}
	for _, c := range cases {
		w, err := parsePattern(c.want)
		if err != nil {
			t.Fatalf("%s: %v", c.want, err)
		}
		g, err := decode([]byte(c.got))
		if err != nil {
			t.Fatal(err)
		}
		if got := match(w, g, map[string]string{}); got != c.ok {
			t.Errorf("%s against %s: %v, want %v", c.want, c.got, got, c.ok)
		}
	}
	caps := map[string]string{"turn": "t-1"}
	w, _ := parsePattern(`{"id":"<turn>"}`)
	g, _ := decode([]byte(`{"id":"t-2"}`))
	if match(w, g, caps) {
		t.Error("a placeholder matched another value than the one it was bound to")
	}
}
