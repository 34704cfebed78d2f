package bot_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/replica"
	"github.com/agenthost/bots/wake"
)

const motionBody = `{"name": "Motion", "labels": ["review"], "color": "teal", "body": "robot"}`

func wantMark(t *testing.T, where string, meta map[string]any) {
	t.Helper()
	m, _ := meta[bot.BotMeta].(map[string]any)
	if m == nil || m["id"] != "motion" || m["name"] != "Motion" || m["color"] != "teal" || m["body"] != "robot" || m["kind"] != "direct" {
		t.Errorf("%s _meta %v, want the bot's mark", where, meta)
	}
	if l, _ := m["labels"].([]any); len(l) != 1 || l[0] != "review" {
		t.Errorf("%s labels %v", where, m["labels"])
	}
}

func TestChatAnswersAMessageWithTheEchoAgent(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	session, chat := c.open("ahp-session:/one", "motion")
	c.say(chat, "t1", "hello")
	turn := c.turn(chat, "t1")
	if turn.State != ahp.TurnStateComplete || !slices.Equal(markdown(turn), []string{"Motion heard: hello"}) {
		t.Fatalf("turn %s", jsonText(turn))
	}
	c.mu.Lock()
	ss, cs := c.sessions[session], c.chats[chat]
	c.mu.Unlock()
	if ss.Provider != bot.ChatProvider || ss.Title != "Motion" || ss.DefaultChat != chat || len(ss.WorkingDirectories) != 1 ||
		!strings.HasSuffix(ss.WorkingDirectories[0], "/bots/motion") {
		t.Errorf("session %s", jsonText(ss))
	}
	wantMark(t, "session", ss.Meta)
	wantMark(t, "chat", cs.Meta)
	var list ahp.ListSessionsResult
	c.mustCall("listSessions", map[string]any{"channel": ahp.RootURI}, &list)
	i := slices.IndexFunc(list.Items, func(s ahp.SessionSummary) bool { return s.Resource == session })
	if i < 0 {
		t.Fatalf("listSessions %s lacks the chat", jsonText(list))
	}
	wantMark(t, "row", list.Items[i].Meta)
	c.sameAsSnapshot(e, "soft")
}

func TestOpeningAChatNeedsSessionCreateAndARealBot(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	r := e.connect(t, "reader")
	if err := r.call("createSession", map[string]any{"channel": "ahp-session:/x", "provider": bot.ChatProvider, "config": map[string]any{"bot": "motion"}}, nil); err == nil || err.Code != -32009 {
		t.Errorf("without session:create: %v, want -32009", err)
	}
	c := e.connect(t, "soft")
	if err := c.call("createSession", map[string]any{"channel": "ahp-session:/x", "provider": bot.ChatProvider, "config": map[string]any{"bot": "nope"}}, nil); err == nil || err.Code != -32008 {
		t.Errorf("a missing bot: %v, want -32008", err)
	}
	c.open("ahp-session:/x", "motion")
	if err := c.call("createSession", map[string]any{"channel": "ahp-session:/x", "provider": bot.ChatProvider, "config": map[string]any{"bot": "motion"}}, nil); err == nil || err.Code != -32003 {
		t.Errorf("a second create: %v, want -32003", err)
	}
}

func TestAChatIsItsOwners(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/mine", "motion")
	m := e.connect(t, "mate")
	if err := m.call("subscribe", map[string]any{"channel": chat}, nil); err == nil || err.Code != -32009 {
		t.Errorf("another person subscribes: %v, want -32009", err)
	}
	var list ahp.ListSessionsResult
	m.mustCall("listSessions", map[string]any{"channel": ahp.RootURI}, &list)
	if len(list.Items) != 0 {
		t.Errorf("another person lists %s", jsonText(list))
	}
	m.open("ahp-session:/theirs", "motion") // a person may open chats with a bot they may read
	c.mustCall("listSessions", map[string]any{"channel": ahp.RootURI}, &list)
	if len(list.Items) != 1 {
		t.Errorf("soft lists %d chats, want 1", len(list.Items))
	}
}

