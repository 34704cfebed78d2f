package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
)

// The end-to-end tests of back sessions across a restart of the built
// server: stopped gracefully (SIGTERM) or killed (SIGKILL), the next
// message continues the same back session, whose chat still opens with its
// earlier turns.

// backOf returns the back chat a main turn's subagent call opens, or "".
func backOf(t ahp.Turn) string {
	for _, p := range t.ResponseParts {
		if p.ToolCall != nil && len(p.ToolCall.Content) > 0 {
			return p.ToolCall.Content[0].Resource
		}
	}
	return ""
}

// runBack starts turn id of chat with msg, which the echo agent answers
// in a back turn that takes a while ("sleep 60"), and returns the back
// session's URI once c, subscribed to it, sees that back turn run.
func (c *ahpClient) runBack(chat, id, msg string) string {
	c.t.Helper()
	c.dispatch(chat, ahp.TurnStarted(id, time.Now(), ahp.UserMessage(msg)))
	st := c.waitChat(chat, "the back session", func(s ahp.ChatState) bool { return backOf(ahp.Turn{ResponseParts: active(s)}) != "" })
	back := backOf(ahp.Turn{ResponseParts: active(st)})
	c.subscribe(back)
	c.waitChat(back, "the back turn", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })
	return back
}

// endProcess ends the server with sig and waits for it; a SIGTERM must
// end it cleanly.
func endProcess(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) {
	t.Helper()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if sig == syscall.SIGTERM && err != nil {
		t.Fatalf("the server did not end cleanly on SIGTERM: %v", err)
	}
}

// backTurns subscribes to a back chat and returns its turns as its
// snapshot holds them; a chat that does not open fails the test.
func backTurns(t *testing.T, c *ahpClient, back string) []ahp.Turn {
	t.Helper()
	c.subscribe(back) // fails the test when the chat does not open
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.chats[back].Turns
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// words are the person's words of a back turn's message: after its context
// block.
func words(t ahp.Turn) string {
	if _, after, ok := strings.Cut(t.Message.Text, "</context>\n"); ok {
		return after
	}
	return t.Message.Text
}

// rowSession is the session the one row of the bot's sessions names.
func rowSession(t *testing.T, config, bot string) string {
	t.Helper()
	rows, _ := filepath.Glob(filepath.Join(config, "bots", bot, "sessions", "*.json"))
	if len(rows) != 1 {
		t.Fatalf("%d session rows, want 1", len(rows))
	}
	data, err := os.ReadFile(rows[0])
	if err != nil {
		t.Fatal(err)
	}
	var row struct{ Session string }
	if err := json.Unmarshal(data, &row); err != nil {
		t.Fatal(err)
	}
	return row.Session
}

func TestEndToEndEchoBackSessionContinuesAfterARestart(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			base := t.TempDir()
			config, root := filepath.Join(base, "config"), filepath.Join(base, "bots")
			cmd, addr := startProcess(t, bin, config, root)
			c := dialChat(t, addr, "before")
			c.makeBot("motion", `{"name": "Motion"}`)
			session := "ahp-session:/restart"
			chat := c.openChat(session, "motion")
			if got := say(t, c, chat, "t1", "hello"); !slices.Equal(got, []string{"Motion heard: hello"}) {
				t.Fatalf("before the restart the bot says %q", got)
			}
			back := backOf(c.turn(chat, "t1"))
			if back == "" {
				t.Fatal("the main turn shows no back session")
			}
			endProcess(t, cmd, sig)

			_, addr = startProcess(t, bin, config, root)
			c2 := dialChat(t, addr, "after")
			c2.subscribe(session)
			c2.subscribe(chat)
			// The back chat the main chat links to opens before any new
			// message, with its turn.
			if turns := backTurns(t, c2, back); len(turns) != 1 || words(turns[0]) != "hello" || turns[0].State != ahp.TurnStateComplete {
				t.Fatalf("after the restart the back chat holds %s, want the turn of hello", mustJSON(turns))
			}
			if got := say(t, c2, chat, "t2", "again"); !slices.Equal(got, []string{"Motion heard: again"}) {
				t.Errorf("after the restart the bot says %q", got)
			}
			if got := backOf(c2.turn(chat, "t2")); got != back {
				t.Errorf("after the restart the message went to %s, want the same back session %s", got, back)
			}
			st := c2.waitChat(back, "the back turn of again", func(s ahp.ChatState) bool {
				return len(s.Turns) == 2 && s.ActiveTurn == nil
			})
			if words(st.Turns[0]) != "hello" || words(st.Turns[1]) != "again" || st.Turns[1].State != ahp.TurnStateComplete {
				t.Errorf("the back chat holds %s, want hello then again", mustJSON(st.Turns))
			}
			if got := rowSession(t, config, "motion"); ahp.DefaultChatURI(got) != back {
				t.Errorf("the row names %s, want the same back session", got)
			}
			c2.sameAsSnapshot(addr)
		})
	}
}

