package entryset

import (
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
