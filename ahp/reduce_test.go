package ahp

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// t0 is the start time of the turns in these tests.
func t0() time.Time { return time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC) }

func newChat() ChatState {
	return ChatState{ChatSummary: ChatSummary{
		Resource: "ahp-chat:/c", Title: "Chat", Status: StatusIdle | StatusIsRead, ModifiedAt: "2026-01-01T00:00:00.000Z",
	}}
}

func apply(s ChatState, actions ...Action) ChatState {
	for _, a := range actions {
		s = ApplyChat(s, a)
	}
	return s
}

func TestChatModifiedAtFollowsTurnActions(t *testing.T) {
	t.Parallel()
	s := apply(newChat(), TurnStarted("t1", t0(), UserMessage("hi")))
	if s.ModifiedAt != "2026-05-06T07:08:09.000Z" {
		t.Errorf("after turnStarted modifiedAt = %s, want the turn's startedAt", s.ModifiedAt)
	}
	s = apply(s, InputRequested(ChatInputRequest{ID: "r1", Message: "?"}), AppendPart("t1", MarkdownResponse("p", "")))
	if s.ModifiedAt != "2026-05-06T07:08:09.000Z" {
		t.Errorf("an input request changed modifiedAt to %s", s.ModifiedAt)
	}
	s = apply(s, TurnComplete("t1", 2500*time.Millisecond))
	if s.ModifiedAt != "2026-05-06T07:08:11.500Z" {
		t.Errorf("after turnComplete modifiedAt = %s, want startedAt + duration", s.ModifiedAt)
	}
	s = apply(s, Truncated(""))
	if s.ModifiedAt != "2026-05-06T07:08:11.500Z" {
		t.Errorf("truncated changed modifiedAt to %s", s.ModifiedAt)
	}
}

func TestTurnStartedClearsIsReadAndMarksInProgress(t *testing.T) {
	t.Parallel()
	s := apply(newChat(), TurnStarted("t1", t0(), UserMessage("hi")))
	if s.Status != StatusInProgress {
		t.Errorf("status = %d, want InProgress without IsRead", s.Status)
	}
	if s.ActiveTurn == nil || s.ActiveTurn.ResponseParts == nil {
		t.Fatalf("active turn %+v, want one with an empty part list", s.ActiveTurn)
	}
}

func TestChatErrorAppendsTheErrorPartAndSetsErrorStatus(t *testing.T) {
	t.Parallel()
	s := apply(newChat(),
		TurnStarted("t1", t0(), UserMessage("hi")),
		AppendPart("t1", MarkdownResponse("p", "partial")),
		TurnFailed("t1", time.Second, ErrorInfo{ErrorType: "executionInterrupted", Message: "cut"}, true),
	)
	if s.ActiveTurn != nil || len(s.Turns) != 1 {
		t.Fatalf("turn not ended: %+v", s)
	}
	turn := s.Turns[0]
	if turn.State != TurnStateError || len(turn.ResponseParts) != 2 {
		t.Fatalf("turn = %+v, want state error with the markdown and error parts", turn)
	}
	last := turn.ResponseParts[1]
	if last.Error == nil || last.Error.Error.ErrorType != "executionInterrupted" || !last.Error.Resumable {
		t.Errorf("last part = %+v, want the resumable error part", last)
	}
	if s.Status.Activity() != StatusError {
		t.Errorf("status = %d, want Error activity", s.Status)
	}
}

func TestTurnResumeReopensAResumableErroredTurn(t *testing.T) {
	t.Parallel()
	s := apply(newChat(),
		TurnStarted("t1", t0(), UserMessage("hi")),
		AppendPart("t1", MarkdownResponse("p", "partial")),
		TurnFailed("t1", time.Second, ErrorInfo{ErrorType: "e", Message: "m"}, true),
		IsReadChanged(true), // a session action: ignored by the chat reducer
		TurnResume("t1"),
	)
	if s.ActiveTurn == nil || s.ActiveTurn.ID != "t1" || len(s.Turns) != 0 {
		t.Fatalf("turn not reopened: active=%+v turns=%d", s.ActiveTurn, len(s.Turns))
	}
	if len(s.ActiveTurn.ResponseParts) != 2 || s.ActiveTurn.StartedAt != FormatTime(t0()) {
		t.Errorf("reopened turn %+v, want its parts and startedAt kept", s.ActiveTurn)
	}
	if s.Status != StatusInProgress {
		t.Errorf("status = %d, want InProgress", s.Status)
	}
}

