// Package goldentest runs the golden exchanges of the wire's tests: txtar
// archives whose "script" file says what clients send and records what
// they received, which -update rewrites. transport's tests run theirs
// against a fake host, bot's against the service.
//
// Script lines:
//
//	! conn NAME TOKEN        open a connection
//	! close NAME             the client closes it
//	! …                      a command of the test's own (Script.Command)
//	NAME> JSON               the client sends a frame
//	NAME< …                  what the server sent: made again at each run
//	# …                      a comment
//
// After each line every open connection is synchronised with a ping, the
// sender's first (once it is, all its frame caused has been queued for
// the others), and what each received is recorded as NAME< lines
// (NAME< closed: … when the connection ended, in the test's words when it
// says so: Script.Closed).
package goldentest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/bots/internal/txtar"
)

// Run runs each archive matching pattern as a parallel subtest: run
// answers the archive's script as it ran now (ar holds its other files).
// With update the archive is rewritten with that; otherwise a difference
// fails the subtest, which says to run accept to take it.
func Run(t *testing.T, pattern string, update bool, accept string, run func(t *testing.T, ar *txtar.Archive, script string) string) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no golden files match %s", pattern)
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
			got := run(t, ar, string(script))
			if update {
				ar.Set("script", []byte(got))
				if err := os.WriteFile(file, ar.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(strings.Split(string(script), "\n"), strings.Split(got, "\n")); diff != "" {
				t.Errorf("exchange differs from %s (-want +got); run %s to accept:\n%s", file, accept, diff)
			}
		})
	}
}

// Conn is a connection a script drives (transport.Conn).
type Conn interface {
	Send(ctx context.Context, msg []byte) error
	Recv(ctx context.Context) ([]byte, error)
	Close() error
}

// Script says how a test runs its script lines. Dial is required.
type Script struct {
	// Dial opens a connection presenting token.
	Dial func(ctx context.Context, token string) (Conn, error)
	// Command runs a "! …" line other than conn and close, given its
	// fields; it answers false for a command it does not know.
	Command func(fields []string, line string) (bool, error)
	// In rewrites a frame before it is sent, Out a frame received before
	// it is recorded; nil leaves them as they are.
	In, Out func(string) string
	// Settle, when set, is given the frame the sender sent and what it
	// received up to its synchronisation, and answers what to record: it
	// may wait for what the frame set going and synchronise again (more).
	Settle func(frame []byte, received []string, more func() []string) []string
	// Order, when set, orders what a connection received before it is
	// recorded.
	Order func([]string) []string
	// Closed says whether err, which a Send or a connection's receiving
	// ended with, is the server closing it, and how that is recorded.
	// Nil says no error is: an end is recorded as "closed: ERROR", and a
	// Send that failed fails the test.
	Closed func(err error) (line string, ok bool)
}

// conn is one connection of a script, with a goroutine receiving from it.
type conn struct {
	c     Conn
	recv  <-chan []byte
	ended <-chan error // the error Recv ended with
	dead  bool
}

// Run runs script and answers it as it ran: its lines, each followed by
// what every connection received.
func (s Script) Run(ctx context.Context, t *testing.T, script string) string {
	t.Helper()
	conns := map[string]*conn{}
	var order []string
	var out strings.Builder
	for n, line := range strings.Split(strings.TrimRight(script, "\n"), "\n") {
		if name, _, ok := strings.Cut(line, "< "); ok && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "!") &&
			!strings.Contains(name, " ") && !strings.Contains(name, ">") {
			continue // a recorded answer: made again below
		}
		out.WriteString(line + "\n")
		fail := func(format string, args ...any) {
			t.Fatalf("script line %d (%s): %s", n+1, line, fmt.Sprintf(format, args...))
		}
		var sender string
		var sent []byte
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "! "):
			f := strings.Fields(line[2:])
			switch {
			case len(f) == 3 && f[0] == "conn":
				c, err := s.Dial(ctx, f[2])
				if err != nil {
					fail("%v", err)
				}
				recv, ended := Receive(ctx, c)
				conns[f[1]] = &conn{c: c, recv: recv, ended: ended}
				order = append(order, f[1])
			case len(f) == 2 && f[0] == "close":
				c := conns[f[1]]
				if c == nil {
					fail("no connection %s", f[1])
				}
				c.c.Close()
				c.dead = true
			default:
				known := false
				var err error
				if s.Command != nil && len(f) > 0 {
					known, err = s.Command(f, line)
				}
				if !known {
					fail("unknown command")
				}
				if err != nil {
					fail("%v", err)
				}
			}
		default:
			name, frame, ok := strings.Cut(line, "> ")
			c := conns[name]
			if !ok || c == nil {
				fail("not a command")
			}
			if s.In != nil {
				frame = s.In(frame)
			}
			sender, sent = name, []byte(frame)
			if err := c.c.Send(ctx, sent); err != nil && !s.closes(err) {
				fail("send: %v", err) // a close is recorded by the sync below
			}
		}
		names := order
		if sender != "" {
			names = append([]string{sender}, order...)
		}
		synced := map[string]bool{}
		for _, name := range names {
			c := conns[name]
			if synced[name] || c.dead {
				continue
			}
			synced[name] = true
			got := s.sync(ctx, t, c)
			if name == sender && s.Settle != nil {
				got = s.Settle(sent, got, func() []string { return s.sync(ctx, t, c) })
			}
			if s.Order != nil {
				got = s.Order(got)
			}
			for _, l := range got {
				if s.Out != nil {
					l = s.Out(l)
				}
				out.WriteString(name + "< " + l + "\n")
			}
		}
	}
	return out.String()
}

// Receive receives from c until it ends, in a goroutine that then closes
// msgs, having sent the error Recv ended with on ended.
func Receive(ctx context.Context, c Conn) (msgs <-chan []byte, ended <-chan error) {
	recv, end := make(chan []byte, 1024), make(chan error, 1)
	go func() {
		defer close(recv)
		for {
			msg, err := c.Recv(ctx)
			if err != nil {
				end <- err
				return
			}
			recv <- msg
		}
	}()
	return recv, end
}

// syncFrame is the ping that synchronises a connection.
const syncFrame = `{"jsonrpc":"2.0","id":"~sync","method":"ping"}`

// closes says whether err is the server closing a connection.
func (s Script) closes(err error) bool {
	if s.Closed == nil {
		return false
	}
	_, ok := s.Closed(err)
	return ok
}

// sync pings c and answers what it received before the answer, or until
// the connection ended.
func (s Script) sync(ctx context.Context, t *testing.T, c *conn) []string {
	t.Helper()
	if c.dead {
		return nil
	}
	var got []string
	sendErr := c.c.Send(ctx, []byte(syncFrame))
	for {
		select {
		case msg, ok := <-c.recv:
			if !ok {
				err := <-c.ended
				c.dead = true
				line := fmt.Sprintf("closed: %v", err)
				if s.Closed != nil {
					if l, ok := s.Closed(err); ok {
						line = l
					}
				}
				return append(got, line)
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
