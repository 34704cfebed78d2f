package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/internal/cputime"
)

// heapSample is the live heap after a GC at a time of a load run; warm
// once every chat has ended more turns than a chat holds in memory.
type heapSample struct {
	at   time.Duration
	heap uint64
	warm bool
}

// sampleHeap samples the live heap after a GC every `every` until done is
// closed. BOTS_LOAD_HEAP_PROFILE=<path> writes a heap profile at each
// sample, to <path>.1, <path>.2…, for `go tool pprof -base`.
func sampleHeap(done <-chan struct{}, every time.Duration, warm func() bool) []heapSample {
	begin := time.Now()
	var samples []heapSample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			runtime.GC()
			live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
			metrics.Read(live)
			samples = append(samples, heapSample{time.Since(begin).Round(time.Second), live[0].Value.Uint64(), warm()})
			if path := os.Getenv("BOTS_LOAD_HEAP_PROFILE"); path != "" {
				if f, err := os.Create(fmt.Sprint(path, ".", len(samples))); err == nil {
					pprof.WriteHeapProfile(f)
					f.Close()
				}
			}
		case <-done:
			return samples
		}
	}
}

// judgeHeap logs the samples and fails when the live heap rose more than
// growth bytes from the first sample after the warm-up (every chat having
// ended warmTurns turns) to the highest after it.
func judgeHeap(t *testing.T, samples []heapSample, warmTurns int, growth uint64) {
	t.Helper()
	mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
	var trace []string
	var first, last, peak *heapSample
	for i := range samples {
		x := &samples[i]
		mark := ""
		if !x.warm {
			mark = " (warming up)"
		}
		trace = append(trace, fmt.Sprintf("%s %.1f%s", x.at, mib(x.heap), mark))
		if !x.warm {
			continue
		}
		if first == nil {
			first = x
		}
		last = x
		if peak == nil || x.heap > peak.heap {
			peak = x
		}
	}
	t.Logf("live heap MiB by time: %s", strings.Join(trace, ", "))
	if first == nil || first == last {
		t.Logf("the run is too short to judge the heap once every chat has ended %d turns", warmTurns)
		return
	}
	t.Logf("after the warm-up: first %.1f MiB at %s, last %.1f MiB at %s, max %.1f MiB at %s",
		mib(first.heap), first.at, mib(last.heap), last.at, mib(peak.heap), peak.at)
	if peak.heap > first.heap+growth {
		t.Errorf("the heap grew from %.1f MiB to %.1f MiB under load, more than %d MiB: memory is not flat",
			mib(first.heap), mib(peak.heap), growth>>20)
	}
}

// chatLoad is a run of echo chats: people people, each on a connection of
// their own with a bot of their own, each sending a message, waiting for
// the reply, then thinking for think (±50%, at random) before the next.
type chatLoad struct {
	people int
	think  time.Duration
	length time.Duration
}

// chatLoadResult is what a chatLoad measured.
type chatLoadResult struct {
	turns, lost, dup int
	took             []time.Duration // each turn, message to reply, sorted
	elapsed          time.Duration
	cpu              time.Duration // the process's CPU time, server and clients
	samples          []heapSample  // when sampled
}

func (r chatLoadResult) percentile(p int) time.Duration {
	if len(r.took) == 0 {
		return 0
	}
	return r.took[min(len(r.took)-1, len(r.took)*p/100)]
}

func (r chatLoadResult) String() string {
	return fmt.Sprintf("%d turns in %s (%.0f/s), lost %d, duplicated %d; turn p50 %.1f ms, p99 %.1f ms, max %.1f ms; CPU %.0f µs a turn",
		r.turns, r.elapsed.Round(time.Second), float64(r.turns)/r.elapsed.Seconds(), r.lost, r.dup,
		ms(r.percentile(50)), ms(r.percentile(99)), ms(r.percentile(100)), r.cpuPerTurn())
}

