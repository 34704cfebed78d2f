package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The idle-connection benchmarks hold their clients in a child process
// (this test binary, running TestIdleClientsChild), so that the heap and
// goroutines measured are the server's alone, and so that each process
// needs one descriptor per connection, not two.
const (
	idleURLEnv   = "BOTS_IDLE_CHILD_URL"   // where the child dials
	idleCountEnv = "BOTS_IDLE_CHILD_COUNT" // how many connections
	idleFrameEnv = "BOTS_IDLE_CHILD_FRAME" // the frame each sends once; {i} is its index
)

// idleConnCounts are the sizes of the idle-connection curve.
var idleConnCounts = []int{1000, 10000}

// BenchmarkIdleConnectionMemory opens n connections from a child process,
// each answered once (an initialize on the server, a ping on the floor),
// and reports the server's heap, goroutine stacks and goroutines per
// connection, at 1,000 and 10,000 connections. The floor is the same
// connections to a bare JSON-RPC echo over the same library. Goals: server
// ≤ 16 KiB of heap per connection; one goroutine per idle connection, the
// reader the WebSocket library needs. BOTS_IDLE_HEAP_PROFILE=<path> writes
// the heap profile with the connections open, to <path>.<server|floor>.<n>.
func BenchmarkIdleConnectionMemory(b *testing.B) {
	if _, err := raiseFDLimit(); err != nil {
		b.Fatal(err)
	}
	for _, n := range idleConnCounts {
		b.Run(fmt.Sprintf("floor/conns=%d", n), func(b *testing.B) {
			hs := echoServer(b)
			url := "ws" + hs.URL[len("http"):] + "/"
			measureIdle(b, "floor", n, url, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}`)
		})
		b.Run(fmt.Sprintf("server/conns=%d", n), func(b *testing.B) {
			srv := startServer(b, newDirs(b).args("-log-level", "error"))
			measureIdle(b, "server", n, srv.wsURL()+"?tkn="+softToken, string(initializeFrame("1", "idle-{i}")))
		})
	}
}

// measureIdle has a child process open n connections to url, each sending
// frame once and reading its answer, and reports what they hold here.
func measureIdle(b *testing.B, name string, n int, url, frame string) {
	var heap, stack, gs float64
	runs := 0
	for b.Loop() {
		goroutines := runtime.NumGoroutine()
		before := memStats()
		child := startIdleClients(b, n, url, frame)
		after := memStats()
		nowG := runtime.NumGoroutine()
		if path := os.Getenv("BOTS_IDLE_HEAP_PROFILE"); path != "" {
			writeHeapProfile(b, fmt.Sprintf("%s.%s.%d", path, name, n))
		}
		heap += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		stack += float64(after.StackInuse) - float64(before.StackInuse)
		gs += float64(nowG - goroutines)
		runs++
		child.stop(b)
		waitGoroutines(testCtx(b), b, goroutines)
	}
	b.ReportMetric(heap/float64(runs*n), "heap-B/conn")
	b.ReportMetric(stack/float64(runs*n), "stack-B/conn")
	b.ReportMetric(gs/float64(runs*n), "goroutines/conn")
	b.ReportMetric(0, "ns/op")
}

func writeHeapProfile(tb testing.TB, path string) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		tb.Fatal(err)
	}
}

// idleClients is the child process holding the connections.
type idleClients struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startIdleClients starts the child and returns once every connection it
// opened was answered.
func startIdleClients(tb testing.TB, n int, url, frame string) *idleClients {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleClientsChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), idleURLEnv+"="+url, idleCountEnv+"="+strconv.Itoa(n), idleFrameEnv+"="+frame)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &idleClients{cmd: cmd, stdin: stdin}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); line == "ready" {
				ready <- nil
				break
			} else if strings.HasPrefix(line, "failed: ") {
				ready <- fmt.Errorf("the child: %s", line)
				break
			}
		}
		ready <- fmt.Errorf("the child ended before its connections were ready")
		io.Copy(io.Discard, stdout)
	}()
	select {
	case err = <-ready:
	case <-time.After(5 * time.Minute):
		err = fmt.Errorf("the child opened no %d connections in 5 minutes", n)
	}
	if err != nil {
		c.stop(tb)
		tb.Fatal(err)
	}
	return c
}

// stop closes the child's stdin, which closes its connections and ends it.
func (c *idleClients) stop(tb testing.TB) {
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		c.cmd.Process.Kill()
		<-done
		tb.Error("the idle clients did not end within a minute of their stdin closing")
	}
}

// TestIdleClientsChild is the child of the idle-connection benchmarks:
// skipped unless BOTS_IDLE_CHILD_URL is set. It opens the connections,
// prints "ready", and holds them until its stdin closes.
func TestIdleClientsChild(t *testing.T) {
	t.Parallel()
	url := os.Getenv(idleURLEnv)
	if url == "" {
		t.Skip("the child of BenchmarkIdleConnectionMemory")
	}
	n, _ := strconv.Atoi(os.Getenv(idleCountEnv))
	frame := os.Getenv(idleFrameEnv)
	if _, err := raiseFDLimit(); err != nil {
		fmt.Println("failed:", err)
		return
	}
	ctx := context.Background()
	conns := make([]*websocket.Conn, n)
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		next  = make(chan int)
	)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				ws, err := openIdle(ctx, url, strings.ReplaceAll(frame, "{i}", strconv.Itoa(i)))
				mu.Lock()
				if err != nil && first == nil {
					first = fmt.Errorf("connection %d: %w", i, err)
				}
				conns[i] = ws
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		fmt.Println("failed:", first)
	} else {
		fmt.Println("ready")
	}
	io.Copy(io.Discard, os.Stdin)
	for _, ws := range conns {
		if ws != nil {
			ws.CloseNow()
		}
	}
}

// openIdle dials url, sends frame and reads one answer.
func openIdle(ctx context.Context, url, frame string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		ws.CloseNow()
		return nil, err
	}
	if _, data, err := ws.Read(ctx); err != nil || strings.Contains(string(data), `"error"`) {
		ws.CloseNow()
		return nil, fmt.Errorf("answered %s: %v", data, err)
	}
	return ws, nil
}
