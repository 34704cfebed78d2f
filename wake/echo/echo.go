// Package echo is a deterministic agent for tests and the out-of-the-box
// demo: provider "echo", a wake.Harness that runs no model. It reads the
// AGENTS.md in its working folder for its name and answers from the
// person's words, the text after the context block:
//
//	anything else     post_message "<name> heard: <words>", then end the turn
//	twice             post "first", then "second"
//	silent            end the turn with the final text "quiet reply", posting nothing
//	mute              end the turn with no text and no post
//	ask <question>    ask <question> with the question tool, then post "you said: <answer>"
//	approve           ask approval for a tool call, then post "approved" or "denied"
//	fail              fail the turn
//	sleep <seconds>   wait, then post "awake" (a stop cancels the wait)
//	stream <words>    reply the words one at a time, StreamPause apart, then post them
//	context           post the whole message received, context block included
package echo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/wake"
)

// Provider is the provider name the echo agent runs as.
const Provider = "echo"

// PostMessage is the name of the tool the agent answers with.
const PostMessage = "post_message"

// QuestionID is the id of the question "ask" asks.
const QuestionID = "answer"

// MaxSleep bounds "sleep <seconds>".
const MaxSleep = time.Hour

// StreamPause is how long "stream" waits between two words, so that a
// client sees the reply grow.
const StreamPause = 200 * time.Millisecond

// Harness is the echo harness. The zero value is ready to use.
type Harness struct{}

var _ wake.Harness = Harness{}

// Open returns the agent of one session.
func (Harness) Open(ctx context.Context, s wake.SessionInfo) (wake.Agent, error) {
	if s.Dir == "" {
		return nil, errors.New("echo: a session needs a folder")
	}
	return agent{dir: s.Dir}, nil
}

type agent struct{ dir string }

func (agent) Close() error { return nil }

// Words returns the person's words of a woken message: the text after its
// context block, or the whole text when it has none.
func Words(text string) string {
	if rest, ok := strings.CutPrefix(text, "<context>\n"); ok {
		if _, after, ok := strings.Cut(rest, "</context>\n"); ok {
			return after
		}
	}
	return text
}

// Turn answers one message.
func (a agent) Turn(ctx context.Context, w wake.Work) error {
	text := w.Message().Text
	words := Words(text)
	verb, rest, _ := strings.Cut(strings.TrimSpace(words), " ")
	rest = strings.TrimSpace(rest)
	post := func(s string) error { return Post(ctx, w, s) }
	switch verb {
	case "twice":
		if err := post("first"); err != nil {
			return err
		}
		return post("second")
	case "silent":
		w.Reply("quiet reply")
		return nil
	case "mute":
		return nil
	case "ask":
		resp, answers, err := w.Ask(ctx, []ahp.ChatInputQuestion{{ID: QuestionID, Kind: ahp.QuestionText, Message: rest}})
		if err != nil {
			return err
		}
		if resp != ahp.InputAccept {
			return post("you said nothing")
		}
		return post("you said: " + answerText(answers[QuestionID]))
	case "approve":
		ok, err := w.Approve(ctx, wake.Approval{ToolName: "echo_approve", DisplayName: "Echo approval", Invocation: "Echo asks to go ahead", Input: rest})
		if err != nil {
			return err
		}
		if ok {
			return post("approved")
		}
		return post("denied")
	case "fail":
		return errors.New("echo: asked to fail")
	case "sleep":
		secs, err := strconv.ParseFloat(rest, 64)
		if err != nil || secs < 0 {
			return fmt.Errorf("echo: sleep takes a number of seconds, not %q", rest)
		}
		if err := pause(ctx, min(time.Duration(secs*float64(time.Second)), MaxSleep)); err != nil {
			return err
		}
		return post("awake")
	case "stream":
		for i, word := range strings.Fields(rest) {
			if i > 0 {
				if err := pause(ctx, StreamPause); err != nil {
					return err
				}
				word = " " + word
			}
			w.Reply(word)
		}
		return post(rest)
	case "context":
		return post(text)
	}
	return post(a.name() + " heard: " + words)
}

// pause waits for d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Post calls post_message with text.
func Post(ctx context.Context, w wake.Work, text string) error {
	input, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		return err
	}
	res, err := w.CallTool(ctx, PostMessage, input)
	if err != nil {
		return fmt.Errorf("echo: post_message: %w", err)
	}
	if !res.Success {
		msg := res.PastTenseMessage.Text
		if res.Error != nil {
			msg = res.Error.Message
		}
		return fmt.Errorf("echo: post_message failed: %s", msg)
	}
	return nil
}

// name is the name in the folder's AGENTS.md, or "echo" when it has none.
func (a agent) name() string {
	data, err := os.ReadFile(filepath.Join(a.dir, persona.AgentsFile))
	if err == nil {
		if p, err := persona.Read(data, persona.InSection); err == nil && p.Name != "" {
			return p.Name
		}
	}
	return "echo"
}

func answerText(a ahp.ChatInputAnswer) string {
	if a.Value == nil {
		return ""
	}
	switch v := a.Value.Value.(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}