func TestEveryLogLineCarriesTheMarkAndTheLogIsTheStateAfterARestart(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	session, chat := c.open("ahp-session:/keep", "motion")
	c.say(chat, "t1", "twice")
	before := c.turn(chat, "t1")
	path := filepath.Join(e.configDir, "bots", "motion", "logs", strings.TrimPrefix(chat, "ahp-chat://default/")+".jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		meta, _ := line["_meta"].(map[string]any)
		wantMark(t, "log line", meta)
	}
	f.Close()
	if n < 5 {
		t.Errorf("%d log lines, want one per turn event", n)
	}
	e.stop()
	e.start()
	c2 := e.connect(t, "soft")
	var list ahp.ListSessionsResult
	c2.mustCall("listSessions", map[string]any{"channel": ahp.RootURI}, &list)
	if len(list.Items) != 1 || list.Items[0].Resource != session {
		t.Fatalf("after a restart the list is %s", jsonText(list))
	}
	c2.subscribe(session)
	c2.subscribe(chat)
	c2.mu.Lock()
	after := c2.chats[chat].Turns
	c2.mu.Unlock()
	if len(after) != 1 || jsonText(after[0]) != jsonText(before) {
		t.Errorf("replayed turn\n%s\nwant\n%s", jsonText(after), jsonText(before))
	}
	c2.say(chat, "t2", "again")
	if got := markdown(c2.turn(chat, "t2")); !slices.Equal(got, []string{"Motion heard: again"}) {
		t.Errorf("after a restart the bot says %q", got)
	}
	c2.sameAsSnapshot(e, "soft")
}

func TestATurnBegunAndNeverEndedReadsBackAsInterrupted(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/cut", "motion")
	c.say(chat, "t1", "sleep 30")
	c.waitChat(chat, "the back session", func(s ahp.ChatState) bool {
		return s.ActiveTurn != nil && len(s.ActiveTurn.ResponseParts) > 0 && len(s.ActiveTurn.ResponseParts[0].ToolCall.Content) > 0
	})
	e.stop() // the process goes away mid-turn
	e.start()
	c2 := e.connect(t, "soft")
	c2.subscribe(chat)
	c2.mu.Lock()
	s := c2.chats[chat]
	c2.mu.Unlock()
	if s.ActiveTurn != nil || len(s.Turns) != 1 {
		t.Fatalf("replayed chat %s", jsonText(s))
	}
	ei := turnError(s.Turns[0])
	if s.Turns[0].State != ahp.TurnStateError || ei == nil || ei.ErrorType != replica.InterruptedType || ei.Message != replica.InterruptedMessage {
		t.Errorf("interrupted turn %s", jsonText(s.Turns[0]))
	}
}

func TestATornLastLogLineIsIgnored(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/torn", "motion")
	c.say(chat, "t1", "hello")
	c.turn(chat, "t1")
	e.stop()
	path := filepath.Join(e.configDir, "bots", "motion", "logs", strings.TrimPrefix(chat, "ahp-chat://default/")+".jsonl")
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"kind":"chat","at":"2026`)
	f.Close()
	e.start()
	c2 := e.connect(t, "soft")
	c2.subscribe(chat)
	c2.say(chat, "t2", "still here")
	if got := markdown(c2.turn(chat, "t2")); !slices.Equal(got, []string{"Motion heard: still here"}) {
		t.Errorf("after a torn line the bot says %q", got)
	}
	e.stop()
	e.start()
	c3 := e.connect(t, "soft")
	c3.subscribe(chat)
	c3.mu.Lock()
	n := len(c3.chats[chat].Turns)
	c3.mu.Unlock()
	if n != 2 {
		t.Errorf("%d turns read back, want 2", n)
	}
}

func TestAMessageToADeletedBotFailsTheTurn(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	session, chat := c.open("ahp-session:/gone", "motion")
	root := e.connect(t, "root")
	root.mustCall("resourceDelete", map[string]any{"channel": ahp.RootURI, "uri": "bot://motion"}, nil)
	c.say(chat, "t1", "hello?")
	turn := c.turn(chat, "t1")
	if ei := turnError(turn); ei == nil || ei.ErrorType != wake.ErrorSendFailed || !strings.Contains(ei.Message, "deleted") {
		t.Errorf("turn %s, want it failed saying the bot was deleted", jsonText(turn))
	}
	c.mu.Lock()
	ss := c.sessions[session]
	c.mu.Unlock()
	wantMark(t, "session of a deleted bot", ss.Meta)
}

func TestDisposeEndsTheChatAndRemovesItsLog(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	session, chat := c.open("ahp-session:/bye", "motion")
	path := filepath.Join(e.configDir, "bots", "motion", "logs", strings.TrimPrefix(chat, "ahp-chat://default/")+".jsonl")
	c.mustCall("disposeSession", map[string]any{"channel": session}, nil)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the log is still there: %v", err)
	}
	if err := c.call("disposeSession", map[string]any{"channel": session}, nil); err == nil || err.Code != -32001 {
		t.Errorf("a second dispose: %v, want -32001", err)
	}
}

