package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/replica"
	"github.com/agenthost/bots/wake"
)

// A back session's log is kept by a chatlog.Logs under the key
// (chatlog.Back, its bot, its URI); in files it is
// <configDir>/bots/<bot>/sessions/<id>.jsonl, beside the rows, where id is
// the base64url of the session's URI. Its first line opens the session (its URI, when it began, its provider and
// model and the Spec it was started from); each other line is one action
// applied to its chat, or a client's action applied to its session. A
// Host that starts reads every log back, so a back session outlives
// the process: same URI, same chat, its latest turns.
//
// Every line is written with one write, so a killed process loses none;
// the lines that begin or end a turn or change the queue are fsynced too,
// so a power loss costs at most the streamed parts of a running turn.

// backLine is one line of a back session's log.
type backLine struct {
	Kind string `json:"kind"`
	At   string `json:"at"`
	// Session, CreatedAt, Provider, Model and Spec are the open line's.
	Session   string   `json:"session,omitempty"`
	CreatedAt string   `json:"createdAt,omitempty"`
	Provider  string   `json:"provider,omitempty"`
	Model     string   `json:"model,omitempty"`
	Spec      *logSpec `json:"spec,omitempty"`
	// Action is a chat or session line's action.
	Action *ahp.Action `json:"action,omitempty"`
	// By names the host that wrote the line, when the logs are followed
	// (follow.go): a host that hears a line of its own whose write it
	// could not confirm knows it holds it already.
	By string `json:"by,omitempty"`
}

// logSpec is a Spec as a log keeps it.
type logSpec struct {
	Preset       string                   `json:"preset,omitempty"`
	Provider     string                   `json:"provider,omitempty"`
	Model        string                   `json:"model,omitempty"`
	Dir          string                   `json:"dir"`
	Owner        string                   `json:"owner"`
	Title        string                   `json:"title,omitempty"`
	SystemPrompt string                   `json:"systemPrompt,omitempty"`
	Client       *ahp.SessionActiveClient `json:"client,omitempty"`
	Deny         []string                 `json:"deny,omitempty"`
	Meta         map[string]any           `json:"_meta,omitempty"`
}

func toLogSpec(s wake.Spec) *logSpec {
	return &logSpec{Preset: s.Preset, Provider: s.Provider, Model: s.Model, Dir: s.Dir, Owner: s.Owner, Title: s.Title,
		SystemPrompt: s.SystemPrompt, Client: s.Client, Deny: s.Deny, Meta: s.Meta}
}

func (l *logSpec) spec() wake.Spec {
	return wake.Spec{Preset: l.Preset, Provider: l.Provider, Model: l.Model, Dir: l.Dir, Owner: l.Owner, Title: l.Title,
		SystemPrompt: l.SystemPrompt, Client: l.Client, Deny: l.Deny, Meta: l.Meta}
}

// backLogKey is the key of the log of the back session uri whose _meta is
// meta; ok is false when the session is not a back session (its _meta
// names no bot that can name a folder).
func backLogKey(uri string, meta map[string]any) (key chatlog.Key, ok bool) {
	bot, _, _, ok := wake.BackSession(meta)
	key = chatlog.Key{Kind: chatlog.Back, Bot: bot, Session: uri}
	if !ok || key.Check() != nil {
		return chatlog.Key{}, false
	}
	return key, true
}

// logLocked appends a line of a's kind to the session's log. A failed
// append is reported when the one before it did not fail
// (replica.Log.Failed); the session goes on in memory. When the logs are
// followed, the line goes in at the count of lines the session holds: an
// answer another host wrote first is taken in first (takeAnswersLocked),
// and a, when it is an answer that one made moot, is dropped (false).
// Called with s locked.
func (s *localSession) logLocked(kind string, a ahp.Action) bool {
	if !s.logged || a.Type == ahp.ActionChatDraftChanged { // a draft is no turn event
		return true
	}
	data, err := json.Marshal(backLine{Kind: kind, At: ahp.FormatTime(s.h.now()), Action: &a, By: s.h.id})
	for try := 0; err == nil; try++ {
		err = s.tail.Append(s.fencedLocked(), data, kind == replica.LineSession || replica.Durable(a))
		if !errors.Is(err, replica.ErrBehind) || try == replica.MaxBehind || !s.takeAnswersLocked() {
			break
		}
		if replica.AnswerTo(a) != "" && s.answerErrLocked(a, nil) != nil {
			return false
		}
		err = nil // try again at the new count
	}
	if err != nil {
		s.diverged = true // the copy holds a line its log does not
		if errors.Is(err, replica.ErrBehind) || s.tail.Failed() == 1 {
			s.h.log.Warn("wake: a back session's log line could not be written", "log", s.tail.Key, "session", s.SessionURI, "err", err)
		}
	}
	return true
}

