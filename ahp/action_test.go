package ahp

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEveryFixtureActionRoundTrips(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "reducers", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if changedIn09[name].skip != "" {
			continue // its chat/error has the 0.8 shape
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var fx fixture
		if err := json.Unmarshal(data, &fx); err != nil {
			t.Fatal(err)
		}
		for i, raw := range fx.Actions {
			var a Action
			if err := json.Unmarshal(raw, &a); err != nil {
				t.Fatalf("%s action %d: %v", name, i, err)
			}
			if diff := cmp.Diff(normalized(t, raw), encodeNormalized(t, a)); diff != "" {
				t.Errorf("%s action %d (-fixture +encoded):\n%s", name, i, diff)
			}
		}
	}
}

func TestUnknownActionKeepsItsJSON(t *testing.T) {
	t.Parallel()
	in := `{"type":"future/thing","n":[1,2.5,{"x":null}],"s":"é"}`
	var a Action
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if a.Known() || a.Type != "future/thing" {
		t.Fatalf("got known=%v type=%q, want unknown future/thing", a.Known(), a.Type)
	}
	out, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("encoded %s, want %s", out, in)
	}
}

func TestUnknownActionLeavesEveryStateUnchanged(t *testing.T) {
	t.Parallel()
	a := Action{Type: "chat/somethingNew", Raw: json.RawMessage(`{"type":"chat/somethingNew"}`)}
	chat := ChatState{ChatSummary: ChatSummary{Resource: "ahp-chat:/c", Status: StatusIdle}}
	if diff := cmp.Diff(encodeNormalized(t, chat), encodeNormalized(t, ApplyChat(chat, a))); diff != "" {
		t.Errorf("chat changed:\n%s", diff)
	}
	session := SessionState{Lifecycle: LifecycleReady}
	if diff := cmp.Diff(encodeNormalized(t, session), encodeNormalized(t, ApplySession(session, a))); diff != "" {
		t.Errorf("session changed:\n%s", diff)
	}
	root := RootState{}
	if diff := cmp.Diff(encodeNormalized(t, root), encodeNormalized(t, ApplyRoot(root, a))); diff != "" {
		t.Errorf("root changed:\n%s", diff)
	}
}

