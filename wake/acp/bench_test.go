package acp

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agenthost/bots/wake"
)

// reportQuantiles reports the p50 and p99 of ds in milliseconds.
func reportQuantiles(b *testing.B, ds []time.Duration, prefix string) time.Duration {
	b.Helper()
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	p50, p99 := ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
	b.ReportMetric(float64(p50.Microseconds())/1000, prefix+"p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, prefix+"p99-ms")
	return p50
}

// BenchmarkHarnessTurn is one turn through the harness over the fake agent
// answering at once ("pid": one text chunk, then the end of the turn), on a
// child already started: session/prompt, the update streamed into the
// Work, the turn's end. Compare BenchmarkBareACPPrompt, the agent's own
// time: the same prompt over the same kind of child with no harness.
func BenchmarkHarnessTurn(b *testing.B) {
	h := newBenchHarness(b)
	a, err := h.Open(context.Background(), wake.SessionInfo{URI: "ahp-session:/bench", Provider: "fake", Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		w := &fakeWork{text: "pid"}
		start := time.Now()
		if err := a.Turn(ctx, w); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	b.StopTimer()
	reportQuantiles(b, ds, "")
}

// bareClient is the least ACP client: it takes updates and refuses the
// rest.
type bareClient struct{ updates chan struct{} }

func (c bareClient) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	select {
	case c.updates <- struct{}{}:
	default:
	}
	return nil
}
func (bareClient) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{}, sdk.NewMethodNotFound("session/request_permission")
}
func (bareClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound("fs/read_text_file")
}
func (bareClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound("fs/write_text_file")
}
func (bareClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}
func (bareClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound("terminal/kill")
}
func (bareClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound("terminal/output")
}
func (bareClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound("terminal/release")
}
func (bareClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound("terminal/wait_for_exit")
}

// BenchmarkBareACPPrompt is the agent's own time for BenchmarkHarnessTurn:
// the same prompt to the same fake agent over stdio, through acp-go-sdk
// alone, waiting for the update and the response.
func BenchmarkBareACPPrompt(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	c := bareClient{updates: make(chan struct{}, 1)}
	conn := sdk.NewClientSideConnection(c, in, out)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		b.Fatal(err)
	}
	s, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: b.TempDir(), McpServers: []sdk.McpServer{}})
	if err != nil {
		b.Fatal(err)
	}
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: s.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("pid")}}); err != nil {
			b.Fatal(err)
		}
		<-c.updates
		ds = append(ds, time.Since(start))
	}
	b.StopTimer()
	reportQuantiles(b, ds, "")
}

// BenchmarkChildStartToReady is a session's start: the child spawned, then
// initialize and session/new answered (the tool server included), until
// the first prompt could be sent.
func BenchmarkChildStartToReady(b *testing.B) {
	h := newBenchHarness(b)
	dir := b.TempDir()
	ds := make([]time.Duration, 0, b.N)
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		start := time.Now()
		a, err := h.Open(ctx, wake.SessionInfo{URI: "ahp-session:/bench", Provider: "fake", Dir: dir})
		d := time.Since(start)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, d)
		b.StopTimer()
		a.Close()
		b.StartTimer()
	}
	reportQuantiles(b, ds, "")
}

func newBenchHarness(b *testing.B) *Harness {
	b.Helper()
	h, err := New(Config{
		Provider: "fake",
		Agent:    Command{Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{fakeEnv}},
		Environ:  func() []string { return []string{fakeEnv + "=1"} },
	})
	if err != nil {
		b.Fatal(err)
	}
	return h
}