// cpuPerTurn is the CPU time of a turn, server and client, in µs.
func (r chatLoadResult) cpuPerTurn() float64 {
	return float64(r.cpu.Microseconds()) / float64(max(r.turns, 1))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// start starts the server with l.people users, connects each, makes each
// a bot and a chat with it; run then runs the load on them.
func (l chatLoad) start(tb testing.TB) []*personChat {
	tb.Helper()
	if _, err := raiseFDLimit(); err != nil {
		tb.Fatal(err)
	}
	base := tb.TempDir()
	var users strings.Builder
	users.WriteString(`{"root": {"token": "root-token-0123456789"}, "users": [`)
	for p := range l.people {
		if p > 0 {
			users.WriteString(",")
		}
		fmt.Fprintf(&users, `{"id": "p%d", "token": "token-of-person-%d", "grants": ["bot:*", "session:create"]}`, p, p)
	}
	users.WriteString("]}")
	usersFile := filepath.Join(base, "users.json")
	if err := os.WriteFile(usersFile, []byte(users.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	s := startChatServer(tb, filepath.Join(base, "config"), filepath.Join(base, "bots"), "-users", usersFile)
	chats := make([]*personChat, l.people)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for p := range next {
				c := dialChat(tb, s.addr+fmt.Sprintf("/?tkn=token-of-person-%d", p), fmt.Sprint("p", p))
				c.keep = 2
				c.makeBot(fmt.Sprint("b", p), fmt.Sprintf(`{"name": "B%d"}`, p))
				chats[p] = &personChat{c: c, chat: c.openChat(fmt.Sprintf("ahp-session:/p%d", p), fmt.Sprint("b", p)), name: fmt.Sprint("B", p)}
			}
		})
	}
	for p := range l.people {
		next <- p
	}
	close(next)
	wg.Wait()
	// one turn each, so that every back session has started before the
	// load is measured.
	next = make(chan int)
	for range 32 {
		wg.Go(func() {
			for p := range next {
				o := chats[p]
				o.c.dispatch(o.chat, ahp.TurnStarted("warm", time.Now(), ahp.UserMessage("warm")))
				o.c.turn(o.chat, "warm")
			}
		})
	}
	for p := range l.people {
		next <- p
	}
	close(next)
	wg.Wait()
	return chats
}

// personChat is one person's connection and chat with their bot.
type personChat struct {
	c    *ahpClient
	chat string
	name string // the bot's name, which its echo reply starts with
}

// run runs the load for l.length on chats; warmTurns > 0 samples the heap
// every sampleEvery, warm once every chat ended warmTurns turns.
func (l chatLoad) run(chats []*personChat, warmTurns int, sampleEvery time.Duration) chatLoadResult {
	type result struct {
		turns, lost, dup int
		took             []time.Duration
	}
	results := make(chan result, len(chats))
	var cold atomic.Int64
	cold.Store(int64(len(chats)))
	begin, cpu := time.Now(), cputime.Process()
	deadline := begin.Add(l.length)
	var wg sync.WaitGroup
	for i, o := range chats {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 15))
			pause := func() time.Duration { return l.think/2 + time.Duration(rng.Int64N(int64(l.think)+1)) }
			var r result
			// start at a random point of the first pause, so that the
			// people do not all speak at once.
			t := time.NewTimer(time.Duration(rng.Int64N(int64(l.think) + 1)))
			defer t.Stop()
			for n := 0; ; n++ {
				<-t.C
				if !time.Now().Before(deadline) {
					break
				}
				id := fmt.Sprint("t", n)
				start := time.Now()
				o.c.dispatch(o.chat, ahp.TurnStarted(id, start, ahp.UserMessage(fmt.Sprint("m", n))))
				got := texts(o.c.turn(o.chat, id))
				r.took = append(r.took, time.Since(start))
				switch want := fmt.Sprintf("%s heard: m%d", o.name, n); {
				case len(got) == 0 || got[0] != want:
					r.lost++
				case len(got) > 1:
					r.dup++
				}
				r.turns++
				if r.turns == warmTurns {
					cold.Add(-1)
				}
				t.Reset(pause())
			}
			results <- r
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var out chatLoadResult
	if warmTurns > 0 {
		out.samples = sampleHeap(done, sampleEvery, func() bool { return cold.Load() == 0 })
	} else {
		<-done
	}
	out.elapsed, out.cpu = time.Since(begin), cputime.Process()-cpu
	close(results)
	for r := range results {
		out.turns += r.turns
		out.lost += r.lost
		out.dup += r.dup
		out.took = append(out.took, r.took...)
	}
	slices.Sort(out.took)
	return out
}