func TestTurnResumeIgnoresATurnThatIsNotResumable(t *testing.T) {
	t.Parallel()
	base := apply(newChat(),
		TurnStarted("t1", t0(), UserMessage("hi")),
		TurnFailed("t1", time.Second, ErrorInfo{ErrorType: "e", Message: "m"}, false),
	)
	for name, a := range map[string]Action{
		"not resumable": TurnResume("t1"),
		"unknown turn":  TurnResume("t9"),
	} {
		got := ApplyChat(base, a)
		if diff := cmp.Diff(encodeNormalized(t, base), encodeNormalized(t, got)); diff != "" {
			t.Errorf("%s changed the chat:\n%s", name, diff)
		}
	}
}

func TestResponsePartActionIgnoresErrorParts(t *testing.T) {
	t.Parallel()
	s := apply(newChat(), TurnStarted("t1", t0(), UserMessage("hi")))
	got := ApplyChat(s, AppendPart("t1", ResponsePart{Error: &ErrorPart{Error: ErrorInfo{Message: "x"}}}))
	if len(got.ActiveTurn.ResponseParts) != 0 {
		t.Errorf("error part appended through chat/responsePart: %+v", got.ActiveTurn.ResponseParts)
	}
}

func TestToolCallLifecycleOfAServerTool(t *testing.T) {
	t.Parallel()
	s := apply(newChat(),
		TurnStarted("t1", t0(), UserMessage("hi")),
		ToolCallStart("t1", "c1", "post_message", "Post message"),
		ToolCallReady("t1", "c1", Plain("Posting"), ConfirmedNotNeeded),
	)
	tc := s.ActiveTurn.ResponseParts[0].ToolCall
	if tc.Status != ToolCallStatusRunning || tc.Confirmed != ConfirmedNotNeeded {
		t.Fatalf("after ready: %+v", tc)
	}
	s = apply(s, ToolCallComplete("t1", "c1", ToolCallResult{Success: true, PastTenseMessage: Plain("Posted")}))
	tc = s.ActiveTurn.ResponseParts[0].ToolCall
	want := `{"status":"completed","toolCallId":"c1","toolName":"post_message","displayName":"Post message",` +
		`"invocationMessage":"Posting","success":true,"pastTenseMessage":"Posted","confirmed":"not-needed"}`
	if diff := cmp.Diff(normalized(t, []byte(want)), encodeNormalized(t, tc)); diff != "" {
		t.Errorf("completed call (-want +got):\n%s", diff)
	}
}

func TestToolCallWaitingForConfirmationMakesTheChatNeedInput(t *testing.T) {
	t.Parallel()
	s := apply(newChat(),
		TurnStarted("t1", t0(), UserMessage("hi")),
		ToolCallStart("t1", "c1", "rm", "Remove"),
		ToolCallReady("t1", "c1", Plain("Remove it?"), ""),
	)
	if s.Status.Activity() != StatusInputNeeded {
		t.Fatalf("status = %d, want InputNeeded", s.Status)
	}
	s = apply(s, ToolCallConfirmed("t1", "c1", false))
	tc := s.ActiveTurn.ResponseParts[0].ToolCall
	if tc.Status != ToolCallStatusCancelled || tc.Reason != CancelDenied || s.Status.Activity() != StatusInProgress {
		t.Errorf("after denial: call %+v, status %d", tc, s.Status)
	}
}