func TestAQueuedMessageStartsItsTurnAfterTheTurnInFront(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/q", "motion")
	c.say(chat, "t1", "sleep 0.1")
	c.waitChat(chat, "the turn", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })
	c.dispatch(chat, ahp.PendingMessageSet(ahp.PendingQueued, "q1", ahp.UserMessage("next")))
	s := c.waitChat(chat, "two turns", func(s ahp.ChatState) bool { return len(s.Turns) == 2 })
	if got := markdown(s.Turns[1]); !slices.Equal(got, []string{"Motion heard: next"}) || len(s.QueuedMessages) != 0 {
		t.Errorf("queued turn says %q: %s", got, jsonText(s))
	}
	c.sameAsSnapshot(e, "soft")
}

func TestTheSubagentCallOpensTheBackChat(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/sub", "motion")
	c.say(chat, "t1", "hello")
	turn := c.turn(chat, "t1")
	var back string
	for _, p := range turn.ResponseParts {
		if p.ToolCall != nil && p.ToolCall.ToolName == wake.SubagentTool && len(p.ToolCall.Content) == 1 {
			back = p.ToolCall.Content[0].Resource
		}
	}
	if back == "" {
		t.Fatalf("no subagent call: %s", jsonText(turn))
	}
	c.subscribe(back)
	c.mu.Lock()
	bs := c.chats[back]
	c.mu.Unlock()
	if len(bs.Turns) != 1 || bs.Turns[0].Message.Origin.Kind != ahp.MessageAgent {
		t.Errorf("back chat %s", jsonText(bs))
	}
	if err := e.connect(t, "mate").call("subscribe", map[string]any{"channel": back}, nil); err == nil || err.Code != -32009 {
		t.Errorf("another person opens the back chat: %v, want -32009", err)
	}
}

func TestAskInMainIsAnsweredInTheChat(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/ask", "motion")
	c.say(chat, "t1", "ask favourite number?")
	s := c.waitChat(chat, "the question", func(s ahp.ChatState) bool {
		return s.ActiveTurn != nil && slices.ContainsFunc(s.ActiveTurn.ResponseParts, func(p ahp.ResponsePart) bool { return p.InputRequest != nil })
	})
	var id string
	for _, p := range s.ActiveTurn.ResponseParts {
		if p.InputRequest != nil {
			id = p.InputRequest.Request.ID
		}
	}
	c.dispatch(chat, ahp.InputCompleted(id, ahp.InputAccept, map[string]ahp.ChatInputAnswer{
		"answer": {State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: "7"}},
	}))
	if got := markdown(c.turn(chat, "t1")); !slices.Equal(got, []string{"you said: 7"}) {
		t.Errorf("bot says %q", got)
	}
	c.sameAsSnapshot(e, "soft")
}

func TestStopOfTheMainTurnStopsTheBackTurn(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/stop", "motion")
	c.say(chat, "t1", "sleep 30")
	s := c.waitChat(chat, "the subagent call", func(s ahp.ChatState) bool {
		return s.ActiveTurn != nil && len(s.ActiveTurn.ResponseParts) > 0 && len(s.ActiveTurn.ResponseParts[0].ToolCall.Content) > 0
	})
	back := s.ActiveTurn.ResponseParts[0].ToolCall.Content[0].Resource
	c.subscribe(back)
	c.waitChat(back, "the back turn", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })
	c.dispatch(chat, ahp.TurnCancelled("t1", 5))
	if turn := c.turn(chat, "t1"); turn.State != ahp.TurnStateCancelled {
		t.Errorf("main turn %s", jsonText(turn))
	}
	bs := c.waitChat(back, "the back turn to stop", func(s ahp.ChatState) bool { return s.ActiveTurn == nil && len(s.Turns) == 1 })
	if bs.Turns[0].State != ahp.TurnStateCancelled {
		t.Errorf("back turn %s", jsonText(bs.Turns[0]))
	}
	c.sameAsSnapshot(e, "soft")
}

