package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
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
	cmd      *exec.Cmd
	addr     string
	listen   time.Duration // until its listening line
	healthz  time.Duration // until GET /healthz answered 200
	firstAns time.Duration // until the answer to a first initialize
	rssMiB   float64       // resident memory once /healthz answered and every bot was listed; 0 where unknown
}

// startTimed runs bin over config and root and times it up to the first
// answer: the listening line, then /healthz and a first initialize, as a
// client that connects at once would see them.
func startTimed(b *testing.B, bin, config, root string) startedServer {
	b.Helper()
	var st startedServer
	st.cmd = exec.Command(bin, "-addr", "127.0.0.1:0", "-config", config, "-root", root, "-host-name", hostName, "-log-level", "error")
	out, err := st.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := st.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		st.addr = strings.TrimPrefix(l, "listening on http://")
	case <-time.After(60 * time.Second):
		st.cmd.Process.Kill()
		st.cmd.Wait()
		b.Fatal("the server printed no listening line in 60 s")
	}
	st.listen = time.Since(t0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+st.addr+"/", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.CloseNow()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"start"}}`
	if err := ws.Write(ctx, websocket.MessageText, []byte(init)); err != nil {
		b.Fatal(err)
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if strings.Contains(string(data), `"id":1`) {
			if !strings.Contains(string(data), `"result"`) {
				b.Fatalf("initialize: %s", data)
			}
			break
		}
	}
	st.firstAns = time.Since(t0)
	resp, err := http.Get("http://" + st.addr + "/healthz")
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("/healthz: %s", resp.Status)
	}
	st.healthz = time.Since(t0)
	ws.SetReadLimit(-1) // the listing of every bot
	list := `{"jsonrpc":"2.0","id":2,"method":"resourceList","params":{"channel":"ahp-root://","uri":"bot://"}}`
	if err := ws.Write(ctx, websocket.MessageText, []byte(list)); err != nil {
		b.Fatal(err)
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if strings.Contains(string(data), `"id":2`) {
			break
		}
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
// floor: the process, its flags and listener, with nothing to load. It
// reports the medians, from exec, to the listening line, to the answer of
// a first initialize and to /healthz answering 200, and the ratio of
// first-answer times to the floor's. The goals: a first answer within
// 111 ms at 5,000 bots (the peer's), /healthz within 2 s at 100,000.
func BenchmarkServerStartup(b *testing.B) {
	bin := buildBenchServer(b)
	for _, n := range startupSizes() {
		b.Run(fmt.Sprintf("bots=%d", n), func(b *testing.B) {
			config, root := seedServer(b, n)
			emptyBase := b.TempDir()
			emptyConfig, emptyRoot := filepath.Join(emptyBase, "config"), filepath.Join(emptyBase, "bots")
			var floor, listen, first, health []time.Duration
			var rss []float64
			for b.Loop() {
				e := startTimed(b, bin, emptyConfig, emptyRoot)
				e.stop(b)
				st := startTimed(b, bin, config, root)
				st.stop(b)
				floor = append(floor, e.firstAns)
				listen = append(listen, st.listen)
				first = append(first, st.firstAns)
				health = append(health, st.healthz)
				rss = append(rss, st.rssMiB)
			}
			med := func(ds []time.Duration) float64 {
				ds = slices.Clone(ds)
				slices.Sort(ds)
				return float64(ds[len(ds)/2].Microseconds()) / 1000
			}
			b.ReportMetric(med(floor), "floor-first-ms")
			b.ReportMetric(med(listen), "listen-ms")
			b.ReportMetric(med(first), "first-answer-ms")
			b.ReportMetric(med(health), "healthz-ms")
			b.ReportMetric(med(first)/med(floor), "x-floor")
			slices.Sort(rss)
			b.ReportMetric(rss[len(rss)/2], "rss-MiB")
			b.ReportMetric(0, "ns/op")
		})
	}
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
