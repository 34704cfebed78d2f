package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
)

// echoServer is the floor of the wire benchmarks: a bare JSON-RPC echo
// over the same WebSocket library, answering every request
// {"jsonrpc":"2.0","id":N,"result":{}}.
func echoServer(tb testing.TB) *httptest.Server {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := context.Background()
		type response struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  struct{}        `json:"result"`
		}
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(data, &req) != nil {
				return
			}
			out, _ := json.Marshal(response{JSONRPC: "2.0", ID: req.ID})
			if ws.Write(ctx, websocket.MessageText, out) != nil {
				return
			}
		}
	}))
	tb.Cleanup(hs.Close)
	return hs
}

// benchClient is a benchmark's connection. It reads each answer into a buffer
// it keeps, as a client that minds its allocations does, so that reading
// a larger answer costs it a copy, not the growth of a new buffer each
// time: the floor and the server are measured, not the client.
type benchClient struct {
	ws  *websocket.Conn
	buf []byte
}

// rawDial opens a bare WebSocket to url with token (none when empty).
func rawDial(ctx context.Context, tb testing.TB, url, token string) *benchClient {
	tb.Helper()
	if token != "" {
		url += "?tkn=" + token
	}
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		tb.Fatalf("dial %s: %v", url, err)
	}
	ws.SetReadLimit(1 << 20)
	return &benchClient{ws: ws}
}

