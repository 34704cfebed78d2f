// Package chatlogtest is the conformance suite of chatlog.Logs: the file,
// memory and PostgreSQL implementations all run it, so a chat replayed
// from one replays the same from the others.
package chatlogtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/chatlog"
)

// Harness opens the logs the suite runs against.
type Harness struct {
	// Open returns logs on new, empty storage of their own, for one
	// check. Required.
	Open func(t *testing.T) chatlog.Logs
	// Reopen returns logs on the storage old was opened on. Nil when the
	// storage does not outlive its logs (memory): the reopen check is
	// then skipped.
	Reopen func(t *testing.T, old chatlog.Logs) chatlog.Logs
	// Tear leaves the start of a line at the end of key's log, as a
	// process killed mid-write (or a power loss) does. Nil when the
	// storage cannot tear a line (a database commits whole rows): the
	// torn-line check is then skipped.
	Tear func(t *testing.T, logs chatlog.Logs, key chatlog.Key)
}

// Wait bounds each check.
const Wait = 30 * time.Second

// Run runs the suite against h. Its subtests run one after the other.
func Run(t *testing.T, h Harness) {
	if h.Open == nil {
		t.Fatal("chatlogtest: Harness.Open is nil")
	}
	chat := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/chat-1"}
	t.Run("CreateThenReadGivesTheFirstLine", func(t *testing.T) {
		logs := h.Open(t)
		create(t, logs, chat, `{"kind":"open"}`)
		same(t, read(t, logs, chat), `{"kind":"open"}`)
	})
	t.Run("AppendedLinesComeBackInOrderByteForByte", func(t *testing.T) {
		logs := h.Open(t)
		create(t, logs, chat, `{"kind":"open"}`)
		want := []string{`{"kind":"open"}`}
		for i := range 300 {
			l := fmt.Sprintf(`{"n":%d,"text":"caf\u00e9 ☕ \"q\" \\ \t","pad":"%*s"}`, i, i%7, "")
			append1(t, logs, chat, l, i%3 == 0)
			want = append(want, l)
		}
		same(t, read(t, logs, chat), want...)
	})
	t.Run("CreateOfALogThatExistsIsErrExistAndKeepsIt", func(t *testing.T) {
		logs := h.Open(t)
		create(t, logs, chat, `{"n":1}`)
		if err := logs.Create(ctx(t), chat, []byte(`{"n":2}`)); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("a second Create = %v, want fs.ErrExist", err)
		}
		same(t, read(t, logs, chat), `{"n":1}`)
	})
	t.Run("AppendToNoLogIsErrNotExistAndMakesNone", func(t *testing.T) {
		logs := h.Open(t)
		if err := logs.Append(ctx(t), chat, []byte(`{"n":1}`), true); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Append to no log = %v, want fs.ErrNotExist", err)
		}
		if _, _, err := logs.Read(ctx(t), chat); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Read after an Append to no log = %v, want fs.ErrNotExist", err)
		}
		if keys := list(t, logs, chatlog.Chat); len(keys) != 0 {
			t.Fatalf("List after an Append to no log = %v", keys)
		}
	})
	t.Run("KindsBotsAndSessionsAreLogsOfTheirOwn", func(t *testing.T) {
		logs := h.Open(t)
		keys := []chatlog.Key{chat,
			{Kind: chatlog.Back, Bot: chat.Bot, Session: chat.Session},
			{Kind: chatlog.Chat, Bot: "other", Session: chat.Session},
			{Kind: chatlog.Chat, Bot: chat.Bot, Session: "ahp-session:/chat-2"},
		}
		for i, k := range keys {
			create(t, logs, k, fmt.Sprintf(`{"log":%d}`, i))
			append1(t, logs, k, fmt.Sprintf(`{"line":%d}`, i), false)
		}
		for i, k := range keys {
			same(t, read(t, logs, k), fmt.Sprintf(`{"log":%d}`, i), fmt.Sprintf(`{"line":%d}`, i))
		}
		sameKeys(t, list(t, logs, chatlog.Chat), keys[0], keys[2], keys[3])
		sameKeys(t, list(t, logs, chatlog.Back), keys[1])
	})
	t.Run("RemoveEndsTheLogAndAnAppendAfterIt", func(t *testing.T) {
		logs := h.Open(t)
		create(t, logs, chat, `{"n":1}`)
		if err := logs.Remove(ctx(t), chat); err != nil {
			t.Fatal(err)
		}
		if err := logs.Remove(ctx(t), chat); err != nil {
			t.Fatalf("removing a log already gone = %v", err)
		}
		if err := logs.Append(ctx(t), chat, []byte(`{"n":2}`), false); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Append after Remove = %v, want fs.ErrNotExist", err)
		}
		if keys := list(t, logs, chatlog.Chat); len(keys) != 0 {
			t.Fatalf("List after Remove = %v", keys)
		}
		create(t, logs, chat, `{"n":3}`)
		same(t, read(t, logs, chat), `{"n":3}`)
	})
	t.Run("BadKeysAndLinesAreRefused", func(t *testing.T) {
		logs := h.Open(t)
		for _, k := range []chatlog.Key{
			{Kind: "other", Bot: "motion", Session: "s"}, {Kind: chatlog.Chat, Bot: "../x", Session: "s"},
			{Kind: chatlog.Chat, Bot: "", Session: "s"}, {Kind: chatlog.Chat, Bot: "motion", Session: ""},
		} {
			if err := logs.Create(ctx(t), k, []byte("1")); err == nil {
				t.Errorf("Create of %+v succeeded", k)
			}
		}
		for _, l := range []string{"", "1\n2", " "} {
			if err := logs.Create(ctx(t), chat, []byte(l)); err == nil {
				t.Errorf("Create with the line %q succeeded", l)
			}
		}
		create(t, logs, chat, "1")
		if err := logs.Append(ctx(t), chat, []byte("2\n3"), true); err == nil {
			t.Error("Append of a line with a line break succeeded")
		}
		same(t, read(t, logs, chat), "1")
	})
	t.Run("ConcurrentAppendsToManyLogsAllStay", func(t *testing.T) {
		logs := h.Open(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				k := chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: fmt.Sprintf("ahp-session:/s%d", i)}
				if err := logs.Create(ctx(t), k, []byte("0")); err != nil {
					t.Error(err)
					return
				}
				for n := 1; n <= 25; n++ {
					if err := logs.Append(ctx(t), k, fmt.Appendf(nil, "%d", n), n%5 == 0); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		for i := range 8 {
			k := chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: fmt.Sprintf("ahp-session:/s%d", i)}
			var want []string
			for n := 0; n <= 25; n++ {
				want = append(want, fmt.Sprint(n))
			}
			same(t, read(t, logs, k), want...)
		}
	})
	t.Run("LogsSurviveAReopen", func(t *testing.T) {
		if h.Reopen == nil {
			t.Skip("Harness.Reopen is nil: the storage does not outlive its logs")
		}
		logs := h.Open(t)
		create(t, logs, chat, `{"n":1}`)
		append1(t, logs, chat, `{"n":2}`, false)
		append1(t, logs, chat, `{"n":3}`, true)
		again := h.Reopen(t, logs)
		same(t, read(t, again, chat), `{"n":1}`, `{"n":2}`, `{"n":3}`)
		sameKeys(t, list(t, again, chatlog.Chat), chat)
		append1(t, again, chat, `{"n":4}`, true)
		same(t, read(t, again, chat), `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`)
	})
	t.Run("ATornLastLineIsCutOffAndTheNextAppendStartsWhole", func(t *testing.T) {
		if h.Tear == nil {
			t.Skip("Harness.Tear is nil: the storage cannot tear a line")
		}
		logs := h.Open(t)
		create(t, logs, chat, `{"n":1}`)
		append1(t, logs, chat, `{"n":2}`, true)
		h.Tear(t, logs, chat)
		lines, bad, err := logs.Read(ctx(t), chat)
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) != 1 {
			t.Errorf("reading a torn log reports %q, want one problem", bad)
		}
		same(t, strs(lines), `{"n":1}`, `{"n":2}`)
		append1(t, logs, chat, `{"n":3}`, true)
		same(t, read(t, logs, chat), `{"n":1}`, `{"n":2}`, `{"n":3}`)
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), Wait)
	t.Cleanup(cancel)
	return c
}

