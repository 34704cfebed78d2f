package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// problemsOf reads the problems of the next action on x-ahpd-problems://,
// skipping the client's other notifications.
func problemsOf(t *testing.T, c *client) []map[string]any {
	t.Helper()
	for {
		m := c.next(t)
		if m.Method != "action" {
			continue
		}
		var env envelope
		if err := json.Unmarshal(m.Params, &env); err != nil {
			t.Fatal(err)
		}
		if env.Channel != "x-ahpd-problems://" {
			continue
		}
		var a struct {
			Type     string           `json:"type"`
			Problems []map[string]any `json:"problems"`
		}
		if err := json.Unmarshal(env.Action, &a); err != nil || a.Type != "x-ahpd-problems/changed" || a.Problems == nil {
			t.Fatalf("problems action %s: %v", env.Action, err)
		}
		return withoutBuilderOnEcho(a.Problems)
	}
}

// withoutBuilderOnEcho is ps without the problem every test server has:
// its builder bot runs on echo, which cannot call the builder's tools
// (TestEndToEndABotOnAnAgentTheHostDoesNotRunIsAProblemAtOnce).
func withoutBuilderOnEcho(ps []map[string]any) []map[string]any {
	out := []map[string]any{}
	for _, p := range ps {
		if r, _ := p["reason"].(string); p["bot"] == "bot-builder" && strings.HasPrefix(r, "the bot runs on echo") {
			continue
		}
		out = append(out, p)
	}
	return out
}

// noProblemsBut says whether a problems snapshot state holds none but the
// builder's on echo.
func noProblemsBut(t *testing.T, state json.RawMessage) bool {
	t.Helper()
	var st struct {
		Problems []map[string]any `json:"problems"`
	}
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatal(err)
	}
	return st.Problems != nil && len(withoutBuilderOnEcho(st.Problems)) == 0
}

func TestEndToEndAProblemIsPushedWhenItAppearsAndWhenItClears(t *testing.T) {
	t.Parallel()
	d, srv, cs := serve(t, softToken, rootToken, nemoToken)
	soft, root, nemo := cs[0], cs[1], cs[2]
	soft.makeBot(t, "motion", `{"name":"Motion"}`)
	for _, c := range cs {
		snap := c.subscribe(t, "x-ahpd-problems://", "problems")
		if !noProblemsBut(t, snap.State) {
			t.Fatalf("problems snapshot %s, want none", snap.State)
		}
	}

	// A hand edit the store refuses: the owner may not be changed by hand.
	file := filepath.Join(d.config, "bots", "motion", "bot.md")
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(good), "owner: user:soft") {
		t.Fatalf("bot.md:\n%s", good)
	}
	writeAtomic(t, file, strings.Replace(string(good), "owner: user:soft", "owner: user:kim", 1))
	ps := problemsOf(t, soft)
	if len(ps) != 1 || ps[0]["bot"] != "motion" || ps[0]["path"] != nil || !strings.Contains(ps[0]["reason"].(string), "owner may not be changed by hand") {
		t.Fatalf("the owner hears %v, want motion's refused edit without its path", ps)
	}
	if ps := problemsOf(t, root); len(ps) != 1 || ps[0]["path"] != file {
		t.Fatalf("root hears %v, want motion's with its path", ps)
	}
	// A new subscriber's snapshot holds it too.
	late := dial(testCtx(t), t, srv, softToken, byQuery)
	late.initialize(t, "late")
	if snap := late.subscribe(t, "x-ahpd-problems://", "problems"); !strings.Contains(string(snap.State), "owner may not be changed by hand") {
		t.Fatalf("a later snapshot %s", snap.State)
	}

	// Put right, it clears.
	writeAtomic(t, file, string(good))
	if ps := problemsOf(t, soft); len(ps) != 0 {
		t.Fatalf("after the fix the owner hears %v, want none", ps)
	}
	if ps := problemsOf(t, root); len(ps) != 0 {
		t.Fatalf("after the fix root hears %v, want none", ps)
	}
	// nemo, who may read no bot, heard nothing of it.
	if got := nemo.events(t); len(got) != 0 {
		t.Fatalf("nemo heard %v", got)
	}
}

func TestEndToEndAMembershipMovedMovesTheProblemsItsUsersSee(t *testing.T) {
	t.Parallel()
	d, _, cs := serve(t, softToken, nemoToken)
	soft, nemo := cs[0], cs[1]
	soft.makeBot(t, "teams", `{"name":"Team's","owner":"team:backend"}`)
	file := filepath.Join(d.config, "bots", "teams", "bot.md")
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	soft.subscribe(t, "x-ahpd-problems://", "problems")
	if snap := nemo.subscribe(t, "x-ahpd-problems://", "problems"); !noProblemsBut(t, snap.State) {
		t.Fatalf("nemo's snapshot %s", snap.State)
	}
	writeAtomic(t, file, strings.Replace(string(good), "owner: team:backend", "owner: user:nemo", 1))
	if ps := problemsOf(t, soft); len(ps) != 1 || ps[0]["bot"] != "teams" {
		t.Fatalf("soft, of backend, hears %v", ps)
	}

	// backend moves from soft to nemo: nemo now sees the team's bot, and
	// its problem; soft no longer does.
	writeAtomic(t, d.users, usersJSON("nemo"))
	if ps := problemsOf(t, nemo); len(ps) != 1 || ps[0]["bot"] != "teams" || ps[0]["path"] != nil {
		t.Fatalf("nemo, now of backend, hears %v", ps)
	}
	if ps := problemsOf(t, soft); len(ps) != 0 {
		t.Fatalf("soft, no longer of backend, hears %v", ps)
	}
}
