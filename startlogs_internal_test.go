package bots

import (
	"os"
	"slices"
	"testing"

	"github.com/agenthost/bots/chatlog"
)

// TestStartLogsAnswerEachKindsFirstListingFromOnePassAndLookAgainAfter:
// the first listing of either kind passes over the bot folders once for
// both; the other kind's first listing is that pass's answer, and every
// later listing of a kind looks at the files again.
func TestStartLogsAnswerEachKindsFirstListingFromOnePassAndLookAgainAfter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	l := newStartLogs(dir, nil)
	back := chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/a"}
	chat := chatlog.Key{Kind: chatlog.Chat, Bot: "notes", Session: "ahp-session:/b"}
	for _, k := range []chatlog.Key{back, chat} {
		if err := l.Create(ctx, k, []byte(`{"kind":"open"}`)); err != nil {
			t.Fatal(err)
		}
	}
	list := func(kind chatlog.Kind) []chatlog.Key {
		t.Helper()
		keys, err := l.List(ctx, kind)
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	if got := list(chatlog.Back); !slices.Equal(got, []chatlog.Key{back}) {
		t.Fatalf("first back listing %v, want %v", got, back)
	}
	// Removed after the pass: the chats' first listing is the pass's.
	if err := os.Remove(l.Path(chat)); err != nil {
		t.Fatal(err)
	}
	if got := list(chatlog.Chat); !slices.Equal(got, []chatlog.Key{chat}) {
		t.Fatalf("first chat listing %v, want the pass's %v", got, chat)
	}
	if got := list(chatlog.Chat); len(got) != 0 {
		t.Errorf("a second chat listing %v, want it to look again and find none", got)
	}
	later := chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/c"}
	if err := l.Create(ctx, later, []byte(`{"kind":"open"}`)); err != nil {
		t.Fatal(err)
	}
	if got := list(chatlog.Back); !slices.Equal(got, []chatlog.Key{back, later}) {
		t.Errorf("a second back listing %v, want it to look again and find %v and %v", got, back, later)
	}
}
