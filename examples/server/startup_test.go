package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// startupSizes are the numbers of bots the start-up benchmark seeds: 1,000,
// 5,000 (the peer's figure) and 10,000, and 100,000 with BOTS_LOAD_100K set.
func startupSizes() []int {
	sizes := []int{1000, 5000, 10000}
	if os.Getenv("BOTS_LOAD_100K") != "" {
		sizes = append(sizes, 100000)
	}
	return sizes
}

// seedServer writes n bots into the folders of a server directly, each a
// copy of one bot the server made over the wire (its bot.md and its work
// folder, the slug replaced), and answers the config and root folders.
func seedServer(b testing.TB, n int) (config, root string) {
	b.Helper()
	base := b.TempDir()
	config, root = filepath.Join(base, "config"), filepath.Join(base, "bots")
	d := dirs{config: config, root: root}
	srv := startServer(b, d.args())
	ctx := testCtx(b)
	c := dial(ctx, b, srv, "", byQuery)
	c.initialize(b, "seed")
	const model = "seed-bot-0"
	c.makeBot(b, model, `{"name":"Seed","description":"a bot of many","instructions":"Answer briefly."}`)
	c.close()
	srv.stop(b)
	copyTree := func(from, to, slug string) {
		ents, err := os.ReadDir(from)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(to, 0o700); err != nil {
			b.Fatal(err)
		}
		for _, e := range ents {
			if e.Type()&os.ModeSymlink != 0 {
				target, err := os.Readlink(filepath.Join(from, e.Name()))
				if err != nil {
					b.Fatal(err)
				}
				if err := os.Symlink(strings.ReplaceAll(target, model, slug), filepath.Join(to, e.Name())); err != nil {
					b.Fatal(err)
				}
				continue
			}
			if !e.Type().IsRegular() {
				continue
			}
			data, err := os.ReadFile(filepath.Join(from, e.Name()))
			if err != nil {
				b.Fatal(err)
			}
			data = []byte(strings.ReplaceAll(string(data), model, slug))
			if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range n {
		slug := fmt.Sprintf("seed-bot-%06d", i+1)
		copyTree(filepath.Join(config, "bots", model), filepath.Join(config, "bots", slug), slug)
		copyTree(filepath.Join(root, model), filepath.Join(root, slug), slug)
	}
	return config, root
}

// startedServer is a run of the built server, timed from its exec.
type startedServer struct {
	cmd       *exec.Cmd
	addr      string
	firstAns  time.Duration // until the answer to a first initialize, sent as soon as a connection is taken
	firstList time.Duration // until the answer to a listing of every bot, sent right after that answer
	healthz   time.Duration // until GET /healthz answered 200, asked after the listing
	listen    time.Duration // until its listening line (printed once the bots are loaded)
	rssMiB    float64       // resident memory once /healthz answered and every bot was listed; 0 where unknown
}

// freeAddr is a loopback address with a port free a moment ago, for a
// server whose address must be known before it prints it.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startTimed runs bin over config and root and times it as a client that
// connects as soon as the server takes a connection sees it: the answer
// to a first initialize, then to a listing of every bot (which must hold
// bots of them), then /healthz answering 200, and the listening line.
func startTimed(b *testing.B, bin, config, root string, bots int) startedServer {
	b.Helper()
	st := startedServer{addr: freeAddr(b)}
	token := presetLocalToken(b, config)
	st.cmd = exec.Command(bin, "-addr", st.addr, "-config", config, "-root", root, "-host-name", hostName, "-log-level", "error")
	out, err := st.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := st.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line := make(chan time.Duration, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() && strings.HasPrefix(sc.Text(), "listening on http://") {
			line <- time.Since(t0)
		}
		io.Copy(io.Discard, out)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ws *websocket.Conn
	for ws == nil {
		if ws, _, err = websocket.Dial(ctx, "ws://"+st.addr+"/?tkn="+token, nil); err != nil {
			if ctx.Err() != nil {
				st.cmd.Process.Kill()
				st.cmd.Wait()
				b.Fatalf("the server took no connection in 60 s: %v", err)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	defer ws.CloseNow()
	ws.SetReadLimit(-1) // the listing of every bot
	call := func(id int, req string) []byte {
		if err := ws.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
			b.Fatal(err)
		}
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(string(data), fmt.Sprintf(`"id":%d`, id)) {
				if !strings.Contains(string(data), `"result"`) {
					b.Fatalf("request %d: %.300s", id, data)
				}
				return data
			}
		}
	}
	call(1, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"start"}}`)
	st.firstAns = time.Since(t0)
	list := call(2, `{"jsonrpc":"2.0","id":2,"method":"resourceList","params":{"channel":"ahp-root://","uri":"bot://"}}`)
	st.firstList = time.Since(t0)
	if got := strings.Count(string(list), `"name":`); got != bots {
		b.Fatalf("the first listing holds %d bots, want %d", got, bots)
	}
	for {
		resp, err := http.Get("http://" + st.addr + "/healthz")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode != http.StatusServiceUnavailable || ctx.Err() != nil {
			b.Fatalf("/healthz: %s", resp.Status)
		}
		time.Sleep(200 * time.Microsecond)
	}
	st.healthz = time.Since(t0)
	select {
	case st.listen = <-line:
	case <-ctx.Done():
		b.Fatal("the server printed no listening line")
	}
	st.rssMiB = residentMiB(st.cmd.Process.Pid)
	return st
}

// residentMiB is the resident memory of process pid (VmRSS), or 0 where
// /proc does not say.
func residentMiB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				return 0
			}
			return float64(kb) / 1024
		}
	}
	return 0
}

// stop ends the server with SIGTERM, as an operator would, and waits.
func (st startedServer) stop(b *testing.B) {
	st.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- st.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		st.cmd.Process.Kill()
		<-done
		b.Fatal("the server did not stop in 30 s after SIGTERM")
	}
}

// BenchmarkServerStartup starts the built server (examples/server) over
// 1,000, 5,000 and 10,000 seeded bots (100,000 with BOTS_LOAD_100K),
// alternating in every iteration with a start over no bot at all, the
// floor: the process, its flags and listener, with nothing to load. The
// client dials until the server takes its connection, as a client
// started with the server would. It reports the medians, from exec, to
// the answer of a first initialize, to the answer of a listing of every
// bot sent right after it, to /healthz answering 200 and to the
// listening line, and the ratio of first-answer times to the floor's.
// The goals: a first answer within 111 ms at 5,000 bots (the peer's),
// /healthz within 2 s at 100,000.
//
// Those starts are restarts: they find the load cache (bots.cache) a
// start before them wrote over the same bots, as every start but a
// host's first does. Each iteration also makes a first start, with the
// cache put aside (cold-healthz-ms), and puts it back after.
//
// BOTS_STARTUP_AGAINST names another build of the server (say main's),
// run in turn in every iteration too, over the same bots: its medians
// are reported as against-*.
func BenchmarkServerStartup(b *testing.B) {
	bin := buildBenchServer(b)
	against := os.Getenv("BOTS_STARTUP_AGAINST")
	for _, n := range startupSizes() {
		b.Run(fmt.Sprintf("bots=%d", n), func(b *testing.B) {
			config, root := seedServer(b, n)
			writeLoadCache(b, bin, config, root, n+2)
			emptyBase := b.TempDir()
			emptyConfig, emptyRoot := filepath.Join(emptyBase, "config"), filepath.Join(emptyBase, "bots")
			var floor, first, list, health, listen, cold, other, otherList, otherListen []time.Duration
			var rss []float64
			for b.Loop() {
				e := startTimed(b, bin, emptyConfig, emptyRoot, 1) // the builder bot
				e.stop(b)
				st := startTimed(b, bin, config, root, n+2) // the seeded, their model and the builder
				st.stop(b)
				floor = append(floor, e.firstAns)
				first = append(first, st.firstAns)
				list = append(list, st.firstList)
				health = append(health, st.healthz)
				listen = append(listen, st.listen)
				rss = append(rss, st.rssMiB)
				cold = append(cold, coldStart(b, bin, config, root, n+2).healthz)
				if against != "" {
					o := startTimed(b, against, config, root, n+2)
					o.stop(b)
					other = append(other, o.firstAns)
					otherList = append(otherList, o.firstList)
					otherListen = append(otherListen, o.listen)
				}
			}
			med := func(ds []time.Duration) float64 {
				ds = slices.Clone(ds)
				slices.Sort(ds)
				return float64(ds[len(ds)/2].Microseconds()) / 1000
			}
			b.ReportMetric(med(floor), "floor-first-ms")
			b.ReportMetric(med(first), "first-answer-ms")
			b.ReportMetric(med(list), "first-list-ms")
			b.ReportMetric(med(health), "healthz-ms")
			b.ReportMetric(med(listen), "listen-ms")
			b.ReportMetric(med(cold), "cold-healthz-ms")
			b.ReportMetric(med(first)/med(floor), "x-floor")
			if against != "" {
				b.ReportMetric(med(other), "against-first-ms")
				b.ReportMetric(med(otherList), "against-list-ms")
				b.ReportMetric(med(otherListen), "against-listen-ms")
			}
			slices.Sort(rss)
			b.ReportMetric(rss[len(rss)/2], "rss-MiB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// writeLoadCache starts bin over config and root, holding bots bots, and
// stops it once it has written its load cache, as a host's first start
// does a while after it serves. A start over files written within the
// last two seconds keeps none of them in its cache, so a start that
// writes none in ten seconds is followed by another.
func writeLoadCache(b *testing.B, bin, config, root string, bots int) {
	b.Helper()
	path := filepath.Join(config, "bots.cache")
	for range 3 {
		st := startTimed(b, bin, config, root, bots)
		deadline := time.Now().Add(10 * time.Second)
		_, err := os.Stat(path)
		for ; err != nil && time.Now().Before(deadline); _, err = os.Stat(path) {
			time.Sleep(50 * time.Millisecond)
		}
		st.stop(b)
		if err == nil {
			return
		}
	}
	b.Fatalf("three starts over %s wrote no load cache", config)
}

// coldStart times a start of bin over config and root with no load cache,
// as a host's first start is: the cache is put aside, and back once the
// server has stopped (which may have begun writing another).
func coldStart(b *testing.B, bin, config, root string, bots int) startedServer {
	b.Helper()
	path := filepath.Join(config, "bots.cache")
	aside := filepath.Join(b.TempDir(), "bots.cache")
	if err := os.Rename(path, aside); err != nil {
		b.Fatal(err)
	}
	st := startTimed(b, bin, config, root, bots)
	st.stop(b)
	if err := os.Rename(aside, path); err != nil {
		b.Fatal(err)
	}
	return st
}

// buildBenchServer builds the server once per benchmark run.
func buildBenchServer(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "server")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestTheServerAnswersInitializeWhileItsBotsLoadAndWhatNeedsThemInFull(t *testing.T) {
	t.Parallel()
	const n = 2000
	config, root := seedServer(t, n)
	// Whether the first initialize comes before the load ends is up to
	// the scheduler: a start where it did not proves nothing, so up to
	// three starts are made. Every start's answers must be whole.
	for attempt := 1; ; attempt++ {
		if loading := startAndAskAtOnce(t, config, root, n+2); loading {
			break
		} else if attempt == 3 {
			t.Fatal("in three starts over 2,000 bots the first initialize came after the load every time")
		}
	}
}

// startAndAskAtOnce runs the server over config and root, dials it until
// it takes the connection, and sends at once an initialize, a listing of
// bot:// and a subscribe to the catalogue; the listing must hold bots
// bots and the catalogue at least as many. It answers whether the
// initialize said the bots were still loading, and stops the server.
func startAndAskAtOnce(t *testing.T, config, root string, bots int) (loading bool) {
	t.Helper()
	addr := freeAddr(t)
	token := presetLocalToken(t, config)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"-addr", addr, "-config", config, "-root", root, "-host-name", hostName, "-log-level", "error"}, pw)
		pw.Close()
		done <- err
	}()
	go io.Copy(io.Discard, pr)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run returned %v", err)
		}
	}()
	tctx := testCtx(t)
	var ws *websocket.Conn
	for ws == nil {
		var err error
		if ws, _, err = websocket.Dial(tctx, "ws://"+addr+"/?tkn="+token, nil); err != nil {
			if tctx.Err() != nil {
				t.Fatalf("the server took no connection: %v", err)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	defer ws.CloseNow()
	ws.SetReadLimit(-1)
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersions":["1.0.0"],"clientId":"early"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resourceList","params":{"uri":"bot://"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"channel":"x-ahpd-bots://"}}`,
	} {
		if err := ws.Write(tctx, websocket.MessageText, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	for got := 0; got < 3; {
		_, data, err := ws.Read(tctx)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			ID     int
			Result json.RawMessage
			Error  json.RawMessage
		}
		if err := json.Unmarshal(data, &m); err != nil || m.ID == 0 {
			continue // a notification
		}
		got++
		if m.Error != nil {
			t.Fatalf("request %d: %s", m.ID, m.Error)
		}
		switch m.ID {
		case 1:
			var r struct {
				Meta map[string]any `json:"_meta"`
			}
			json.Unmarshal(m.Result, &r)
			loading = r.Meta["ahpd.loading"] == true
		case 2:
			var r struct{ Entries []struct{ Name string } }
			json.Unmarshal(m.Result, &r)
			if len(r.Entries) != bots {
				t.Errorf("a listing sent with the first initialize holds %d bots, want %d", len(r.Entries), bots)
			}
		case 3:
			var r struct {
				Snapshot struct {
					State struct{ Bots []json.RawMessage }
				}
			}
			json.Unmarshal(m.Result, &r)
			if len(r.Snapshot.State.Bots) != bots {
				t.Errorf("a catalogue subscribed with the first initialize holds %d bots, want %d", len(r.Snapshot.State.Bots), bots)
			}
		}
	}
	return loading
}
