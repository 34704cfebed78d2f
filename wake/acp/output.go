package acp

import (
	"bufio"
	"bytes"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/connector"
)

// What a child writes besides ACP: its stderr, and text on its stdout
// that is not a JSON-RPC message. Both are the agent's own words about
// what went wrong (an agent that cannot reach its model retries in
// silence and says why only on stderr), so a child keeps the last of
// those lines, cleaned and scrubbed, for the sentence of a failure (see
// causes.go).

// tailLines is how many of its last lines of output a child keeps.
const tailLines = 20

// tail is the last lines a child wrote outside ACP, each one clean line
// with every secret taken out. Its methods may be called concurrently.
type tail struct {
	mu      sync.Mutex
	lines   []string      // the last tailLines lines, oldest first
	n       int           // lines ever added
	changed chan struct{} // closed and replaced at each add
}

// add keeps line, forgetting the oldest beyond tailLines.
func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
	t.n++
	t.lines = append(t.lines, line)
	if over := len(t.lines) - tailLines; over > 0 {
		t.lines = append(t.lines[:0:0], t.lines[over:]...)
	}
}

// next returns a channel closed when the next line is added.
func (t *tail) next() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed
}

// outMark is a point in a child's output: how many lines it had written,
// and when.
type outMark struct {
	n  int
	at time.Time
}

// mark is the point reached now: since(mark) returns the lines added
// after it.
func (t *tail) mark() outMark {
	t.mu.Lock()
	defer t.mu.Unlock()
	return outMark{n: t.n, at: time.Now()}
}

// quiet waits until no line was added for d, or for long at most: an
// agent that fails writes why on stderr first, and its answer may come
// in before the line is read.
func (t *tail) quiet(d, long time.Duration) {
	end := time.NewTimer(long)
	defer end.Stop()
	for {
		changed := t.next()
		still := time.NewTimer(d)
		select {
		case <-changed:
			still.Stop()
		case <-still.C:
			return
		case <-end.C:
			still.Stop()
			return
		}
	}
}

// since returns the lines kept that were added after m, oldest first.
func (t *tail) since(m outMark) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := min(t.n-m.n, len(t.lines))
	return append([]string(nil), t.lines[len(t.lines)-k:]...)
}

// scrubbers takes secrets out of a child's words: the harness's Scrubber,
// and the values of the variables the child is given whose names say they
// are secret (an agent may print the key it was refused).
type scrubbers []*connector.Scrubber

// childScrubbers returns the scrubbers of a child started with env.
func childScrubbers(cfg Config, env []string) scrubbers {
	own := &connector.Scrubber{}
	for _, kv := range env {
		if n, v, ok := strings.Cut(kv, "="); ok && secretName(n) {
			own.Add(v)
		}
	}
	return scrubbers{cfg.Scrubber, own}
}

// secretName reports whether a variable's name says it holds a secret.
func secretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// line is raw as one clean line with every secret taken out, without the
// terminal's colours and without a leading time stamp.
func (s scrubbers) line(raw string) string {
	raw = ansi.ReplaceAllString(raw, "")
	raw = strings.TrimLeft(stamp.ReplaceAllString(raw, ""), " ")
	return clean(s.text(raw))
}

// ansi is a terminal's escape sequence (colours, mostly), which agents
// such as Codex write on stderr.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// stamp is a time stamp that starts a log line: 2026-12-03T09:06:03.349Z.
var stamp = regexp.MustCompile(`^\s*\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?`)

// text is raw with every secret taken out.
func (s scrubbers) text(raw string) string {
	for _, sc := range s {
		if sc != nil {
			raw = sc.String(raw)
		}
	}
	return raw
}

// acpOnly reads a child's stdout and passes on only the lines that can be
// ACP (a JSON object or array, or blank); every other line goes to other
// instead, so that an agent that prints a banner or a warning on stdout
// does not make the connection log an error per line.
type acpOnly struct {
	r     *bufio.Reader
	other func(line string)
	buf   []byte // the rest of a line being passed on
	err   error  // the read error to return once buf is passed on
}

func newACPOnly(r io.Reader, other func(string)) *acpOnly {
	return &acpOnly{r: bufio.NewReaderSize(r, 64<<10), other: other}
}

func (a *acpOnly) Read(p []byte) (int, error) {
	for len(a.buf) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		line, err := a.r.ReadBytes('\n')
		a.err = err
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '{' && t[0] != '[' {
			a.other(string(t))
			continue
		}
		a.buf = line
	}
	n := copy(p, a.buf)
	a.buf = a.buf[n:]
	return n, nil
}
