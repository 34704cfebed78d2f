package bot

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
)

// ProblemsURI is the problems channel: the problems of the bots a
// subscriber may read, in one snapshot { problems: Problem[] }, then an
// ActionProblemsChanged each time that list changes. AHP has no root
// action for _meta, where ProblemsMeta stands at initialize, so the
// problems are pushed on a plugin channel of their own, as the catalogue's
// bots are.
const ProblemsURI = "x-ahpd-problems://"

// ActionProblemsChanged is the problems channel's one action,
// { type, problems }: the subscriber's whole list now, which replaces the
// one it had. A subscriber gets it only when its own list changed.
const ActionProblemsChanged = "x-ahpd-problems/changed"

// problemsInfo is the problems channel's advertisement, one element of
// _meta['ahpd.channels'] on initialize and on the root state.
func problemsInfo() map[string]any {
	return map[string]any{
		"scheme":      "x-ahpd-problems",
		"title":       "Problems",
		"description": "What is wrong with the bots the reader may read (a hand edit refused, a folder that left root), replaced whole as it changes.",
		"grant":       "bot:read",
	}
}

// Problem is one problem as a client sees it, in ProblemsMeta and on the
// problems channel. Path is given only to root and holders of *:*.
type Problem struct {
	Bot    string `json:"bot,omitempty"`
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason"`
	Since  string `json:"since"`
}

// problemsState is the problems channel's snapshot state.
type problemsState struct {
	Problems []Problem `json:"problems"`
}

// problemsAction is ActionProblemsChanged.
type problemsAction struct {
	Type     string    `json:"type"`
	Problems []Problem `json:"problems"`
}

// standing is a problem with what decides who sees it: the bot's record,
// when the store serves the bot.
type standing struct {
	item   Problem // without its path
	path   string
	served bool // the store serves the bot, so its readers see the problem
	rec    record.Record
}

func (a standing) same(b standing) bool {
	return a.item == b.item && a.path == b.path && a.served == b.served && a.rec.Owner == b.rec.Owner
}

// standingProblems are the problems now, each with its bot's record.
func (s *Service) standingProblems(ctx context.Context) []standing {
	var out []standing
	problems := s.Problems()
	if more := s.providerProblems(ctx); len(more) > 0 {
		problems = append(problems, more...)
		record.SortProblems(problems)
	}
	for _, pr := range problems {
		st := standing{item: Problem{Bot: pr.ID, Reason: pr.Reason, Since: record.FormatTime(pr.Since)}, path: pr.Path}
		if pr.ID != "" {
			if e, err := s.problemRecord(ctx, pr); err == nil {
				st.served, st.rec = true, e.Record
			}
		}
		out = append(out, st)
	}
	return out
}

// problemRecord is the record whose readers see pr: the bot the store
// serves, but for a problem of a bot a bundled bot hides - anything but
// the bundled bot's own folder - the hidden bot's, so that only its
// owner's side sees it.
func (s *Service) problemRecord(ctx context.Context, pr record.Problem) (record.Entry, error) {
	if b, ok := s.bundles.byID[pr.ID]; ok && s.bundles.hiding != nil && s.bundles.hiding.isHidden(pr.ID) && !record.Within(pr.Path, b.entry.Record.Workspace) {
		return s.raw.Get(ctx, pr.ID)
	}
	return s.store.Get(ctx, pr.ID)
}

// seenBy is what p sees of problems: every one with its path for root and
// *:*, else those of the bots p may read.
func seenBy(p access.Principal, problems []standing) []Problem {
	out := []Problem{}
	for _, st := range problems {
		switch {
		case p.Any():
			it := st.item
			it.Path = st.path
			out = append(out, it)
		case st.served && CanRead(p, st.rec):
			out = append(out, st.item)
		}
	}
	return out
}

// problemFeed is the problems channel's state: what was last published,
// at which serverSeq, and the follower that publishes what changes.
type problemFeed struct {
	mu    sync.Mutex // held while the problems are published and while a snapshot of them is taken
	shown []standing // the problems last published on ProblemsURI
	seq   int64      // the serverSeq of the last problems action
	kick  chan struct{}
	loop  background
}

// folderProblems are the problems checkFolder reported, by bot id.
type folderProblems struct {
	mu   sync.Mutex
	byID map[string]badFolder
}

// problemWatcher is a store that tells when its problems change, as
// filerecord.Store does.
type problemWatcher interface {
	WatchProblems(ctx context.Context) <-chan struct{}
}

// startProblems takes the problems standing now as the channel's first
// state and follows their changes until Close: the store's, the service's
// own work folders' (problemKick), and every change of a bot, which may
// change who may read its problems.
func (s *Service) startProblems(ctx context.Context) error {
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var changed <-chan struct{}
	if w, ok := s.raw.(problemWatcher); ok { // the store's own, under the bundled bots
		changed = w.WatchProblems(life)
	}
	bots, err := s.store.Watch(life)
	if err != nil {
		cancel()
		return err
	}
	s.problems.shown = s.standingProblems(ctx)
	s.problems.loop.goUntil(cancel, func() {
		for {
			select {
			case <-life.Done():
				return
			case _, ok := <-changed:
				if !ok {
					changed = nil
					continue
				}
			case _, ok := <-bots:
				if !ok {
					return // the store is closed
				}
			case <-s.problems.kick:
			}
			s.publishProblems(life)
		}
	})
	return nil
}

// kickProblems tells the follower that the service's own problems changed.
func (s *Service) kickProblems() {
	select {
	case s.problems.kick <- struct{}{}:
	default:
	}
}

