package bot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/record/filerecord"
)

// BenchmarkServiceStartAtScale opens a file store over N seeded bots with
// their folders and starts the service over it, as a server's start does,
// and reports the two apart: open-ms (the store's load) and new-ms (the
// service's start: the guard's check of every bot, the persona migration
// scan, the folder index, the catalogue). N is 20,000, or
// BOTS_START_BOTS. The bots are on tmpfs when the machine has one.
func BenchmarkServiceStartAtScale(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("BOTS_START_BOTS")); err == nil && v > 0 {
		n = v
	}
	b.Run(fmt.Sprintf("bots=%d", n), func(b *testing.B) {
		base := tmpfs()
		var err error
		if base, err = os.MkdirTemp(base, "bots-start-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(base) })
		seedBots(b, base, n, true)
		ctx := context.Background()
		var open, start time.Duration
		for b.Loop() {
			t0 := time.Now()
			store, err := filerecord.Open(ctx, filerecord.Config{ConfigDir: filepath.Join(base, "config")})
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			svc, err := bot.New(ctx, bot.Config{
				Store: store, ConfigDir: filepath.Join(base, "config"), HostName: "h",
				Options: bot.Options{Root: filepath.Join(base, "bots")},
			})
			if err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			open += t1.Sub(t0)
			start += t2.Sub(t1)
			svc.Close()
			store.Close()
		}
		b.ReportMetric(float64(open.Milliseconds())/float64(b.N), "open-ms")
		b.ReportMetric(float64(start.Milliseconds())/float64(b.N), "new-ms")
		b.ReportMetric(0, "ns/op")
	})
}
