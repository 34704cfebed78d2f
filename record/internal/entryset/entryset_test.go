package entryset

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agenthost/bots/record"
)

func entry(id string) *record.Entry {
	return &record.Entry{Record: record.Record{ID: id}}
}

func TestLoadKeepsTheEntriesGivenAndSkipsNil(t *testing.T) {
	s := New()
	a, c := entry("a"), entry("c")
	s.Load([]*record.Entry{a, nil, c})
	if s.Len() != 2 {
		t.Fatalf("Len %d, want 2", s.Len())
	}
	if got, _ := s.Get("a"); got != a {
		t.Error("Get(a) is not the entry Load was given")
	}
	if _, ok := s.Get(""); ok {
		t.Error("a nil entry was put")
	}
	if ids := s.IDs(func(record.Record) bool { return true }); !slices.Equal(ids, []string{"a", "c"}) {
		t.Errorf("IDs %v, want [a c]", ids)
	}
}

func TestAPutAfterALoadKeepsSlugOrderAndLeavesTheOldEntryAsItWas(t *testing.T) {
	s := New()
	a := entry("a")
	s.Load([]*record.Entry{a, entry("c")})
	s.Put(record.Entry{Record: record.Record{ID: "b"}})
	s.Put(record.Entry{Record: record.Record{ID: "a", Name: "new"}})
	if ids := s.IDs(func(record.Record) bool { return true }); !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Errorf("IDs %v, want [a b c]", ids)
	}
	if a.Record.Name != "" {
		t.Errorf("the loaded entry was changed in place: name %q", a.Record.Name)
	}
	if got, _ := s.Get("a"); got.Record.Name != "new" {
		t.Errorf("Get(a) name %q, want the new revision's", got.Record.Name)
	}
}

func TestCopiesAreTheKeptEntriesInOrderAndTheCallersOwn(t *testing.T) {
	s := New()
	s.Load([]*record.Entry{entry("a"), entry("b"), entry("c")})
	got := s.Copies(func(r record.Record) bool { return r.ID != "b" })
	if len(got) != 2 || got[0].Record.ID != "a" || got[1].Record.ID != "c" {
		t.Fatalf("Copies %v, want a and c", got)
	}
	got[0].Record.Name = "changed"
	if e, _ := s.Get("a"); e.Record.Name != "" {
		t.Error("a copy shares its record with the set")
	}
	if none := s.Copies(func(record.Record) bool { return false }); none != nil {
		t.Errorf("Copies of none %v, want nil", none)
	}
}

// BenchmarkCopies copies 100,000 entries of full records, as a listing of
// every bot of a large host does.
func BenchmarkCopies(b *testing.B) {
	s := New()
	es := make([]*record.Entry, 100_000)
	for i := range es {
		es[i] = &record.Entry{Record: record.Record{ID: fmt.Sprintf("bot-%06d", i), Name: "Bot", Description: "A bot of many",
			Instructions: "Answer briefly.", Labels: []string{"a", "b"}, Tools: []string{"post_message"}, Owner: "user:soft"}, ETag: `"e"`}
	}
	s.Load(es)
	for b.Loop() {
		if len(s.Copies(func(record.Record) bool { return true })) != len(es) {
			b.Fatal("not every entry copied")
		}
	}
}
