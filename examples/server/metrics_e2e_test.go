package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/wake/acp/acpfake"
)

// get answers GET url's status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// scrape reads the metrics served at addr.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, "http://"+addr+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return fams
}

// sample is the value of family name's sample whose labels include want
// (a counter's or gauge's value, a histogram's count), and whether there
// is one.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// labels turns "k=v,k=v" into a map.
func labels(s string) map[string]string {
	m := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// waitSample polls the metrics at addr until name{labels} is want, or
// fails after ten seconds saying what it was.
func waitSample(t *testing.T, addr, name, lbls string, want float64) {
	t.Helper()
	var got float64
	var ok bool
	if !waittest.Within(10*time.Second, func() bool {
		got, ok = sample(scrape(t, addr), name, labels(lbls))
		return ok && got == want
	}) {
		t.Fatalf("%s{%s} = %v (present %v), want %v", name, lbls, got, ok, want)
	}
}

// TestMetricsAfterAScriptedSessionCountWhatHappened drives the real
// server through a session - a bad token, bots made, chats, a turn that
// completes, one the echo agent fails, one whose ACP agent cannot start,
// one on an ACP agent that posts through MCP, a hand edit taken and one
// refused - and finds each series on the
// -metrics-addr listener with the value the session gives it; the AHP
// address serves no /metrics, and the profiles are on the metrics
// listener alone.
func TestMetricsAfterAScriptedSessionCountWhatHappened(t *testing.T) {
	d := newDirs(t)
	agents := filepath.Join(filepath.Dir(d.users), "agents.json")
	fake, err := json.Marshal(map[string]any{"command": os.Args[0], "args": []string{"-test.run=^$"}, "env": []string{acpfake.Env, acpfake.NoLoadEnv}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(agents, []byte(`{"agents": {"broken": {"command": "/nonexistent/agent-that-is-not-there"}, "fake": `+string(fake)+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(acpfake.Env, "1") // the fake agent is this test binary, run as one
	t.Setenv(acpfake.NoLoadEnv, "1")
	maddr := freeAddr(t)
	s := startServer(t, d.args("-metrics-addr", maddr, "-agents", agents, "-agents-unsandboxed"))

	if _, resp, err := dialErr(testCtx(t), s, "wrong-token", byQuery); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token was not refused with 401: %v %v", resp, err)
	}
	c := dialChat(t, s.addr+"/?tkn="+rootToken, "metrics")
	c.subscribe("x-ahpd-bots://")
	c.makeBot("motion", `{"name": "Motion"}`)
	c.makeBot("stuck", `{"name": "Stuck", "provider": "broken"}`)
	chat := c.openChat("ahp-session:/one", "motion")
	for id, words := range map[string]string{"t1": "hello", "t2": "fail"} {
		c.dispatch(chat, ahp.TurnStarted(id, time.Now(), ahp.UserMessage(words)))
		c.turn(chat, id)
	}
	stuck := c.openChat("ahp-session:/two", "stuck")
	c.dispatch(stuck, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("hello")))
	if turn := c.turn(stuck, "t1"); turn.State != ahp.TurnStateError {
		t.Fatalf("a turn on an agent that cannot start ended %s", turn.State)
	}
	c.makeBot("real", `{"name": "Real", "provider": "fake"}`)
	real := c.openChat("ahp-session:/three", "real")
	c.dispatch(real, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage(`call post_message {"text": "hello"}`)))
	if turn := c.turn(real, "t1"); turn.State != ahp.TurnStateComplete {
		t.Fatalf("the fake ACP agent's turn ended %s: %s", turn.State, mustJSON(turn))
	}
	if r := c.call("nosuchMethod", map[string]any{}, nil, nil); r == nil {
		t.Fatal("an unknown method was answered")
	}

	// By hand: a name changed is taken; an owner changed is refused.
	file := filepath.Join(d.config, "bots", "motion", "bot.md")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, file, strings.Replace(string(data), "name: Motion", "name: Motion Two", 1))
	waitSample(t, maddr, "bots_hand_edits_total", "result=taken", 1)
	data, _ = os.ReadFile(file)
	owner := ""
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "owner: "); ok {
			owner = v
		}
	}
	if owner == "" {
		t.Fatalf("bot.md names no owner: %s", data)
	}
	writeAtomic(t, file, strings.Replace(string(data), "owner: "+owner, "owner: user:kim", 1))
	waitSample(t, maddr, "bots_hand_edits_total", "result=refused", 1)

	fams := scrape(t, maddr)
	for _, w := range []struct {
		name, labels string
		want         float64
	}{
		{"bots_connections_total", "result=accepted", 1},
		{"bots_connections_total", "result=unauthenticated", 1},
		{"bots_connections_open", "", 1},
		{"bots_requests_total", "method=initialize,code=ok", 1},
		{"bots_requests_total", "method=resourceWrite,code=ok", 3},
		{"bots_requests_total", "method=createSession,code=ok", 3},
		{"bots_requests_total", "method=other,code=-32601", 1},
		{"bots_request_duration_seconds", "method=dispatchAction", 4},
		{"bots_turns_total", "outcome=complete", 2},
		{"bots_turns_total", "outcome=error", 2},
		{"bots_turns_total", "outcome=cancelled", 0},
		{"bots_turns_total", "outcome=interrupted", 0},
		{"bots_turn_first_part_seconds", "", 2},
		{"bots_turn_duration_seconds", "outcome=complete", 2},
		{"bots_turn_duration_seconds", "outcome=error", 2},
		{"bots_chats_open", "", 3},
		{"bots_back_sessions", "agent=echo,state=idle", 1},
		{"bots_back_sessions", "agent=fake,state=idle", 1},
		{"bots_agent_starts_total", "agent=broken,result=failed", 1},
		{"bots_agent_failures_total", "agent=broken,step=start", 1},
		{"bots_agent_starts_total", "agent=fake,result=ok", 1},
		{"bots_agent_failures_total", "agent=fake,step=turn", 0},
		{"bots_acp_call_duration_seconds", "agent=fake,method=initialize", 1},
		{"bots_acp_call_duration_seconds", "agent=fake,method=session/new", 1},
		{"bots_acp_call_duration_seconds", "agent=fake,method=session/prompt", 1},
		{"bots_mcp_call_duration_seconds", "agent=fake,tool=post_message", 2}, // the call, then the fake posts its result
		{"bots_store_operation_duration_seconds", "store=file,operation=create", 3},
		{"bots_catalogue_change_duration_seconds", "", 5}, // three made, two hand edits
		{"bots_disk_full_refusals_total", "", 0},
		{"bots_hand_edits_total", "result=taken", 1},
		{"bots_hand_edits_total", "result=refused", 1},
	} {
		got, ok := sample(fams, w.name, labels(w.labels))
		if !ok || got != w.want {
			t.Errorf("%s{%s} = %v (present %v), want %v", w.name, w.labels, got, ok, w.want)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_open_fds"} {
		if fams[name] == nil {
			t.Errorf("the runtime and process collectors give no %s", name)
		}
	}
	// Every change the catalogue sent went to its one subscriber.
	if h := fams["bots_catalogue_fanout_subscribers"]; h == nil || h.GetMetric()[0].GetHistogram().GetSampleCount() < 2 ||
		h.GetMetric()[0].GetHistogram().GetSampleSum() != float64(h.GetMetric()[0].GetHistogram().GetSampleCount()) {
		t.Errorf("the catalogue fan-out is %v, want at least the two bots made, each sent to one subscriber", h)
	}
	if got, ok := sample(fams, "bots_store_operation_duration_seconds", labels("store=file,operation=get")); !ok || got < 1 {
		t.Errorf("no store get was timed: %v %v", got, ok)
	}
	created, _ := sample(fams, "bots_chatlog_operation_duration_seconds", labels("store=file,operation=create"))
	synced, _ := sample(fams, "bots_chatlog_operation_duration_seconds", labels("store=file,operation=append_sync"))
	appended, _ := sample(fams, "bots_chatlog_operation_duration_seconds", labels("store=file,operation=append"))
	if created < 3 || synced+appended < 6 {
		t.Errorf("chat logs: %v made, %v+%v lines appended; want the two chats' logs at least, and their turns' lines", created, synced, appended)
	}

	// The AHP address serves people: no metrics, no profiles.
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		code, body := get(t, "http://"+s.addr+path+"?tkn="+rootToken)
		if code == http.StatusOK || strings.Contains(body, "bots_requests_total") || strings.Contains(body, "goroutine") {
			t.Errorf("the AHP address answers %s with %d: %.200s", path, code, body)
		}
	}
	if code, body := get(t, "http://"+maddr+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("the metrics listener's profiles answer %d: %.200s", code, body)
	}
	if code, _ := get(t, "http://"+maddr+"/debug/pprof/cmdline"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/cmdline answers %d, want 404: it would show the flags", code)
	}
}