func TestASteerInTheChatIsHandedToTheBackSessionAndTheTurnEndsWithIt(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/steer", "motion")
	c.say(chat, "t1", "sleep 0.3")
	s := c.waitChat(chat, "the subagent call", func(s ahp.ChatState) bool {
		return s.ActiveTurn != nil && len(s.ActiveTurn.ResponseParts) > 0 && len(s.ActiveTurn.ResponseParts[0].ToolCall.Content) > 0
	})
	back := s.ActiveTurn.ResponseParts[0].ToolCall.Content[0].Resource
	c.subscribe(back)
	c.waitChat(back, "the back turn", func(s ahp.ChatState) bool { return s.ActiveTurn != nil })
	c.dispatch(chat, ahp.PendingMessageSet(ahp.PendingSteering, "s1", ahp.UserMessage("and more")))
	turn := c.turn(chat, "t1")
	if got := markdown(turn); !slices.Equal(got, []string{"awake", "Motion heard: and more"}) {
		t.Errorf("main turn says %q", got)
	}
	c.mu.Lock()
	steering := c.chats[chat].SteeringMessage
	c.mu.Unlock()
	if steering != nil {
		t.Errorf("the steering message is still waiting: %+v", steering)
	}
	c.sameAsSnapshot(e, "soft")
}

func TestRootListsTheBotChatAgentAndTheOtherChannelsStillServe(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	c := e.connect(t, "soft")
	var res struct {
		Snapshot struct {
			State ahp.RootState `json:"state"`
		} `json:"snapshot"`
	}
	c.mustCall("subscribe", map[string]any{"channel": ahp.RootURI}, &res)
	if a := res.Snapshot.State.Agents; len(a) != 1 || a[0].Provider != bot.ChatProvider {
		t.Errorf("agents %s, want bot-chat", jsonText(a))
	}
	if err := c.call("subscribe", map[string]any{"channel": "x-ahpd-bots://"}, nil); err != nil {
		t.Errorf("the catalogue: %v", err)
	}
	if err := c.call("subscribe", map[string]any{"channel": "ahp-chat://default/none"}, nil); err == nil || err.Code != -32008 {
		t.Errorf("an unknown chat: %v, want -32008", err)
	}
}

func TestRootNotificationsGoToThoseWhoMaySeeTheChat(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	soft, mate, root := e.connect(t, "soft"), e.connect(t, "mate"), e.connect(t, "root")
	for _, c := range []*chatClient{soft, mate, root} {
		c.mustCall("subscribe", map[string]any{"channel": ahp.RootURI}, nil)
	}
	a, achat := soft.open("ahp-session:/soft-a", "motion")
	b, bchat := mate.open("ahp-session:/mate-b", "motion")
	soft.say(achat, "t1", "hello")
	soft.turn(achat, "t1")
	mate.say(bchat, "t1", "hello")
	mate.turn(bchat, "t1")
	soft.mustCall("disposeSession", map[string]any{"channel": a}, nil)
	mate.mustCall("disposeSession", map[string]any{"channel": b}, nil)
	want := map[*chatClient][]string{soft: {a}, mate: {b}, root: {a, b}}
	for c, sessions := range want {
		// A call answered after every notification was sent: the answer
		// comes after them on the connection.
		c.mustCall("listSessions", map[string]any{"channel": ahp.RootURI}, nil)
		c.mu.Lock()
		notes := slices.Clone(c.notes)
		c.mu.Unlock()
		heard := map[string]bool{}
		for _, n := range notes {
			method, session, _ := strings.Cut(n, " ")
			if !slices.Contains(sessions, session) {
				t.Errorf("a subscriber of %v heard %s about %s", sessions, method, session)
			}
			heard[method+" "+session] = true
		}
		for _, s := range sessions {
			for _, m := range []string{"root/sessionAdded", "root/sessionSummaryChanged", "root/sessionRemoved"} {
				if !heard[m+" "+s] {
					t.Errorf("a subscriber of %v did not hear %s about %s; heard %q", sessions, m, s, notes)
				}
			}
		}
	}
}