// roundTrip writes frame and reads the answer, which must carry id; the
// answer is valid until the next round trip.
func (c *benchClient) roundTrip(ctx context.Context, tb testing.TB, frame []byte, id string) []byte {
	if err := c.ws.Write(ctx, websocket.MessageText, frame); err != nil {
		tb.Fatal(err)
	}
	_, r, err := c.ws.Reader(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for {
		if n == len(c.buf) {
			c.buf = append(c.buf, make([]byte, max(1024, len(c.buf)))...)
		}
		m, err := r.Read(c.buf[n:])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	data := c.buf[:n]
	if !bytes.Contains(data, []byte(`"id":`+id+`,`)) || bytes.Contains(data, []byte(`"error"`)) {
		tb.Fatalf("%s answered %s", frame, data)
	}
	return data
}

func initializeFrame(id, clientID string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"` + clientID + `"}}`)
}

// BenchmarkResourceReadRoundTrip is a resourceRead of one bot over a
// loopback WebSocket against the floor of a bare JSON-RPC echo over the
// same library; ping is the server's answer to ping, the wire without the
// bot service. Goal: read ≤ 1.2× floor (issue 15).
func BenchmarkResourceReadRoundTrip(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		ctx := testCtx(b)
		hs := echoServer(b)
		ws := rawDial(ctx, b, "ws"+hs.URL[len("http"):]+"/", "")
		defer ws.ws.CloseNow()
		for i := 1; b.Loop(); i++ {
			id := strconv.Itoa(i)
			ws.roundTrip(ctx, b, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping","params":{"channel":"ahp-root://"}}`), id)
		}
	})
	b.Run("ping", func(b *testing.B) {
		ctx := testCtx(b)
		// the server's own wire, without the bot service: where the
		// time between floor and read goes.
		srv := startServer(b, newDirs(b).args("-log-level", "error"))
		ws := rawDial(ctx, b, srv.wsURL(), softToken)
		defer ws.ws.CloseNow()
		ws.roundTrip(ctx, b, initializeFrame("1", "bench"), "1")
		for i := 2; b.Loop(); i++ {
			id := strconv.Itoa(i)
			ws.roundTrip(ctx, b, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping","params":{"channel":"ahp-root://"}}`), id)
		}
	})
	b.Run("read", func(b *testing.B) {
		ctx := testCtx(b)
		ws := readyToRead(ctx, b)
		defer ws.ws.CloseNow()
		for i := 3; b.Loop(); i++ {
			id := strconv.Itoa(i)
			ws.roundTrip(ctx, b, readFrame(id), id)
		}
	})
	// paired alternates rounds of bare echoes and reads in every
	// iteration and reports their ratio, which holds up on a machine
	// shared with other work: x-floor in wall time, cpu-x-floor in the
	// CPU time of the process (client, server and echo are all in it).
	b.Run("paired", func(b *testing.B) {
		const round = 8
		ctx := testCtx(b)
		hs := echoServer(b)
		echo := rawDial(ctx, b, "ws"+hs.URL[len("http"):]+"/", "")
		defer echo.ws.CloseNow()
		ws := readyToRead(ctx, b)
		defer ws.ws.CloseNow()
		var floor, read, floorCPU, readCPU time.Duration
		n := 3
		for b.Loop() {
			t0, c0 := time.Now(), cpuTime()
			for range round {
				id := strconv.Itoa(n)
				echo.roundTrip(ctx, b, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping","params":{"channel":"ahp-root://"}}`), id)
				n++
			}
			t1, c1 := time.Now(), cpuTime()
			for range round {
				id := strconv.Itoa(n)
				ws.roundTrip(ctx, b, readFrame(id), id)
				n++
			}
			read += time.Since(t1)
			readCPU += cpuTime() - c1
			floor += t1.Sub(t0)
			floorCPU += c1 - c0
		}
		b.ReportMetric(float64(read)/float64(floor), "x-floor")
		b.ReportMetric(float64(readCPU)/float64(floorCPU), "cpu-x-floor")
	})
}

// readyToRead starts the server, makes bot://motion and returns an
// initialized connection to read it on.
func readyToRead(ctx context.Context, b *testing.B) *benchClient {
	d := newDirs(b)
	srv := startServer(b, d.args("-log-level", "error"))
	ws := rawDial(ctx, b, srv.wsURL(), softToken)
	ws.roundTrip(ctx, b, initializeFrame("1", "bench"), "1")
	ws.roundTrip(ctx, b, []byte(`{"jsonrpc":"2.0","id":2,"method":"resourceWrite","params":{"channel":"ahp-root://","uri":"bot://motion","encoding":"utf-8","createOnly":true,`+
		`"data":"{\"name\":\"Motion\",\"description\":\"Reads pull requests.\",\"instructions\":\"You review pull requests. Say what would break, in one paragraph.\",\"labels\":[\"review\",\"ci\"]}"}}`), "2")
	// Within 100 ms of its last change AGENTS.md is read from its file at
	// every read (the racy-clean rule of package persona); the benchmark
	// measures reads of a bot unchanged for longer, as most are, after
	// reading through that window.
	for i, made := 0, time.Now(); time.Since(made) < racyWindow; i++ {
		id := strconv.Itoa(1_000_000_000 + i)
		ws.roundTrip(ctx, b, readFrame(id), id)
	}
	return ws
}

// racyWindow outlasts persona's racy margin (100 ms): a read after it
// trusts an unchanged AGENTS.md's identity.
const racyWindow = 150 * time.Millisecond

// readFrame is the resourceRead of bot://motion with id.
func readFrame(id string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"resourceRead","params":{"channel":"ahp-root://","uri":"bot://motion"}}`)
}

func memStats() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// waitGoroutines polls until no more than n goroutines run, so that the
// connections just closed are gone before the next measurement.
func waitGoroutines(ctx context.Context, b *testing.B, n int) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			b.Fatalf("%d goroutines still run, want %d", runtime.NumGoroutine(), n)
		}
	}
}

// BenchmarkWireMake makes 5,000 bots one after another over one
// connection, as the peer was measured (issue 15), with the bots' folders
// and records on tmpfs (/dev/shm, when the machine has it), so that
// fsync is nearly free and the server's own work is measured. It reports
// the median make of the first 1,000 (p50-1k-ms) and the mean of the next
// 4,000 (mean-5k-ms) - the peer's 0.32 and 0.47 ms - the server process's
// CPU per make, and the ratio to the floor: a bare JSON-RPC echo of a
// frame of the same size over the same library, alternating with the
// makes in rounds of 100. Goal: ≤ 2× the peer's.
func BenchmarkWireMake(b *testing.B) {
	parent := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		parent = "/dev/shm"
	}
	const total, first, round = 5000, 1000, 100
	for b.Loop() {
		base, err := os.MkdirTemp(parent, "wire-make-")
		if err != nil {
			b.Fatal(err)
		}
		d := dirs{config: filepath.Join(base, "config"), root: filepath.Join(base, "bots"), users: filepath.Join(base, "users.json")}
		writeAtomic(b, d.users, usersJSON("soft"))
		ctx := testCtx(b)
		srv := startServer(b, d.args("-log-level", "error"))
		ws := rawDial(ctx, b, srv.wsURL(), softToken)
		ws.roundTrip(ctx, b, initializeFrame("1", "bench"), "1")
		hs := echoServer(b)
		echo := rawDial(ctx, b, "ws"+hs.URL[len("http"):]+"/", "")
		took := make([]time.Duration, 0, total)
		var floor, makes, cpu time.Duration
		for i := 0; i < total; i += round {
			t0 := time.Now()
			for j := range round {
				id := strconv.Itoa(2 + i + j)
				echo.roundTrip(ctx, b, makeFrame(id, "bot-"+id), id)
			}
			t1, c1 := time.Now(), cpuTime()
			for j := range round {
				id := strconv.Itoa(2 + i + j)
				s := time.Now()
				ws.roundTrip(ctx, b, makeFrame(id, "bot-"+id), id)
				took = append(took, time.Since(s))
			}
			cpu += cpuTime() - c1
			makes += time.Since(t1)
			floor += t1.Sub(t0)
		}
		ws.ws.CloseNow()
		echo.ws.CloseNow()
		srv.stop(b)
		os.RemoveAll(base)
		firsts := slices.Clone(took[:first])
		slices.Sort(firsts)
		var rest time.Duration
		for _, t := range took[first:] {
			rest += t
		}
		b.ReportMetric(float64(firsts[len(firsts)/2].Microseconds())/1e3, "p50-1k-ms")
		b.ReportMetric(float64(rest.Microseconds())/1e3/float64(total-first), "mean-5k-ms")
		b.ReportMetric(float64(cpu.Microseconds())/total, "cpu-µs/make")
		b.ReportMetric(float64(makes)/float64(floor), "x-echo")
	}
}

// makeFrame is the resourceWrite that makes bot id, as a client makes one.
func makeFrame(id, slug string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"resourceWrite","params":{"channel":"ahp-root://","uri":"bot://` + slug + `","encoding":"utf-8","createOnly":true,` +
		`"data":"{\"name\":\"Motion\",\"description\":\"Reads pull requests.\",\"instructions\":\"You review pull requests. Say what would break, in one paragraph.\",\"labels\":[\"review\",\"ci\"]}"}}`)
}