func create(t *testing.T, logs chatlog.Logs, k chatlog.Key, line string) {
	t.Helper()
	if err := logs.Create(ctx(t), k, []byte(line)); err != nil {
		t.Fatalf("Create %s: %v", k, err)
	}
}

func append1(t *testing.T, logs chatlog.Logs, k chatlog.Key, line string, sync bool) {
	t.Helper()
	if err := logs.Append(ctx(t), k, []byte(line), sync); err != nil {
		t.Fatalf("Append to %s: %v", k, err)
	}
}

func read(t *testing.T, logs chatlog.Logs, k chatlog.Key) []string {
	t.Helper()
	lines, bad, err := logs.Read(ctx(t), k)
	if err != nil {
		t.Fatalf("Read %s: %v", k, err)
	}
	if len(bad) != 0 {
		t.Fatalf("Read %s reports %q", k, bad)
	}
	return strs(lines)
}

func strs(lines [][]byte) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}

func list(t *testing.T, logs chatlog.Logs, kind chatlog.Kind) []chatlog.Key {
	t.Helper()
	keys, err := logs.List(ctx(t), kind)
	if err != nil {
		t.Fatalf("List %s: %v", kind, err)
	}
	return keys
}

func same(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("the log reads\n%q\nwant\n%q", got, want)
	}
}

func sameKeys(t *testing.T, got []chatlog.Key, want ...chatlog.Key) {
	t.Helper()
	key := func(k chatlog.Key) string { return k.String() }
	g, w := slices.Sorted(slices.Values(mapKeys(got, key))), slices.Sorted(slices.Values(mapKeys(want, key)))
	if !slices.Equal(g, w) {
		t.Fatalf("List gives %q, want %q", g, w)
	}
}

func mapKeys(keys []chatlog.Key, f func(chatlog.Key) string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = f(k)
	}
	return out
}
