package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
)

// BenchmarkDBBackChatFollowedOnAnotherInstance sends a message to a bot
// on one of two instances on one database, which runs the back turn
// there, and times until a client of the other instance subscribed to
// the back session's chat sees that turn end, beside its floor: a client
// of the instance that runs it, subscribed to the same chat, timed from
// the same send. The medians, the other's p99 and the ratio of the
// medians are reported.
func BenchmarkDBBackChatFollowedOnAnotherInstance(b *testing.B) {
	a, o, chat := chatOnTwo(b, "ahp-session:/bench-back-follow")
	a.dispatch(chat, ahp.TurnStarted("t0", time.Now(), ahp.UserMessage("hi")))
	a.waitChatFor(chat, "the first turn", time.Minute, func(s ahp.ChatState) bool { return len(s.Turns) == 1 && s.ActiveTurn == nil })
	back := backOf(a.turn(chat, "t0"))
	for _, c := range []*ahpClient{a, o} {
		deadline := time.Now().Add(time.Minute)
		for c.call("subscribe", map[string]any{"channel": back}, nil, nil) != nil {
			if time.Now().After(deadline) {
				b.Fatal("the other instance does not hold the back session")
			}
			time.Sleep(20 * time.Millisecond) // polling with a deadline
		}
		c.subscribe(back)
		c.waitChatFor(back, "the first back turn", time.Minute, func(s ahp.ChatState) bool { return s.ActiveTurn == nil && len(s.Turns) > 0 })
	}
	var here, there []time.Duration
	n := 0
	for b.Loop() {
		n++
		id := fmt.Sprint("t", n)
		ended := func(s ahp.ChatState) bool {
			if s.ActiveTurn != nil || len(s.Turns) == 0 {
				return false
			}
			m, _ := s.Turns[len(s.Turns)-1].Message.Meta["vscode.chat.delegation"].(map[string]any)
			return m["sourceTurnId"] == id
		}
		t0 := time.Now()
		a.dispatch(chat, ahp.TurnStarted(id, t0, ahp.UserMessage("hi")))
		var wg sync.WaitGroup
		var dA, dB time.Duration
		wg.Go(func() { a.waitChatFor(back, "back turn of "+id, time.Minute, ended); dA = time.Since(t0) })
		wg.Go(func() { o.waitChatFor(back, "back turn of "+id, time.Minute, ended); dB = time.Since(t0) })
		wg.Wait()
		here, there = append(here, dA), append(there, dB)
		// The main turn ends once its post is in; the next message waits
		// for it.
		a.waitChatFor(chat, "turn "+id, time.Minute, func(s ahp.ChatState) bool {
			return s.ActiveTurn == nil && len(s.Turns) > 0 && s.Turns[len(s.Turns)-1].ID == id
		})
	}
	reportHereThere(b, here, there)
}
