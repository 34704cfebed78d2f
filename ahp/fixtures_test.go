package ahp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixture is one file of testdata/reducers (see its README).
type fixture struct {
	Description string            `json:"description"`
	Reducer     string            `json:"reducer"`
	Initial     json.RawMessage   `json:"initial"`
	Actions     []json.RawMessage `json:"actions"`
	Expected    json.RawMessage   `json:"expected"`
}

// changedIn09 lists the fixtures whose meaning changed in protocol 0.9.0,
// with how TestReducerFixtures treats each. This package speaks 0.9.x and
// 1.x; the fixtures come from the 0.8.0 development line. Every entry quotes
// the reason from testdata/reducers/README.md ("Known later upstream changes
// that affect kept files").
var changedIn09 = map[string]deviation{
	// README: "chat/error. Turn errors became durable response parts, and
	// chat/turnResume can reopen a turn whose error is resumable. 016 still
	// shows the older behaviour (error-0.9)." Its chat/error carries the 0.8
	// `error` member instead of the 0.9 `part`, so there is nothing to apply.
	"016-session-error-finalizes-turn-with-error": {skip: "error-0.9: chat/error carries an error part since 0.9.0"},

	// README: "Lifecycle value. creationFailed was renamed failed. 004 still
	// expects creationFailed (failed-0.9)." The expected lifecycle is renamed.
	"004-session-creationfailed": {renameLifecycle: true},
}

// clockFixtures are the 28 files flagged `clock`. README: "modifiedAt. Chat
// reducers now derive modifiedAt from data in the turn actions instead of the
// local clock. The 28 clock fixtures expect the pinned-clock value. A reducer
// that follows 0.9.0 gives a different modifiedAt for them." For these the
// top-level modifiedAt is left out of the comparison; everything else is
// compared. TestChatModifiedAtFollowsTurnActions checks the 0.9 rule.
var clockFixtures = []string{
	"005-session-turnstarted",
	"006-turnstarted-with-queuedmessageid-removes-from-queuedmessages",
	"007-turnstarted-with-queuedmessageid-removes-last-queued-message",
	"008-turnstarted-with-queuedmessageid-removes-matching-steering-message",
	"009-turnstarted-without-queuedmessageid-does-not-touch-pending-messages",
	"014-session-turncomplete-finalizes-turn",
	"015-session-turncancelled-finalizes-turn",
	"016-session-error-finalizes-turn-with-error",
	"017-turncomplete-force-cancels-in-progress-tool-calls",
	"063-session-truncated-keeps-turns-up-to-turnid",
	"064-session-truncated-keeps-all-when-turnid-is-last",
	"065-session-truncated-keeps-only-first-when-turnid-is-first",
	"066-session-truncated-clears-all-when-turnid-omitted",
	"067-session-truncated-drops-active-turn",
	"068-session-truncated-drops-active-turn-even-when-clearing-all",
	"070-full-turn-flow-with-tool-calls-and-re-confirmation",
	"075-turnstarted-clears-isread",
	"099-endturn-force-cancels-running-tool-call",
	"105-session-input-full-draft-and-complete-flow",
	"106-session-input-requested-with-drafts-status",
	"107-session-input-turn-end-cleans-turn-scoped-only",
	"108-session-input-upsert-and-clear-answer",
	"110-session-input-completion-and-truncation-filtering",
	"161-chat-turn-lifecycle-on-chat",
	"234-chat-truncated-clears-turns-next-cursor-when-clearing-all",
	"235-session-input-completion-records-declined-request-in-turn",
	"240-turn-duration-is-clamped-to-zero",
	"250-turncomplete-force-cancels-auth-required-tool-call",
}

// deviation is how one fixture is treated.
type deviation struct {
	skip            string // skip the whole file, for this reason
	ignoreModified  bool   // leave the top-level modifiedAt out of the comparison
	renameLifecycle bool   // read expected lifecycle "creationFailed" as "failed"
}

func deviationFor(name, reducer string) deviation {
	d := changedIn09[name]
	d.ignoreModified = reducer == "chat" && slices.Contains(clockFixtures, name)
	return d
}

func TestReducerFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "reducers", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) != 179 {
		t.Fatalf("found %d fixtures, want 179", len(files))
	}
	var clockFiles int
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var fx fixture
		if err := json.Unmarshal(data, &fx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dev := deviationFor(name, fx.Reducer)
		if dev.ignoreModified {
			clockFiles++
		}
		t.Run(name, func(t *testing.T) {
			if dev.skip != "" {
				t.Skip(dev.skip)
			}
			runFixture(t, fx, dev)
		})
	}
	if clockFiles != len(clockFixtures) {
		t.Errorf("matched %d clock fixtures, want %d", clockFiles, len(clockFixtures))
	}
}

// runFixture decodes the initial state, checks it encodes back to the same
// JSON, applies the actions, checks the initial state was not modified and
// compares the result with the expected state. Comparisons follow the Go
// runner's rule: null members count as absent.
func runFixture(t *testing.T, fx fixture, dev deviation) {
	t.Helper()
	actions := make([]Action, len(fx.Actions))
	for i, raw := range fx.Actions {
		if err := json.Unmarshal(raw, &actions[i]); err != nil {
			t.Fatalf("action %d: %v", i, err)
		}
	}
	var initial, final any
	switch fx.Reducer {
	case "root":
		initial, final = reduceFixture(t, fx.Initial, actions, ApplyRoot)
	case "session":
		initial, final = reduceFixture(t, fx.Initial, actions, ApplySession)
	case "chat":
		initial, final = reduceFixture(t, fx.Initial, actions, ApplyChat)
	case "resourceWatch":
		initial, final = reduceFixture(t, fx.Initial, actions, ApplyResourceWatch)
	default:
		t.Fatalf("unknown reducer %q", fx.Reducer)
	}
	if diff := cmp.Diff(normalized(t, fx.Initial), initial); diff != "" {
		t.Errorf("initial state does not round-trip (-fixture +encoded):\n%s", diff)
	}
	want := normalized(t, fx.Expected)
	got := final
	if dev.ignoreModified {
		delete(want.(map[string]any), "modifiedAt")
		delete(got.(map[string]any), "modifiedAt")
	}
	if dev.renameLifecycle {
		if m := want.(map[string]any); m["lifecycle"] == "creationFailed" {
			m["lifecycle"] = string(LifecycleFailed)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("final state (-expected +got):\n%s", diff)
	}
}

// reduceFixture decodes the initial state into S, applies the actions and
// returns the normalized JSON of the initial state (encoded after the run, to
// catch reducers that modify their input) and of the final state.
func reduceFixture[S any](t *testing.T, raw json.RawMessage, actions []Action, apply func(S, Action) S) (initial, final any) {
	t.Helper()
	var s S
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("decode initial state: %v", err)
	}
	before := encodeNormalized(t, s)
	state := s
	for _, a := range actions {
		state = apply(state, a)
	}
	after := encodeNormalized(t, s)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("reducer modified its input (-before +after):\n%s", diff)
	}
	return after, encodeNormalized(t, state)
}

func encodeNormalized(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return normalized(t, data)
}

// normalized parses JSON into generic values and removes every object member
// whose value is null, recursively.
func normalized(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("parse: %v", err)
	}
	return dropNulls(v)
}

func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			x[k] = dropNulls(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropNulls(e)
		}
	}
	return v
}