func TestActionWithoutTypeIsAnError(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{}`, `{"type":3}`, `{"turnId":"t"}`, `[]`, `"x"`} {
		var a Action
		if err := json.Unmarshal([]byte(in), &a); err == nil {
			t.Errorf("%s: decoded without error", in)
		}
	}
}

func TestKnownActionWithABadPayloadIsAnError(t *testing.T) {
	t.Parallel()
	var a Action
	err := json.Unmarshal([]byte(`{"type":"chat/delta","turnId":5}`), &a)
	if err == nil {
		t.Fatal("decoded without error")
	}
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		t.Errorf("error %v does not wrap a *json.UnmarshalTypeError", err)
	}
}

func TestActionEnvelopeRoundTrips(t *testing.T) {
	t.Parallel()
	in := `{"channel":"ahp-chat://default/YQ","action":{"type":"chat/turnStarted","turnId":"t1",` +
		`"startedAt":"2026-01-02T03:04:05.000Z","message":{"text":"hi","origin":{"kind":"user"}}},` +
		`"serverSeq":7,"origin":{"clientId":"c1","clientSeq":3},"rejectionReason":"busy"}`
	var env ActionEnvelope
	if err := json.Unmarshal([]byte(in), &env); err != nil {
		t.Fatal(err)
	}
	body, ok := env.Action.Body.(*ChatTurnStartedAction)
	if !ok || body.Message.Text != "hi" || env.Origin.ClientSeq != 3 {
		t.Fatalf("decoded %+v", env)
	}
	if diff := cmp.Diff(normalized(t, []byte(in)), encodeNormalized(t, env)); diff != "" {
		t.Errorf("(-in +encoded):\n%s", diff)
	}
}

func TestServerActionEnvelopeOmitsOriginAndRejection(t *testing.T) {
	t.Parallel()
	env := ActionEnvelope{Channel: "ahp-root://", Action: ActiveSessionsChanged(2), ServerSeq: 1}
	got, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"channel":"ahp-root://","action":{"type":"root/activeSessionsChanged","activeSessions":2},"serverSeq":1}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestDispatchActionParamsDecodeTheAction(t *testing.T) {
	t.Parallel()
	in := `{"channel":"ahp-chat:/c","clientSeq":1,"action":{"type":"chat/pendingMessageSet","kind":"queued","id":"q1","message":{"text":"later","origin":{"kind":"user"}}}}`
	var p DispatchActionParams
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	b, ok := p.Action.Body.(*ChatPendingMessageSetAction)
	if !ok || b.Kind != PendingQueued || b.Message.Text != "later" {
		t.Errorf("decoded %+v", p)
	}
}

func TestConstructorsEncodeProtocolJSON(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.FixedZone("x", 3600))
	tests := []struct {
		name string
		a    Action
		want string
	}{
		{"agentsChanged nil", AgentsChanged(nil), `{"type":"root/agentsChanged","agents":[]}`},
		{"activeSessionsChanged", ActiveSessionsChanged(0), `{"type":"root/activeSessionsChanged","activeSessions":0}`},
		{"ready", SessionReady(), `{"type":"session/ready"}`},
		{"creationFailed", CreationFailed(ErrorInfo{ErrorType: "x", Message: "m"}),
			`{"type":"session/creationFailed","error":{"errorType":"x","message":"m"}}`},
		{"titleChanged", TitleChanged(""), `{"type":"session/titleChanged","title":""}`},
		{"defaultChatChanged clear", DefaultChatChanged(""), `{"type":"session/defaultChatChanged"}`},
		{"isReadChanged", IsReadChanged(false), `{"type":"session/isReadChanged","isRead":false}`},
		{"turnStarted", TurnStarted("t1", start, UserMessage("hi")),
			`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-03-04T04:06:07.890Z","message":{"text":"hi","origin":{"kind":"user"}}}`},
		{"turnStarted from queue", TurnStartedFromQueue("t2", start, "q1", UserMessage("x")),
			`{"type":"chat/turnStarted","turnId":"t2","startedAt":"2026-03-04T04:06:07.890Z","message":{"text":"x","origin":{"kind":"user"}},"queuedMessageId":"q1"}`},
		{"responsePart", AppendPart("t1", MarkdownResponse("p1", "")),
			`{"type":"chat/responsePart","turnId":"t1","part":{"kind":"markdown","id":"p1","content":""}}`},
		{"delta", Delta("t1", "p1", "abc"), `{"type":"chat/delta","turnId":"t1","partId":"p1","content":"abc"}`},
		{"reasoning", Reasoning("t1", "r1", "hmm"), `{"type":"chat/reasoning","turnId":"t1","partId":"r1","content":"hmm"}`},
		{"turnComplete", TurnComplete("t1", 1500*time.Millisecond), `{"type":"chat/turnComplete","turnId":"t1","duration":1500}`},
		{"turnCancelled", TurnCancelled("t1", 0), `{"type":"chat/turnCancelled","turnId":"t1","duration":0}`},
		{"error", TurnFailed("t1", time.Second, ErrorInfo{ErrorType: "e", Message: "boom"}, true),
			`{"type":"chat/error","turnId":"t1","duration":1000,"part":{"kind":"error","error":{"errorType":"e","message":"boom"},"resumable":true}}`},
		{"turnResume", TurnResume("t1"), `{"type":"chat/turnResume","turnId":"t1"}`},
		{"toolCallStart", ToolCallStart("t1", "c1", "post_message", "Post"),
			`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"c1","toolName":"post_message","displayName":"Post"}`},
		{"toolCallDelta", ToolCallDelta("t1", "c1", "{"), `{"type":"chat/toolCallDelta","turnId":"t1","toolCallId":"c1","content":"{"}`},
		{"toolCallReady auto", ToolCallReady("t1", "c1", Plain("Posting"), ConfirmedNotNeeded),
			`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"c1","invocationMessage":"Posting","confirmed":"not-needed"}`},
		{"toolCallReady ask", ToolCallReady("t1", "c1", Markdown("**Run?**"), ""),
			`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"c1","invocationMessage":{"markdown":"**Run?**"}}`},
		{"toolCallConfirmed deny", ToolCallConfirmed("t1", "c1", false),
			`{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"c1","approved":false,"reason":"denied"}`},
		{"toolCallComplete", ToolCallComplete("t1", "c1", ToolCallResult{PastTenseMessage: Plain("Failed"), Content: []ToolResultContent{TextContent("")}}),
			`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"c1","result":{"success":false,"pastTenseMessage":"Failed","content":[{"type":"text","text":""}]}}`},
		{"pendingMessageRemoved", PendingMessageRemoved(PendingQueued, "q1"), `{"type":"chat/pendingMessageRemoved","kind":"queued","id":"q1"}`},
		{"queuedMessagesReordered nil", QueuedMessagesReordered(nil), `{"type":"chat/queuedMessagesReordered","order":[]}`},
		{"truncated all", Truncated(""), `{"type":"chat/truncated"}`},
		{"draftChanged clear", DraftChanged(nil), `{"type":"chat/draftChanged"}`},
		{"resourceWatch/changed", ResourceWatchChanged(ResourceChange{URI: "bot://a", Type: ChangeUpdated}),
			`{"type":"resourceWatch/changed","changes":{"items":[{"uri":"bot://a","type":"updated"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.a)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(normalized(t, []byte(tt.want)), normalized(t, got)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", got, diff)
			}
			var back Action
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !back.Known() || back.Type != tt.a.Type {
				t.Errorf("decoded type %q known=%v, want %q", back.Type, back.Known(), tt.a.Type)
			}
		})
	}
}