// TestMetricsAddrIsOffByDefault: without -metrics-addr nothing but the
// AHP address listens, and it serves no /metrics.
func TestMetricsAddrIsOffByDefault(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	s := startServer(t, d.args())
	code, body := get(t, "http://"+s.addr+"/metrics?tkn="+rootToken)
	if code == http.StatusOK || strings.Contains(body, "bots_") {
		t.Errorf("/metrics on the AHP address answers %d: %.200s", code, body)
	}
}

// TestMetricsAddrRefusesTheAHPAddress: -metrics-addr may not be -addr.
func TestMetricsAddrRefusesTheAHPAddress(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	addr := freeAddr(t)
	args := d.args("-metrics-addr", addr)
	args[1] = addr
	if _, err := tryStart(args); err == nil || !strings.Contains(err.Error(), "-metrics-addr") {
		t.Fatalf("run with -metrics-addr = -addr: %v", err)
	}
}

// TestTracesGoToTheOTLPEndpointTheEnvironmentNames: with
// OTEL_EXPORTER_OTLP_ENDPOINT set, a chat turn's spans reach the collector
// there as OTLP/HTTP JSON, flushed when the server stops.
func TestTracesGoToTheOTLPEndpointTheEnvironmentNames(t *testing.T) {
	got := make(chan string, 1000)
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct{ Name string }
				}
			}
		}
		if r.URL.Path != "/v1/traces" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		for _, rs := range body.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					got <- s.Name
				}
			}
		}
	}))
	defer col.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	d := newDirs(t)
	s, err := tryStart(d.args())
	if err != nil {
		t.Fatal(err)
	}
	c := dialChat(t, s.addr+"/?tkn="+rootToken, "traces")
	c.makeBot("motion", `{"name": "Motion"}`)
	chat := c.openChat("ahp-session:/one", "motion")
	c.dispatch(chat, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("hello")))
	c.turn(chat, "t1")
	s.stop(t) // flushes the batch
	names := map[string]bool{}
	for len(got) > 0 {
		names[<-got] = true
	}
	for _, want := range []string{"ahp initialize", "ahp resourceWrite", "ahp dispatchAction", "chat turn", "wake", "back turn", "store get"} {
		if !names[want] {
			t.Errorf("the collector got no %q span; it got %v", want, names)
		}
	}
}

