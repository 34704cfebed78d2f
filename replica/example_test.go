package replica_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/memchatlog"
	"github.com/agenthost/bots/replica"
)

// A chat decides a client's action on its state as it is, then logs,
// applies and publishes it, then does its step.
func ExampleDecide() {
	s := ahp.ChatState{Turns: ahp.List[ahp.Turn]{}}
	begin := ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("hello"))
	step, err := replica.Decide(s, begin, replica.Rules{}, nil)
	fmt.Println(step == replica.Begin, err)

	s = ahp.ApplyChat(s, begin)
	_, err = replica.Decide(s, ahp.TurnStarted("t2", time.Now(), ahp.UserMessage("again")), replica.Rules{}, nil)
	fmt.Println(err)
	// Output:
	// true <nil>
	// a turn is in progress
}

// Two instances write one shared log: each appends at the count of lines
// it holds, so the second learns it is behind, reads what it missed and
// decides again.
func ExampleLog() {
	ctx := context.Background()
	logs := &memchatlog.Logs{}
	key := chatlog.Key{Kind: chatlog.Chat, Bot: "tess", Session: "ahp-session:/c1"}
	_ = logs.Create(ctx, key, []byte(`{"kind":"open"}`))
	first := &replica.Log{Logs: logs, Shared: logs, Key: key, Lines: 1}
	second := &replica.Log{Logs: logs, Shared: logs, Key: key, Lines: 1}

	fmt.Println(first.Append(ctx, []byte(`{"by":"first"}`), true))
	err := second.Append(ctx, []byte(`{"by":"second"}`), true)
	fmt.Println(errors.Is(err, replica.ErrBehind))
	missed, _ := second.ReadNew(ctx)
	second.Lines += int64(len(missed))
	fmt.Println(string(missed[0]), second.Append(ctx, []byte(`{"by":"second"}`), true))
	// Output:
	// <nil>
	// true
	// {"by":"first"} <nil>
}