func TestAChatHoldsItsLatestTurnsAndFetchTurnsReadsTheOlderFromItsLog(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	bot.SetChatWindow(e.svc, 2, 2)
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/long", "motion")
	const n = 7
	for i := range n {
		c.say(chat, fmt.Sprint("t", i), fmt.Sprint("m", i))
		c.turn(chat, fmt.Sprint("t", i))
	}
	c.mu.Lock()
	all := c.chats[chat]
	c.mu.Unlock()
	if len(all.Turns) != n || all.TurnsNextCursor != "" {
		t.Fatalf("the client that heard every action holds %d turns, cursor %q", len(all.Turns), all.TurnsNextCursor)
	}
	check := func(c2 *chatClient) {
		t.Helper()
		var snap ahp.ChatState
		json.Unmarshal(c2.subscribe(chat), &snap)
		if len(snap.Turns) != 2 || snap.Turns[0].ID != "t5" || snap.TurnsNextCursor != "5" {
			t.Fatalf("snapshot holds %d turns from %s, cursor %q; want t5, t6 and cursor 5", len(snap.Turns), snap.Turns[0].ID, snap.TurnsNextCursor)
		}
		if err := c2.call("fetchTurns", map[string]any{"channel": chat, "cursor": "6"}, nil); err == nil || err.Code != -32602 {
			t.Errorf("an unknown cursor: %v, want -32602", err)
		}
		var got ahp.ChatState
		json.Unmarshal(c2.fetchAllTurns(chat), &got)
		if jsonText(got) != jsonText(all) {
			t.Errorf("after fetching every page\n%s\nwant\n%s", jsonText(got), jsonText(all))
		}
	}
	check(e.connect(t, "soft"))
	c.mu.Lock()
	if mine := c.chats[chat]; len(mine.Turns) != n || mine.TurnsNextCursor != "" {
		t.Errorf("another client's fetchTurns reached this one: %d turns, cursor %q", len(mine.Turns), mine.TurnsNextCursor)
	}
	c.mu.Unlock()
	if err := e.connect(t, "mate").call("fetchTurns", map[string]any{"channel": chat}, nil); err == nil || err.Code != -32009 {
		t.Errorf("fetchTurns on another's chat: %v, want -32009", err)
	}
	c.sameAsSnapshot(e, "soft")
	e.stop()
	e.start()
	bot.SetChatWindow(e.svc, 2, 2)
	check(e.connect(t, "soft"))
}

func TestAnInterruptedTurnResumesAndWakesTheBackSessionAgain(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	_, chat := c.open("ahp-session:/resume", "motion")
	c.say(chat, "t1", "sleep 30")
	c.waitChat(chat, "the back session", func(s ahp.ChatState) bool {
		return s.ActiveTurn != nil && len(s.ActiveTurn.ResponseParts) > 0 && len(s.ActiveTurn.ResponseParts[0].ToolCall.Content) > 0
	})
	e.stop() // the process goes away mid-turn
	e.start()
	c2 := e.connect(t, "soft")
	c2.subscribe("ahp-session:/resume")
	c2.subscribe(chat)
	c2.mu.Lock()
	s := c2.chats[chat]
	c2.mu.Unlock()
	if len(s.Turns) != 1 || !s.Turns[0].ResponseParts[len(s.Turns[0].ResponseParts)-1].Error.Resumable {
		t.Fatalf("the interrupted turn cannot be resumed: %s", jsonText(s))
	}
	c2.dispatch(chat, ahp.TurnResume("t2")) // not the latest turn
	c2.dispatch(chat, ahp.TurnResume("t1"))
	st := c2.waitChat(chat, "the resumed turn's back session", func(s ahp.ChatState) bool {
		if s.ActiveTurn == nil || s.ActiveTurn.ID != "t1" {
			return false
		}
		parts := s.ActiveTurn.ResponseParts
		// The first call, cancelled by the interruption, the error, and
		// the call of the back session woken again.
		return len(parts) == 3 && parts[1].Error != nil && parts[2].ToolCall != nil &&
			parts[2].ToolCall.Status == ahp.ToolCallStatusRunning && len(parts[2].ToolCall.Content) > 0
	})
	if len(st.Turns) != 0 || st.ActiveTurn.Message.Text != "sleep 30" {
		t.Errorf("resumed chat %s", jsonText(st))
	}
	c2.dispatch(chat, ahp.TurnCancelled("t1", 1))
	if got := c2.turn(chat, "t1"); got.State != ahp.TurnStateCancelled {
		t.Errorf("the resumed turn ended %s", got.State)
	}
	c2.dispatch(chat, ahp.TurnResume("t1")) // cancelled: nothing to resume
	c2.say(chat, "t3", "hello")
	c2.turn(chat, "t3")
	c2.mu.Lock()
	rejected := slices.Clone(c2.rejected)
	c2.mu.Unlock()
	if len(rejected) != 2 {
		t.Errorf("rejected %q, want the resume of t2 and of the cancelled t1", rejected)
	}
	c2.sameAsSnapshot(e, "soft")
}
