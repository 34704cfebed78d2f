package route_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/route"
)

func TestCheckServerTakesPlainTextOnlyOnThisMachine(t *testing.T) {
	t.Parallel()
	for server, ok := range map[string]bool{"127.0.0.1:6667": true, "localhost:1": true, "[::1]:5222": true, "irc.example.org:6667": false, "nohost": false} {
		err := route.CheckServer("IRC", server, false)
		if (err == nil) != ok {
			t.Errorf("CheckServer(%q, plain text) = %v", server, err)
		}
	}
	if err := route.CheckServer("IRC", "irc.example.org:6697", true); err != nil {
		t.Errorf("a TLS server elsewhere: %v", err)
	}
}

func TestNumberedListsTheOptionsAndSaysHowToAnswer(t *testing.T) {
	t.Parallel()
	got := route.Numbered(route.Question{Markdown: "Which?", Options: []route.Option{{Label: "Red"}, {Label: "Blue"}}})
	if got != "Which?\n1. Red\n2. Blue\nReply with a number." {
		t.Errorf("Numbered gave %q", got)
	}
	if got := route.Numbered(route.Question{Markdown: "Say it"}); got != "Say it" {
		t.Errorf("a question without options gave %q", got)
	}
	if got := route.List(" #a, ,#b ,"); strings.Join(got, "|") != "#a|#b" {
		t.Errorf("List gave %q", got)
	}
}

func TestPacerSpacesTheMessagesOfAScopeAndNotOfAnother(t *testing.T) {
	t.Parallel()
	p := &route.Pacer{Every: 50 * time.Millisecond}
	ctx := context.Background()
	start := time.Now()
	for range 3 {
		if err := p.Wait(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("three messages to one scope went in %v, want two spacings of 50ms at least", took)
	}
	other := time.Now()
	if err := p.Wait(ctx, "b"); err != nil || time.Since(other) > 40*time.Millisecond {
		t.Errorf("another scope waited %v (%v)", time.Since(other), err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	p.Wait(ctx, "c")
	if err := p.Wait(cancelled, "c"); err == nil {
		t.Error("a wait with its context done went through")
	}
}