// TestMetricsCountTheLeasesOfAKilledInstancesMainTurnTakenOver: two
// instances on one database; the one running a main turn is killed; the
// other reads the turn as interrupted, counting one main-turn lease taken
// over, and the resumed turn takes the back session's lease it did not
// hold.
func TestMetricsCountTheLeasesOfAKilledInstancesMainTurnTakenOver(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	base := t.TempDir()
	db, root := pgtest.URL(t), filepath.Join(base, "bots")
	maddr := []string{freeAddr(t), freeAddr(t)}
	var cmds []*exec.Cmd
	var cs []*ahpClient
	for i, name := range []string{"a", "b"} {
		cmd, addr := startProcess(t, bin, filepath.Join(base, "config-"+name), root, "-db", db, "-lease-ttl", shortTTL.String(), "-metrics-addr", maddr[i])
		cmds, cs = append(cmds, cmd), append(cs, dialChat(t, addr, name))
	}
	a, b := cs[0], cs[1]
	a.makeBot("motion", `{"name": "Motion"}`)
	session := "ahp-session:/killed"
	a.must("createSession", map[string]any{"channel": session, "provider": "bot-chat", "config": map[string]any{"bot": "motion"}}, nil)
	chat := a.follow(session)
	b.follow(session)
	a.dispatch(chat, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("sleep 4")))
	b.waitChat(chat, "the back session, followed", func(s ahp.ChatState) bool {
		p := active(s)
		return len(p) > 0 && p[0].ToolCall != nil && len(p[0].ToolCall.Content) > 0
	})
	waitSample(t, maddr[0], "bots_leases_held", "kind=main_turn", 1)
	if err := cmds[0].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmds[0].Wait()
	waitSample(t, maddr[1], "bots_lease_takeovers_total", "kind=main_turn", 1)
	waitSample(t, maddr[1], "bots_turns_total", "outcome=interrupted", 1)
	b.waitChatFor(chat, "the killed turn read as interrupted", time.Minute, func(s ahp.ChatState) bool {
		return s.ActiveTurn == nil && len(s.Turns) == 1 && s.Turns[0].State == ahp.TurnStateError
	})
	b.dispatch(chat, ahp.TurnResume("t1"))
	b.waitChatFor(chat, "the resumed turn", time.Minute, func(s ahp.ChatState) bool {
		return s.ActiveTurn == nil && len(s.Turns) == 1 && s.Turns[0].State == ahp.TurnStateComplete
	})
	waitSample(t, maddr[1], "bots_lease_takeovers_total", "kind=back_session", 1)
	waitSample(t, maddr[1], "bots_turns_total", "outcome=complete", 1)
	fams := scrape(t, maddr[1])
	for _, op := range []string{"get", "create"} {
		if got, ok := sample(fams, "bots_store_operation_duration_seconds", labels("store=postgres,operation="+op)); !ok || (op == "get" && got < 1) {
			t.Errorf("postgres %s timed %v times (present %v)", op, got, ok)
		}
	}
	if got, _ := sample(fams, "bots_chatlog_operation_duration_seconds", labels("store=postgres,operation=append_sync")); got < 1 {
		if got2, _ := sample(fams, "bots_chatlog_operation_duration_seconds", labels("store=postgres,operation=append")); got2 < 1 {
			t.Errorf("no postgres chat log append timed")
		}
	}
}

// TestMetricsAddrNotLoopbackServesMetricsWithoutTheProfiles: an address
// the operator opens to others (all interfaces here) serves /metrics, and
// the profiles, which show what the server is doing, only on loopback.
func TestMetricsAddrNotLoopbackServesMetricsWithoutTheProfiles(t *testing.T) {
	t.Parallel()
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	d := newDirs(t)
	startServer(t, d.args("-metrics-addr", "0.0.0.0:"+port))
	local := "127.0.0.1:" + port
	if fams := scrape(t, local); fams["bots_requests_total"] == nil {
		t.Error("no bots_requests_total on a non-loopback -metrics-addr")
	}
	if code, _ := get(t, "http://"+local+"/debug/pprof/goroutine?debug=1"); code != http.StatusNotFound {
		t.Errorf("the profiles answer %d on a non-loopback -metrics-addr, want 404", code)
	}
}
