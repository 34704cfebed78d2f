package bot_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
)

// BenchmarkChatTurn is one echo chat turn through the transport (in
// memory): from chat/turnStarted to the reply's chat/turnComplete. It
// reports the p50 and p99 latency.
func BenchmarkChatTurn(b *testing.B) {
	e := newChatEnv(b, bot.Options{})
	e.makeBot(b, "motion", motionBody)
	c := e.connect(b, "soft")
	_, chat := c.open("ahp-session:/bench", "motion")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("t%d", i)
		start := time.Now()
		c.say(chat, id, "hi")
		c.turn(chat, id)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	_ = ahp.RootURI
}
