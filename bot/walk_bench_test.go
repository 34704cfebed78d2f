package bot

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agenthost/bots/bot/internal/rootwatch"
)

// BenchmarkFolderCheck is the check of a bot's folder every read makes:
// look, an Lstat of <root>/<slug>, as everywhere but Linux; watch, with
// the folder watch answering while nothing changed. The ratio is watch
// against look, both alternating in every iteration.
func BenchmarkFolderCheck(b *testing.B) {
	root := filepath.Join(b.TempDir(), "bots")
	dir := filepath.Join(root, "motion")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	look := &Service{root: root}
	watch := &Service{root: root, walk: rootwatch.New(root)}
	defer watch.walk.Close()
	check := func(s *Service) {
		if reason, err := s.folderEscape(dir); err != nil || reason != "" {
			b.Fatalf("refused: %q, %v", reason, err)
		}
	}
	check(watch)
	runtime.LockOSThread() // threadCPU is this thread's
	defer runtime.UnlockOSThread()
	const round = 64
	var lookCPU, watchCPU int64
	for b.Loop() {
		c0 := threadCPU()
		for range round {
			check(look)
		}
		c1 := threadCPU()
		for range round {
			check(watch)
		}
		watchCPU += threadCPU() - c1
		lookCPU += c1 - c0
	}
	b.ReportMetric(float64(lookCPU)/float64(b.N*round), "look-cpu-ns")
	b.ReportMetric(float64(watchCPU)/float64(b.N*round), "watch-cpu-ns")
	b.ReportMetric(float64(watchCPU)/float64(lookCPU), "x-look")
}