func TestActionsForAnUnknownTurnOrToolCallLeaveTheChatUnchanged(t *testing.T) {
	t.Parallel()
	base := apply(newChat(), TurnStarted("t1", t0(), UserMessage("hi")), ToolCallStart("t1", "c1", "x", "X"))
	for name, a := range map[string]Action{
		"delta other turn":       Delta("t2", "p", "x"),
		"delta missing part":     Delta("t1", "nope", "x"),
		"complete other turn":    TurnComplete("t2", time.Second),
		"tool call unknown":      ToolCallReady("t1", "c9", Plain("x"), ConfirmedNotNeeded),
		"tool call other turn":   ToolCallComplete("t2", "c1", ToolCallResult{Success: true}),
		"confirm not pending":    ToolCallConfirmed("t1", "c1", true),
		"answer unknown request": InputCompleted("r9", InputAccept, nil),
		"remove unknown queued":  PendingMessageRemoved(PendingQueued, "q9"),
		"root action":            AgentsChanged(nil),
	} {
		got := ApplyChat(base, a)
		if diff := cmp.Diff(encodeNormalized(t, base), encodeNormalized(t, got)); diff != "" {
			t.Errorf("%s changed the chat:\n%s", name, diff)
		}
	}
}

func TestReducersDoNotShareAppendedSlicesBetweenResults(t *testing.T) {
	t.Parallel()
	base := apply(newChat(), TurnStarted("t1", t0(), UserMessage("hi")))
	a := ApplyChat(base, AppendPart("t1", MarkdownResponse("a", "A")))
	b := ApplyChat(base, AppendPart("t1", MarkdownResponse("b", "B")))
	if a.ActiveTurn.ResponseParts[0].Markdown.ID != "a" || b.ActiveTurn.ResponseParts[0].Markdown.ID != "b" {
		t.Errorf("results from one base interfere: a=%s b=%s",
			a.ActiveTurn.ResponseParts[0].Markdown.ID, b.ActiveTurn.ResponseParts[0].Markdown.ID)
	}
	if len(base.ActiveTurn.ResponseParts) != 0 {
		t.Errorf("base changed: %+v", base.ActiveTurn.ResponseParts)
	}
}

func TestChatReadAndArchivedFlagsFollowTheirActions(t *testing.T) {
	t.Parallel()
	s := apply(newChat(),
		NewAction(&ChatIsReadChangedAction{IsRead: false}),
		NewAction(&ChatIsArchivedChangedAction{IsArchived: true}),
	)
	if s.Status != StatusIdle|StatusIsArchived {
		t.Errorf("status = %d, want Idle|IsArchived", s.Status)
	}
}

func TestBackgroundWorkIsUpsertedAndRemovedByID(t *testing.T) {
	t.Parallel()
	shell := BackgroundWork{Kind: BackgroundShell, ID: "w1", Label: "build", StartedAt: FormatTime(t0()), Command: "make"}
	s := apply(newChat(), BackgroundWorkSet(shell))
	shell.Label = "build again"
	s = apply(s, BackgroundWorkSet(shell), BackgroundWorkRemoved("nope"))
	if len(s.BackgroundWork) != 1 || s.BackgroundWork[0].Label != "build again" {
		t.Fatalf("background work %+v", s.BackgroundWork)
	}
	s = apply(s, BackgroundWorkRemoved("w1"))
	if len(s.BackgroundWork) != 0 {
		t.Errorf("not removed: %+v", s.BackgroundWork)
	}
}

func TestCreationFailedSetsTheFailedLifecycle(t *testing.T) {
	t.Parallel()
	s := ApplySession(SessionState{Lifecycle: LifecycleCreating}, CreationFailed(ErrorInfo{ErrorType: "x", Message: "no agent"}))
	if s.Lifecycle != LifecycleFailed || s.CreationError == nil || s.CreationError.Message != "no agent" {
		t.Errorf("session %+v", s)
	}
}

func TestWorkingDirectoryReplacedKeepsThePosition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dirs      []string
		dir, with string
		want      []string
	}{
		{[]string{"a", "b", "c"}, "a", "z", []string{"z", "b", "c"}},
		{[]string{"a", "b", "c"}, "a", "c", []string{"c", "b"}},
		{[]string{"a", "b", "c"}, "c", "a", []string{"a", "b"}},
		{[]string{"a"}, "x", "y", []string{"a"}},
	}
	for _, tt := range tests {
		s := SessionState{SessionMetadata: SessionMetadata{WorkingDirectories: tt.dirs}}
		got := ApplySession(s, NewAction(&SessionWorkingDirectoryReplacedAction{Directory: tt.dir, Replacement: tt.with}))
		if diff := cmp.Diff(tt.want, got.WorkingDirectories); diff != "" {
			t.Errorf("replace %s by %s in %v (-want +got):\n%s", tt.dir, tt.with, tt.dirs, diff)
		}
	}
}

