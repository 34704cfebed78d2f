package chatlogtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/chatlog"
)

// SharedHarness opens the shared logs RunShared runs against.
type SharedHarness struct {
	// Open returns two handles on new, empty storage of their own, as two
	// processes on one database hold it, for one check. Required.
	Open func(t *testing.T) (a, b chatlog.Shared)
}

// RunShared runs the suite of chatlog.Shared against h: appends at a
// count, reading after a count, the heads, and following the writes of
// another handle. Its subtests run one after the other.
func RunShared(t *testing.T, h SharedHarness) {
	if h.Open == nil {
		t.Fatal("chatlogtest: SharedHarness.Open is nil")
	}
	chat := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/chat-1"}
	t.Run("AnAppendAtTheCountGoesInAndOneAtAnotherIsErrConflict", func(t *testing.T) {
		a, b := h.Open(t)
		create(t, a, chat, `"open"`)
		if err := a.AppendAt(ctx(t), chat, 1, []byte(`"a"`), true); err != nil {
			t.Fatalf("an append at the log's count: %v", err)
		}
		if err := b.AppendAt(ctx(t), chat, 1, []byte(`"b"`), true); !errors.Is(err, chatlog.ErrConflict) {
			t.Fatalf("an append at a count the log has passed answered %v, want ErrConflict", err)
		}
		if err := b.AppendAt(ctx(t), chat, 3, []byte(`"b"`), true); !errors.Is(err, chatlog.ErrConflict) {
			t.Fatalf("an append at a count the log has not reached answered %v, want ErrConflict", err)
		}
		if err := b.AppendAt(ctx(t), chat, 2, []byte(`"b"`), false); err != nil {
			t.Fatalf("an append at the count read: %v", err)
		}
		same(t, read(t, a, chat), `"open"`, `"a"`, `"b"`)
	})
	t.Run("OfFiftyAppendsAtOneCountExactlyOneGoesIn", func(t *testing.T) {
		a, b := h.Open(t)
		create(t, a, chat, `"open"`)
		var wg sync.WaitGroup
		errs := make(chan error, 50)
		for i := range 50 {
			logs := a
			if i%2 == 1 {
				logs = b
			}
			wg.Go(func() { errs <- logs.AppendAt(ctx(t), chat, 1, fmt.Appendf(nil, `"%d"`, i), true) })
		}
		wg.Wait()
		close(errs)
		in := 0
		for err := range errs {
			switch {
			case err == nil:
				in++
			case !errors.Is(err, chatlog.ErrConflict):
				t.Errorf("an append answered %v, want nil or ErrConflict", err)
			}
		}
		if got := read(t, a, chat); in != 1 || len(got) != 2 {
			t.Errorf("%d appends went in and the log holds %q, want one", in, got)
		}
	})
	t.Run("AnAppendAtACountToNoLogIsErrNotExist", func(t *testing.T) {
		a, _ := h.Open(t)
		if err := a.AppendAt(ctx(t), chat, 0, []byte(`"x"`), true); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("an append at a count to no log answered %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("ReadAfterGivesTheLinesAfterTheCount", func(t *testing.T) {
		a, b := h.Open(t)
		create(t, a, chat, `"open"`)
		append1(t, a, chat, `"1"`, true)
		append1(t, a, chat, `"2"`, false)
		for n, want := range [][]string{{`"open"`, `"1"`, `"2"`}, {`"1"`, `"2"`}, {`"2"`}, {}} {
			lines, err := b.ReadAfter(ctx(t), chat, int64(n))
			if err != nil {
				t.Fatal(err)
			}
			same(t, strs(lines), want...)
		}
		if _, err := b.ReadAfter(ctx(t), chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/none"}, 0); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ReadAfter of no log answered %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("HeadsCountEveryLogOfAKind", func(t *testing.T) {
		a, b := h.Open(t)
		other := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/chat-2"}
		back := chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/back"}
		create(t, a, chat, `"open"`)
		append1(t, a, chat, `"1"`, true)
		create(t, b, other, `"open"`)
		create(t, b, back, `"open"`)
		heads, err := b.Heads(ctx(t), chatlog.Chat)
		if err != nil {
			t.Fatal(err)
		}
		if len(heads) != 2 || heads[chat] != 2 || heads[other] != 1 {
			t.Errorf("Heads = %v, want %v at 2 and %v at 1", heads, chat, other)
		}
	})
	t.Run("FollowHearsEveryWriteOfAnotherHandleInOrder", func(t *testing.T) {
		a, b := h.Open(t)
		type heard struct {
			k chatlog.Key
			n int64
		}
		got := make(chan heard, 100)
		fctx, cancel := context.WithCancel(ctx(t))
		done := make(chan error, 1)
		go func() { done <- a.Follow(fctx, chatlog.Chat, func(k chatlog.Key, n int64) { got <- heard{k, n} }) }()
		defer func() { cancel(); <-done }()
		next := func() heard {
			select {
			case h := <-got:
				return h
			case <-time.After(Wait):
				t.Fatal("the follower heard nothing")
				return heard{}
			}
		}
		if h := next(); h.k != (chatlog.Key{}) {
			t.Fatalf("the follower first heard %v, want the zero key", h.k)
		}
		back := chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/back"}
		create(t, b, back, `"open"`) // another kind: not heard
		create(t, b, chat, `"open"`)
		for i := range 5 {
			if i%2 == 0 {
				append1(t, b, chat, fmt.Sprintf(`"%d"`, i), i%4 == 0)
			} else if err := b.AppendAt(ctx(t), chat, int64(i+1), fmt.Appendf(nil, `"%d"`, i), true); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Remove(ctx(t), chat); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int64{1, 2, 3, 4, 5, 6, 0} {
			if h := next(); h.k != chat || h.n != n {
				t.Fatalf("heard %v at %d, want %v at %d", h.k, h.n, chat, n)
			}
		}
	})
}