// loadEnv reads a duration from the environment, def when unset.
func loadEnv(tb testing.TB, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		tb.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

// TestLoadThousandPeopleEachWithABot is 1,000 people, each on a
// connection of their own chatting with a bot of their own, for
// BOTS_LOAD_SECONDS seconds (skipped when unset), each thinking
// BOTS_LOAD_THINK (default 2s, ±50%) between a reply and their next
// message: every turn is answered once, the 99th percentile of a turn
// (message to reply, over WebSocket) is at most 50 ms, and the live heap
// is flat after the warm-up (as in TestLoadManyBotsManyPeople).
// BOTS_LOAD_PEOPLE changes the number of people.
func TestLoadThousandPeopleEachWithABot(t *testing.T) {
	t.Parallel()
	secs, _ := strconv.Atoi(os.Getenv("BOTS_LOAD_SECONDS"))
	if secs <= 0 {
		t.Skip("set BOTS_LOAD_SECONDS to run the load test")
	}
	people := 1000
	if n, _ := strconv.Atoi(os.Getenv("BOTS_LOAD_PEOPLE")); n > 0 {
		people = n
	}
	const (
		warmTurns   = bot.KeepTurns + 2
		p99Goal     = 50 * time.Millisecond
		heapGrowth  = 16 << 20
		sampleEvery = 5 * time.Second
	)
	l := chatLoad{people: people, think: loadEnv(t, "BOTS_LOAD_THINK", 2*time.Second), length: time.Duration(secs) * time.Second}
	chats := l.start(t)
	r := l.run(chats, warmTurns, sampleEvery)
	t.Logf("%d people thinking %s: %s", people, l.think, r)
	if r.lost > 0 || r.dup > 0 {
		t.Errorf("lost %d, duplicated %d replies", r.lost, r.dup)
	}
	if p99 := r.percentile(99); p99 > p99Goal {
		t.Errorf("a turn's 99th percentile is %.1f ms, over the goal of %s", ms(p99), p99Goal)
	}
	judgeHeap(t, r.samples, warmTurns, heapGrowth)
}

// BenchmarkEchoChatPeople is the load of TestLoadThousandPeopleEachWithABot
// for 5 seconds, at 100 and 1,000 people thinking 2 s: turns a second and
// the median and 99th percentile of a turn.
func BenchmarkEchoChatPeople(b *testing.B) {
	for _, people := range []int{100, 1000} {
		b.Run(fmt.Sprintf("people=%d", people), func(b *testing.B) {
			l := chatLoad{people: people, think: 2 * time.Second, length: 5 * time.Second}
			chats := l.start(b)
			var all chatLoadResult
			for b.Loop() {
				r := l.run(chats, 0, 0)
				all.turns += r.turns
				all.lost += r.lost
				all.dup += r.dup
				all.elapsed += r.elapsed
				all.cpu += r.cpu
				all.took = append(all.took, r.took...)
			}
			if all.lost > 0 || all.dup > 0 {
				b.Errorf("lost %d, duplicated %d replies", all.lost, all.dup)
			}
			slices.Sort(all.took)
			b.ReportMetric(float64(all.turns)/all.elapsed.Seconds(), "turns/s")
			b.ReportMetric(ms(all.percentile(50)), "p50-ms")
			b.ReportMetric(ms(all.percentile(99)), "p99-ms")
			b.ReportMetric(all.cpuPerTurn(), "cpu-µs/turn")
			b.ReportMetric(0, "ns/op")
		})
	}
}