// replayServer is the floor of a wire benchmark whose answer is large: it
// answers every request with answer, its id put in, over the same
// WebSocket library - the bytes of the server's answer carried back
// without the server's work.
func replayServer(tb testing.TB, answer []byte) *httptest.Server {
	i := bytes.Index(answer, []byte(`"id":`))
	j := i + bytes.IndexByte(answer[i:], ',')
	head, tail := answer[:i+len(`"id":`)], answer[j:]
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := context.Background()
		var out []byte
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(data, &req) != nil {
				return
			}
			out = append(append(append(out[:0], head...), req.ID...), tail...)
			if ws.Write(ctx, websocket.MessageText, out) != nil {
				return
			}
		}
	}))
	tb.Cleanup(hs.Close)
	return hs
}

// seedServerBots writes n bots' files straight into the server's folders,
// as a host that made them would have left them, each tenth team
// backend's: making them through the server would take minutes.
func seedServerBots(tb testing.TB, d dirs, n int) {
	tb.Helper()
	at := time.Date(2026, 10, 11, 9, 0, 0, 0, time.UTC)
	for i := range n {
		id := "bot-" + strconv.Itoa(100000 + i)[1:]
		owner := "user:someone"
		if i%10 == 0 {
			owner = "team:backend"
		}
		work := filepath.Join(d.root, id)
		r := record.Record{ID: id, Body: "robot", Color: "teal", Session: "work", Workspace: work, Owner: owner, CreatedAt: at, UpdatedAt: at}
		dir := filepath.Join(d.config, "bots", id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "bot.md"), filerecord.Encode(r), 0o600); err != nil {
			tb.Fatal(err)
		}
		if err := os.MkdirAll(work, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "AGENTS.md"), []byte("---\nname: Bot\n---\n\nReview.\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkWireList lists bot:// over one connection with N bots on the
// server, as root (every bot: the peer's 3.4 ms at 5,000) and as soft, a
// member of team backend who may read a tenth, alternating in every
// iteration with the floor: the same answer's bytes carried back by a
// bare server over the same library. Goal: ≤ 3.4 ms at 5,000. 100,000
// bots are left out: the server does not start over them within the 20 s
// the harness waits (issue 15's start-up goals).
func BenchmarkWireList(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		b.Run("bots="+strconv.Itoa(n), func(b *testing.B) {
			d := newDirs(b)
			seedServerBots(b, d, n)
			ctx := testCtx(b)
			srv := startServer(b, d.args("-log-level", "error"))
			for _, who := range []struct{ name, token string }{{"root", rootToken}, {"member", softToken}} {
				b.Run(who.name, func(b *testing.B) {
					ws := rawDial(ctx, b, srv.wsURL(), who.token)
					defer ws.ws.CloseNow()
					ws.roundTrip(ctx, b, initializeFrame("1", "bench"), "1")
					frame := func(id string) []byte {
						return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"resourceList","params":{"channel":"ahp-root://","uri":"bot://"}}`)
					}
					answer := bytes.Clone(ws.roundTrip(ctx, b, frame("2"), "2"))
					hs := replayServer(b, answer)
					echo := rawDial(ctx, b, "ws"+hs.URL[len("http"):]+"/", "")
					defer echo.ws.CloseNow()
					var floor, list, floorCPU, listCPU time.Duration
					for i := 3; b.Loop(); i += 2 {
						t0, c0 := time.Now(), cpuTime()
						id := strconv.Itoa(i)
						echo.roundTrip(ctx, b, frame(id), id)
						t1, c1 := time.Now(), cpuTime()
						id = strconv.Itoa(i + 1)
						ws.roundTrip(ctx, b, frame(id), id)
						list += time.Since(t1)
						listCPU += cpuTime() - c1
						floor += t1.Sub(t0)
						floorCPU += c1 - c0
					}
					b.ReportMetric(float64(list)/float64(floor), "x-floor")
					b.ReportMetric(float64(listCPU)/float64(floorCPU), "cpu-x-floor")
					b.ReportMetric(float64(list.Microseconds())/1e3/float64(b.N), "ms/list")
				})
			}
		})
	}
}