// createLog writes the open line of a session's log.
func (h *Host) createLog(key chatlog.Key, s *localSession, provider, model string) error {
	data, err := json.Marshal(backLine{Kind: replica.LineOpen, At: s.createdAt, Session: s.SessionURI, CreatedAt: s.createdAt,
		Provider: provider, Model: model, Spec: toLogSpec(s.spec)})
	if err != nil {
		return fmt.Errorf("encode the open line: %w", err)
	}
	s.Lock()
	ctx, cancel := context.WithTimeout(s.fencedLocked(), replica.Wait)
	s.Unlock()
	defer cancel()
	return h.logs.Create(ctx, key, data)
}

// replay reads back every back session's log the host's logs hold. A log that does not open a session, or whose provider the host
// no longer runs, is reported and left out.
func (h *Host) replay() {
	ctx, cancel := context.WithTimeout(context.Background(), replica.Wait)
	keys, err := h.logs.List(ctx, chatlog.Back)
	cancel()
	if err != nil {
		h.log.Warn("wake: back session logs could not be listed", "err", err)
		return
	}
	for _, key := range keys {
		if err := h.replayLog(context.Background(), key, !h.shared); err != nil {
			h.log.Warn("wake: a back session's log is left out", "log", key, "reason", err)
		}
	}
}

// replayLog restores the session of one log. With repair, a turn it shows
// begun and never ended is ended as interrupted, and the messages that
// waited are taken back (the main turns that sent them ended with the
// process), in the log too, with the fence ctx carries; without, the
// session is held as the log shows it. The agent is opened at the
// session's next turn.
func (h *Host) replayLog(ctx context.Context, key chatlog.Key, repair bool) error {
	s, err := h.readLog(ctx, key, repair)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.SessionURI] != nil {
		return errors.New("another log holds its session")
	}
	h.sessions[s.SessionURI] = s
	h.chats[s.ChatURI] = s
	return nil
}

// readLog reads the session of one log, as replayLog does, without
// holding it. A session read with repair is the one this host writes
// (here); without, it is a copy of what another host writes.
func (h *Host) readLog(ctx context.Context, key chatlog.Key, repair bool) (*localSession, error) {
	rctx, cancel := context.WithTimeout(ctx, replica.Wait)
	raw, bad, err := h.logs.Read(rctx, key)
	cancel()
	lines, bad := replica.Decode[backLine](raw, 0, bad)
	for _, b := range bad {
		h.log.Warn("wake: back session log", "log", key, "problem", b)
	}
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 || lines[0].Kind != replica.LineOpen || lines[0].Spec == nil || lines[0].Session == "" {
		return nil, errors.New("it does not open a session")
	}
	o := lines[0]
	spec := o.Spec.spec()
	if k, ok := backLogKey(o.Session, spec.Meta); !ok || k != key {
		return nil, errors.New("its name is not its session's")
	}
	hr, ok := h.harnesses[o.Provider]
	if !ok {
		return nil, fmt.Errorf("no agent for provider %q runs here", o.Provider)
	}
	created, err := time.Parse(time.RFC3339Nano, o.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("its createdAt: %w", err)
	}
	s := h.newSession(o.Session, spec, hr, o.Provider, o.Model, created)
	s.tail.Key, s.logged, s.here = key, true, repair
	s.tail.Lines = int64(len(raw))
	s.fenceFrom(ctx)
	r := replica.Replay{Last: o.At, Keep: h.keep}
	r.Session, r.Chat, r.Dropped = s.State()
	for _, l := range lines[1:] {
		r.Fold(l.Kind, l.At, l.Action)
	}
	if repair {
		// What the log shows begun and waiting ends, in the log too: the
		// process that ran the turn and the main turns that sent the
		// messages are gone.
		end := func(a ahp.Action) {
			s.logLocked(replica.LineChat, a)
			r.Apply(a)
		}
		if a, ok := r.Interrupted(false); ok {
			end(a)
		}
		if m := r.Chat.SteeringMessage; m != nil {
			end(ahp.PendingMessageRemoved(ahp.PendingSteering, m.ID))
		}
		for _, m := range r.Chat.QueuedMessages {
			end(ahp.PendingMessageRemoved(ahp.PendingQueued, m.ID))
		}
	}
	s.Reset(r.States(s.ChatURI))
	return s, nil
}

// localURI reports whether uri is a session URI Host makes:
// ahp-session:/ and an id of lower-case letters and digits.
func localURI(uri string) bool {
	id, ok := strings.CutPrefix(uri, "ahp-session:/")
	if !ok || id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