func TestEndToEndQueuedMessageBehindAKilledTurnRunsAfterTheRestart(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	base := t.TempDir()
	config, root := filepath.Join(base, "config"), filepath.Join(base, "bots")
	cmd, addr := startProcess(t, bin, config, root)
	c := dialChat(t, addr, "queue")
	c.makeBot("motion", `{"name": "Motion"}`)
	session := "ahp-session:/queue"
	chat := c.openChat(session, "motion")
	back := c.runBack(chat, "t1", "sleep 30")
	c.dispatch(chat, ahp.PendingMessageSet(ahp.PendingQueued, "q1", ahp.UserMessage("after")))
	c.waitChat(chat, "the queued message", func(s ahp.ChatState) bool { return len(s.QueuedMessages) == 1 })
	endProcess(t, cmd, syscall.SIGKILL)

	_, addr = startProcess(t, bin, config, root)
	c2 := dialChat(t, addr, "queue-2")
	c2.subscribe(session)
	c2.subscribe(chat)
	st := c2.waitChat(chat, "the queued message answered", func(s ahp.ChatState) bool {
		return s.ActiveTurn == nil && len(s.QueuedMessages) == 0 && len(s.Turns) == 2
	})
	first, second := st.Turns[0], st.Turns[1]
	tail := first.ResponseParts[len(first.ResponseParts)-1]
	if first.ID != "t1" || tail.Error == nil || tail.Error.Error.ErrorType != "executionInterrupted" || !tail.Error.Resumable {
		t.Errorf("the killed turn reads %s, want executionInterrupted and resumable", mustJSON(first))
	}
	if second.Message.Text != "after" || second.State != ahp.TurnStateComplete || !slices.Equal(texts(second), []string{"Motion heard: after"}) {
		t.Errorf("the queued message became %s, want it answered", mustJSON(second))
	}
	// The back session is the same one; its killed turn reads interrupted.
	if got := backOf(second); got != back {
		t.Errorf("the queued message went to %s, want the same back session %s", got, back)
	}
	c2.subscribe(back)
	bs := c2.waitChat(back, "the back turns", func(s ahp.ChatState) bool { return len(s.Turns) == 2 && s.ActiveTurn == nil })
	if bs.Turns[0].State != ahp.TurnStateError || words(bs.Turns[1]) != "after" || bs.Turns[1].State != ahp.TurnStateComplete {
		t.Errorf("the back chat holds %s, want the killed turn failed, then after", mustJSON(bs.Turns))
	}
	c2.sameAsSnapshot(addr)
}

func TestEndToEndACPBackSessionContinuesAfterARestart(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			setup := newACPSetup(t)
			srv := setup.start(t)
			c := dialChat(t, srv.addr, "acp")
			c.makeBot("motion", `{"name": "Motion", "provider": "fake"}`)
			session := "ahp-session:/acp-restart"
			chat := c.openChat(session, "motion")
			got := say(t, c, chat, "t1", "session")
			if len(got) != 1 || !strings.HasSuffix(got[0], " loaded=false") {
				t.Fatalf("the agent session: %q", got)
			}
			id := strings.TrimSuffix(got[0], " loaded=false")
			back := backOf(c.turn(chat, "t1"))
			if sig == syscall.SIGTERM {
				srv.stop(t)
			} else {
				srv.cmd.Process.Signal(syscall.SIGKILL)
				<-srv.exited
			}

			srv = setup.start(t)
			c2 := dialChat(t, srv.addr, "acp-2")
			c2.subscribe(session)
			c2.subscribe(chat)
			if turns := backTurns(t, c2, back); len(turns) != 1 || words(turns[0]) != "session" {
				t.Fatalf("after the restart the back chat holds %s, want the turn of session", mustJSON(turns))
			}
			if got := say(t, c2, chat, "t2", "session"); len(got) != 1 || got[0] != id+" loaded=true" {
				t.Errorf("after the restart the agent says %q, want %q (the same session, loaded)", got, id+" loaded=true")
			}
			if got := backOf(c2.turn(chat, "t2")); got != back {
				t.Errorf("after the restart the message went to %s, want the same back session %s", got, back)
			}
			st := c2.waitChat(back, "the second back turn", func(s ahp.ChatState) bool { return len(s.Turns) == 2 && s.ActiveTurn == nil })
			if words(st.Turns[1]) != "session" || st.Turns[1].State != ahp.TurnStateComplete {
				t.Errorf("the back chat holds %s", mustJSON(st.Turns))
			}
			srv.stop(t)
		})
	}
}
