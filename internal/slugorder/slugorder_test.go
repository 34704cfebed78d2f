package slugorder

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSettleMergesWhatWasMadeAndDropsWhatWasDeleted(t *testing.T) {
	t.Parallel()
	o := New(func(s string) string { return s })
	o.Reset([]string{"c", "a", "e"})
	live := map[string]bool{"a": true, "c": true, "e": true}
	exists := func(id string) bool { return live[id] }
	o.Add("d")
	o.Add("b")
	live["b"], live["d"] = true, true
	delete(live, "c")
	o.Remove()
	o.Add("a") // noted twice
	if o.Settled() {
		t.Fatal("settled with changes noted")
	}
	o.Settle(exists)
	if got := o.IDs(); !slices.Equal(got, []string{"a", "b", "d", "e"}) {
		t.Fatalf("IDs %v", got)
	}
	if !o.Settled() {
		t.Fatal("not settled after Settle")
	}
}

func TestOrderFollowsRandomChanges(t *testing.T) {
	t.Parallel()
	o := New(func(s string) string { return s })
	live := map[string]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		for range rng.IntN(20) {
			id := fmt.Sprintf("bot-%03d", rng.IntN(300))
			if live[id] {
				delete(live, id)
				o.Remove()
			} else {
				live[id] = true
				o.Add(id)
			}
		}
		o.Settle(func(id string) bool { return live[id] })
		want := make([]string, 0, len(live))
		for id := range live {
			want = append(want, id)
		}
		slices.Sort(want)
		if !slices.Equal(o.IDs(), want) {
			t.Fatalf("round %d: IDs %v, want %v", round, o.IDs(), want)
		}
	}
}