// publishProblems publishes the problems when they changed: each
// subscriber whose own list changed gets its new list.
func (s *Service) publishProblems(ctx context.Context) {
	now := s.standingProblems(ctx)
	s.problems.mu.Lock()
	defer s.problems.mu.Unlock()
	prev := s.problems.shown
	if slices.EqualFunc(prev, now, standing.same) {
		return
	}
	s.problems.shown = now
	seq, err := s.bus.Publish(ProblemsURI, engine.Event{For: func(sub *engine.Subscriber) (any, bool) {
		p := s.principalNow(sub)
		mine := seenBy(p, now)
		if slices.Equal(seenBy(p, prev), mine) {
			return nil, false
		}
		return problemsAction{Type: ActionProblemsChanged, Problems: mine}, true
	}})
	if err != nil {
		s.log.Error("bot: publish the problems", "err", err)
		return
	}
	s.problems.seq = seq
}

// problemsMembershipsChanged sends the subscribers of userIDs their list
// as it is now, which their new memberships may have changed.
func (s *Service) problemsMembershipsChanged(userIDs []string) {
	if len(userIDs) == 0 {
		return
	}
	s.problems.mu.Lock()
	defer s.problems.mu.Unlock()
	shown := s.problems.shown
	seq, err := s.bus.Publish(ProblemsURI, engine.Event{For: func(sub *engine.Subscriber) (any, bool) {
		if sub.Principal.Root || !slices.Contains(userIDs, sub.Principal.User) {
			return nil, false
		}
		return problemsAction{Type: ActionProblemsChanged, Problems: seenBy(s.principalNow(sub), shown)}, true
	}})
	if err == nil {
		s.problems.seq = seq
	}
}

// problemsChannel is ProblemsURI.
type problemsChannel struct{ s *Service }

var _ engine.Dispatcher = problemsChannel{}

func (problemsChannel) URI() string { return ProblemsURI }

// Subscribe returns the problems the subscriber may see now, at the
// serverSeq of the last problems action.
func (ch problemsChannel) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	s := ch.s
	s.problems.mu.Lock()
	defer s.problems.mu.Unlock()
	return engine.Snapshot{State: problemsState{Problems: seenBy(s.principalNow(sub), s.problems.shown)}, Seq: s.problems.seq}, nil
}

// Dispatch rejects the action: the channel takes none.
func (problemsChannel) Dispatch(ctx context.Context, d engine.Dispatch) error {
	return errcode.New(errcode.Invalid, "a client cannot dispatch an action to the channel")
}

// offeredProviders are the providers a session host runs sessions on,
// sorted, when it says (wake/local's Host does); nil otherwise.
func offeredProviders(h wake.SessionHost) []string {
	if p, ok := h.(interface{ Providers() []string }); ok {
		return slices.Sorted(slices.Values(p.Providers()))
	}
	return nil
}

// providerProblems are the problems of this host's bots with their
// agents: a provider the session host runs no agent for (such a make is
// accepted - the host may add the agent later, as an agents file edited
// and a restart do - but said at once, not at the first message), and a
// bot on echo whose tools need an agent that calls them (the builder on
// the reference server's default agent), until either is put right. A
// bot with a preset (which names its own provider) or on another
// computer is not this host's to judge.
func (s *Service) providerProblems(ctx context.Context) []record.Problem {
	if len(s.offered) == 0 {
		return nil
	}
	list, err := record.ListShared(ctx, s.store, func(r *record.Record) bool {
		return r.Preset == "" && r.Computer == "" && s.agentProblem(r) != ""
	})
	if err != nil {
		return nil // the store's own problem, reported where it is read
	}
	out := make([]record.Problem, 0, len(list))
	for _, e := range list {
		since := e.Record.UpdatedAt
		if since.IsZero() { // a bundled bot's record
			since = s.firstSeen()
		}
		out = append(out, record.Problem{ID: e.Record.ID, Since: since, Reason: s.agentProblem(&e.Record)})
	}
	return out
}

// echoTools are the tools the echo agent calls: a bot on echo whose tools
// go beyond them cannot do what it is for.
var echoTools = []string{"post_message", "ask_question"}

// agentProblem says what is wrong with r's agent, or "".
func (s *Service) agentProblem(r *record.Record) string {
	provider := cmp.Or(r.Provider, s.defAgent)
	if provider == "" {
		return ""
	}
	if !slices.Contains(s.offered, provider) {
		return fmt.Sprintf("the bot runs on provider %q, and this host runs no agent of that name (it offers %s): its messages fail until the host adds one; edit the bot's provider to one of these, or add the agent to the host's agents file", provider, strings.Join(s.offered, ", "))
	}
	if provider != echo.Provider {
		return ""
	}
	var beyond []string
	for _, t := range r.Tools {
		if !slices.Contains(echoTools, t) {
			beyond = append(beyond, t)
		}
	}
	if len(beyond) == 0 {
		return ""
	}
	fix := "give it a real agent as its provider"
	switch {
	case s.isBundled(r.ID): // nobody edits a bundled bot: the host's default is what it runs on
		fix = "start the host with a real agent as its default (the reference server's -agent NAME, with an agents file)"
	case r.Provider == "":
		fix = "give it a real agent as its provider, or start the host with one as its default (the reference server's -agent NAME)"
	}
	return fmt.Sprintf("the bot runs on echo, which only says back what it is told and calls no tool but post_message and ask_question, so it cannot do what its tools (%s) are for: %s; the README's \"Real agents\" says how", strings.Join(beyond, ", "), fix)
}