func TestClientExecutionDoesNotRaiseInputNeeded(t *testing.T) {
	t.Parallel()
	s := SessionState{SessionMetadata: SessionMetadata{Status: StatusInProgress}}
	s = ApplySession(s, InputNeededSet(SessionInputRequest{Kind: InputNeededToolClientExecution, ID: "x", Chat: "c"}))
	if s.Status != StatusInProgress {
		t.Errorf("status = %d, want InProgress", s.Status)
	}
	s = ApplySession(s, InputNeededSet(SessionInputRequest{Kind: InputNeededChatInput, ID: "y", Chat: "c"}))
	if s.Status != StatusInputNeeded {
		t.Errorf("status = %d, want InputNeeded", s.Status)
	}
	s = ApplySession(s, InputNeededRemoved("y"))
	if s.Status != StatusInProgress || len(s.InputNeeded) != 1 {
		t.Errorf("status = %d with %d entries, want InProgress with one", s.Status, len(s.InputNeeded))
	}
}

func TestResourceWatchChangesPassThrough(t *testing.T) {
	t.Parallel()
	s := ResourceWatchState{Root: "bot://", Recursive: true}
	if got := ApplyResourceWatch(s, ResourceWatchChanged(ResourceChange{URI: "bot://a", Type: ChangeAdded})); got.Root != "bot://" || !got.Recursive {
		t.Errorf("state changed: %+v", got)
	}
}

func TestRequiredListsEncodeAsEmptyArrays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    any
		want string
	}{
		{RootState{}, `{"agents":[]}`},
		{SessionState{Lifecycle: LifecycleReady}, `{"provider":"","title":"","status":0,"lifecycle":"ready","activeClients":[],"chats":[]}`},
		{ChatState{}, `{"resource":"","title":"","status":0,"modifiedAt":"","turns":[]}`},
		{ListSessionsResult{}, `{"items":[]}`},
		{InitializeResult{ProtocolVersion: "1.0.0"}, `{"protocolVersion":"1.0.0","serverSeq":0,"snapshots":[]}`},
		{ReconnectResult{Type: ReconnectReplay}, `{"type":"replay","actions":[],"missing":[]}`},
		{ReconnectResult{Type: ReconnectSnapshot}, `{"type":"snapshot","snapshots":[]}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%T encoded %s, want %s", tt.v, got, tt.want)
		}
	}
}

func TestOptionalListsKeepEmptyApartFromAbsent(t *testing.T) {
	t.Parallel()
	var s ChatState
	s.WorkingDirectories = []string{}
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["workingDirectories"]; !ok {
		t.Errorf("empty workingDirectories dropped: %s", got)
	}
}

func TestToolCallStateEncodesTheMembersOfItsStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tc   ToolCallState
		want string
	}{
		{"cancelled without invocation",
			ToolCallState{Status: ToolCallStatusCancelled, ToolCallID: "c", ToolName: "n", DisplayName: "d", Reason: CancelSkipped, Options: []ConfirmationOption{{ID: "o"}}},
			`{"status":"cancelled","toolCallId":"c","toolName":"n","displayName":"d","invocationMessage":"","reason":"skipped"}`},
		{"completed failure",
			ToolCallState{Status: ToolCallStatusCompleted, ToolCallID: "c", ToolName: "n", DisplayName: "d", Confirmed: ConfirmedSetting},
			`{"status":"completed","toolCallId":"c","toolName":"n","displayName":"d","invocationMessage":"","success":false,"pastTenseMessage":"","confirmed":"setting"}`},
		{"streaming",
			ToolCallState{Status: ToolCallStatusStreaming, ToolCallID: "c", ToolName: "n", DisplayName: "d", Confirmed: ConfirmedSetting},
			`{"status":"streaming","toolCallId":"c","toolName":"n","displayName":"d"}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.tc)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(normalized(t, []byte(tt.want)), normalized(t, got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestUnknownVariantsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"kind":"hologram","beam":{"x":1}}`,
		`{"kind":"toolCall","toolCall":{"status":"teleporting","toolCallId":"c","toolName":"n","displayName":"d","extra":[1]}}`,
	} {
		var p ResponsePart
		if err := json.Unmarshal([]byte(in), &p); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(normalized(t, []byte(in)), encodeNormalized(t, p)); diff != "" {
			t.Errorf("(-in +encoded):\n%s", diff)
		}
	}
}

func TestStringOrMarkdownAndToolInputDecodeBothShapes(t *testing.T) {
	t.Parallel()
	var s []StringOrMarkdown
	if err := json.Unmarshal([]byte(`["plain",{"markdown":"*md*"}]`), &s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]StringOrMarkdown{Plain("plain"), Markdown("*md*")}, s); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var in []ToolInput
	if err := json.Unmarshal([]byte(`["{\"a\":1}",{"uri":"file:///x","sizeHint":3}]`), &in); err != nil {
		t.Fatal(err)
	}
	if in[0].Text != `{"a":1}` || in[1].Ref == nil || in[1].Ref.URI != "file:///x" {
		t.Errorf("decoded %+v", in)
	}
	out, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `["{\"a\":1}",{"uri":"file:///x","sizeHint":3}]` {
		t.Errorf("encoded %s", out)
	}
}

func TestSnapshotDecodesItsStateAsRawJSON(t *testing.T) {
	t.Parallel()
	snap := Snapshot{Resource: RootURI, State: RootState{Agents: []AgentInfo{{Provider: "echo"}}}, FromSeq: 4}
	data, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	raw, ok := back.State.(json.RawMessage)
	if !ok || back.FromSeq != 4 || back.Resource != RootURI {
		t.Fatalf("decoded %+v", back)
	}
	var root RootState
	if err := json.Unmarshal(raw, &root); err != nil || root.Agents[0].Provider != "echo" {
		t.Errorf("state %s: %v", raw, err)
	}
}

func TestDefaultChatURIIsUnpaddedBase64URLOfTheSession(t *testing.T) {
	t.Parallel()
	if got, want := DefaultChatURI("claude:/abc?"), "ahp-chat://default/Y2xhdWRlOi9hYmM_"; got != want {
		t.Errorf("DefaultChatURI = %s, want %s", got, want)
	}
}

func TestFormatTimeWritesUTCMilliseconds(t *testing.T) {
	t.Parallel()
	got := FormatTime(time.Date(2026, 1, 2, 3, 4, 5, 6_789_000, time.FixedZone("x", -2*3600)))
	if got != "2026-01-02T05:04:05.006Z" {
		t.Errorf("FormatTime = %s", got)
	}
}

func TestParamsChannelReadsTheChannelMember(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		`{"channel":"ahp-root://","x":1}`: "ahp-root://",
		`{"x":1}`:                         "",
		`{"channel":5}`:                   "",
		``:                                "",
		`[1]`:                             "",
	}
	for in, want := range tests {
		if got := ParamsChannel(json.RawMessage(in)); got != want {
			t.Errorf("ParamsChannel(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestAnActionWithANilBodyLeavesStatesUnchanged(t *testing.T) {
	t.Parallel()
	a := Action{Type: ActionChatDelta, Body: (*ChatDeltaAction)(nil)}
	base := apply(newChat(), TurnStarted("t1", t0(), UserMessage("hi")))
	if diff := cmp.Diff(encodeNormalized(t, base), encodeNormalized(t, ApplyChat(base, a))); diff != "" {
		t.Errorf("chat changed:\n%s", diff)
	}
	_ = ApplySession(SessionState{}, Action{Type: ActionSessionReady, Body: (*SessionReadyAction)(nil)})
	_ = ApplyRoot(RootState{}, Action{Type: ActionRootAgentsChanged, Body: (*RootAgentsChangedAction)(nil)})
	if _, err := json.Marshal(a); err == nil {
		t.Error("encoded an action with a nil body")
	}
}
