package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	ahpclient "github.com/agenthost/bots/client"
	"github.com/agenthost/bots/errcode"
)

// The JSON-RPC codes of the spec.
const (
	codeInvalidParams  = -32602
	codeMethodNotFound = -32601
	codeNotFound       = -32008
	codeDenied         = -32009
	codeExists         = -32010
	codeConflict       = -32011
)

func wantList(t *testing.T, what string, got, want []string) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func write(uri, body string, kv ...any) map[string]any {
	return res(uri, append([]any{"data", body, "encoding", "utf-8"}, kv...)...)
}

func TestEndToEndMakesEditsAndDeletesAsEachMayDo(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	g := newGroup(ctx, t)
	root := g.connect(t, rootToken, "root")
	soft := g.connect(t, softToken, "soft")
	kim := g.connect(t, kimToken, "kim")
	nemo := g.connect(t, nemoToken, "nemo")

	t.Run("a holder of bot:put makes her own bot and her team's", func(t *testing.T) {
		soft.makeBot(t, "motion", `{"name":"Motion","body":"robot","color":"teal","instructions":"Review pull requests."}`)
		soft.makeBot(t, "crew", `{"name":"Crew","owner":"team:backend"}`)
		m := soft.readBot(t, "motion")
		if m["owner"] != "user:soft" || m["name"] != "Motion" || m["instructions"] != "Review pull requests." ||
			m["workspace"] != filepath.Join(g.dirs.root, "motion") || m["createdAt"] == nil || m["session"] != "work" {
			t.Errorf("read motion = %v", m)
		}
		if c := soft.readBot(t, "crew"); c["owner"] != "team:backend" || c["color"] != "red" || c["body"] == nil {
			t.Errorf("read crew = %v", c)
		}
		agents, err := os.ReadFile(filepath.Join(g.dirs.root, "motion", "AGENTS.md"))
		if err != nil || !strings.Contains(string(agents), "Review pull requests.") {
			t.Errorf("AGENTS.md: %v\n%s", err, agents)
		}
	})
	t.Run("a make to the scheme root takes the slug from the body", func(t *testing.T) {
		soft.result(t, "resourceWrite", write("bot://", `{"id":"rooted","name":"Rooted"}`), nil)
		if r := soft.readBot(t, "rooted"); r["owner"] != "user:soft" {
			t.Errorf("read rooted = %v", r)
		}
	})
	t.Run("root makes bots for this host", func(t *testing.T) {
		root.makeBot(t, "hostbot", `{"name":"Host bot","owner":"root:anything"}`)
		if r := root.readBot(t, "hostbot"); r["owner"] != "root:"+hostName {
			t.Errorf("read hostbot = %v", r)
		}
	})
	t.Run("a make for another owner is refused", func(t *testing.T) {
		soft.fail(t, "resourceWrite", write("bot://kims", `{"name":"K","owner":"user:kim"}`, "createOnly", true), codeDenied, "user:kim")
		soft.fail(t, "resourceWrite", write("bot://hosts", `{"name":"H","owner":"root:`+hostName+`"}`, "createOnly", true), codeDenied)
	})
	t.Run("a make without bot:put is refused", func(t *testing.T) {
		kim.fail(t, "resourceWrite", write("bot://kims", `{"name":"K"}`, "createOnly", true), codeDenied, "bot:put")
		nemo.fail(t, "resourceWrite", write("bot://nemos", `{"name":"N"}`, "createOnly", true), codeDenied, "bot:put")
	})
	t.Run("a bad body is refused naming the field", func(t *testing.T) {
		soft.fail(t, "resourceWrite", write("bot://bad", `{"name":"B","colour":"red"}`, "createOnly", true), codeInvalidParams, "colour")
		soft.fail(t, "resourceWrite", write("bot://bad", `{"name":"B","color":"mauve"}`, "createOnly", true), codeInvalidParams, "color", "mauve")
		soft.fail(t, "resourceWrite", write("bot://bad", `{"name":"B","labels":"one"}`, "createOnly", true), codeInvalidParams, "labels")
		soft.fail(t, "resourceWrite", write("bot://bad", `{"body":"robot"}`, "createOnly", true), codeInvalidParams, "name")
		soft.fail(t, "resourceWrite", write("bot://Bad_Slug", `{"name":"B"}`, "createOnly", true), codeInvalidParams, "Bad_Slug")
		soft.fail(t, "resourceWrite", write("bot://motion", `{"instructions":"one\n## Two"}`), codeInvalidParams, "## Two")
		soft.fail(t, "resourceRead", res("bot://motion", "encoding", 7), codeInvalidParams, "encoding")
	})
	t.Run("an edit with the etag resolve gave applies", func(t *testing.T) {
		etag := soft.etag(t, "motion")
		soft.editBot(t, "motion", `{"color":"#2F6FDF","labels":["review"]}`, etag)
		m := soft.readBot(t, "motion")
		if m["color"] != "#2f6fdf" || m["name"] != "Motion" || m["body"] != "robot" {
			t.Errorf("after the edit motion = %v", m)
		}
		if now := soft.etag(t, "motion"); now == etag {
			t.Errorf("the etag %s did not change with the edit", etag)
		}
	})
	t.Run("a stale ifMatch is a conflict", func(t *testing.T) {
		etag := soft.etag(t, "motion")
		soft.editBot(t, "motion", `{"description":"first"}`, etag)
		soft.fail(t, "resourceWrite", write("bot://motion", `{"description":"second"}`, "ifMatch", etag), codeConflict, "bot://motion")
		if m := soft.readBot(t, "motion"); m["description"] != "first" {
			t.Errorf("description %v, want first", m["description"])
		}
	})
	t.Run("an edit may not move the owner", func(t *testing.T) {
		soft.fail(t, "resourceWrite", write("bot://crew", `{"owner":"user:soft"}`), codeInvalidParams, "owner")
	})
	t.Run("a reader may not edit or delete", func(t *testing.T) {
		kim.fail(t, "resourceWrite", write("bot://motion", `{"name":"Mine"}`), codeDenied, "bot://motion")
		kim.fail(t, "resourceDelete", res("bot://motion"), codeDenied, "bot://motion")
	})
	t.Run("one who may not read may not edit or delete", func(t *testing.T) {
		nemo.fail(t, "resourceWrite", write("bot://motion", `{"name":"Mine"}`), codeDenied, "bot://motion")
		nemo.fail(t, "resourceDelete", res("bot://motion"), codeDenied, "bot://motion")
		soft.fail(t, "resourceWrite", write("bot://hostbot", `{"name":"Mine"}`), codeDenied, "bot://hostbot")
	})
	t.Run("createOnly on an existing slug is refused", func(t *testing.T) {
		soft.fail(t, "resourceWrite", write("bot://motion", `{"name":"Again"}`, "createOnly", true), codeExists, "bot://motion")
		soft.fail(t, "resourceWrite", write("bot://", `{"id":"motion","name":"Again"}`), codeExists, "bot://motion")
	})
	t.Run("the owner deletes her bot and root deletes anyone's", func(t *testing.T) {
		soft.deleteBot(t, "rooted")
		root.deleteBot(t, "crew")
		soft.fail(t, "resourceRead", res("bot://rooted"), codeNotFound, "bot://rooted")
		kim.fail(t, "resourceRead", res("bot://crew"), codeNotFound, "bot://crew")
	})
	t.Run("a deleted slug is never made again", func(t *testing.T) {
		soft.fail(t, "resourceWrite", write("bot://rooted", `{"name":"Again"}`, "createOnly", true), codeExists, "bot://rooted")
		soft.fail(t, "resourceWrite", write("bot://rooted", `{"name":"Again"}`), codeExists, "bot://rooted")
		root.fail(t, "resourceWrite", write("bot://crew", `{"name":"Again"}`, "createOnly", true), codeExists, "bot://crew")
	})
	t.Run("a missing bot is not found", func(t *testing.T) {
		root.fail(t, "resourceRead", res("bot://ghost"), codeNotFound, "bot://ghost")
		root.fail(t, "resourceResolve", res("bot://ghost"), codeNotFound, "bot://ghost")
		root.fail(t, "resourceDelete", res("bot://ghost"), codeNotFound, "bot://ghost")
		root.fail(t, "resourceWrite", write("bot://ghost", `{"name":"G"}`, "ifMatch", `"x"`), codeNotFound, "bot://ghost")
		soft.fail(t, "resourceDelete", res("bot://rooted"), codeNotFound, "bot://rooted")
	})
	t.Run("an unserved scheme is method not found", func(t *testing.T) {
		root.fail(t, "resourceRead", res("nope://x"), codeMethodNotFound, "nope")
		root.fail(t, "resourceWrite", write("nope://x", "{}"), codeMethodNotFound, "nope")
	})
	t.Run("an unserved method is method not found", func(t *testing.T) {
		root.fail(t, "resourceMove", map[string]any{"channel": "ahp-root://", "source": "bot://motion", "destination": "bot://moved"}, codeMethodNotFound, "resourceMove")
		root.fail(t, "resourceCopy", map[string]any{"channel": "ahp-root://", "source": "bot://motion", "destination": "bot://copied"}, codeMethodNotFound, "resourceCopy")
		root.fail(t, "resourceMkdir", res("bot://motion"), codeMethodNotFound, "resourceMkdir")
		root.fail(t, "noSuchMethod", map[string]any{"channel": "ahp-root://"}, codeMethodNotFound, "noSuchMethod")
	})
}

func TestEndToEndListAnswersExactlyTheReadableBots(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	g := newGroup(ctx, t)
	root := g.connect(t, rootToken, "root")
	soft := g.connect(t, softToken, "soft")
	kim := g.connect(t, kimToken, "kim")
	nemo := g.connect(t, nemoToken, "nemo")
	soft.makeBot(t, "softs", `{"name":"Soft's"}`)
	soft.makeBot(t, "teams", `{"name":"Team's","owner":"team:backend"}`)
	root.makeBot(t, "hosts", `{"name":"Host's"}`)
	root.makeBot(t, "project", `{"name":"Project's","owner":"project:shop:website"}`)

	// who reads what: the owner, a member of the owning team, bot:get
	// (every bot), root (every bot), nobody else.
	table := []struct {
		who   string
		c     *client
		reads []string
	}{
		{"root", root, []string{"bot-builder", "hosts", "project", "softs", "teams"}}, // the builder is bundled
		{"soft", soft, []string{"softs", "teams"}},
		{"kim", kim, []string{"bot-builder", "hosts", "project", "softs", "teams"}},
		{"nemo", nemo, []string{}},
	}
	all := []string{"hosts", "project", "softs", "teams"}
	for _, row := range table {
		t.Run(row.who, func(t *testing.T) {
			wantList(t, "resourceList bot://", row.c.list(t), row.reads)
			for _, slug := range all {
				if strings.Contains(strings.Join(row.reads, " "), slug) {
					if b := row.c.readBot(t, slug); b["id"] != slug {
						t.Errorf("read %s = %v", slug, b)
					}
					row.c.etag(t, slug)
					continue
				}
				row.c.fail(t, "resourceRead", res("bot://"+slug), codeDenied, "bot://"+slug)
				row.c.fail(t, "resourceResolve", res("bot://"+slug), codeDenied, "bot://"+slug)
			}
		})
	}
	t.Run("the scheme root resolves as a folder and a bot is no folder", func(t *testing.T) {
		var r struct{ URI, Type string }
		nemo.result(t, "resourceResolve", res("bot://"), &r)
		if r.URI != "bot://" || r.Type != "directory" {
			t.Errorf("resolve bot:// = %+v", r)
		}
		soft.fail(t, "resourceList", res("bot://softs"), codeInvalidParams, "bot://softs")
		nemo.fail(t, "resourceList", res("bot://softs"), codeDenied, "bot://softs")
	})
}

func TestEndToEndWatchesHearEachChangeTheReaderMayRead(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	g := newGroup(ctx, t)
	root := g.connect(t, rootToken, "root")
	soft := g.connect(t, softToken, "soft")
	kim := g.connect(t, kimToken, "kim")
	nemo := g.connect(t, nemoToken, "nemo")
	soft.makeBot(t, "motion", `{"name":"Motion"}`)
	g.settle(t)

	t.Run("a watch on a missing slug is not found", func(t *testing.T) {
		soft.fail(t, "createResourceWatch", res("bot://ghost"), codeNotFound, "bot://ghost")
	})
	t.Run("a watch on a bot the reader may not read is refused", func(t *testing.T) {
		nemo.fail(t, "createResourceWatch", res("bot://motion"), codeDenied, "bot://motion")
	})
	t.Run("a watch on something other than bots is refused", func(t *testing.T) {
		soft.fail(t, "createResourceWatch", res("bot://Not_A_Slug"), codeInvalidParams)
		soft.fail(t, "createResourceWatch", res("nope://x"), codeMethodNotFound)
	})

	for _, c := range []*client{root, soft, kim, nemo} {
		c.watch(t, "bot://")
	}
	soft.watch(t, "bot://motion")
	kim.watch(t, "bot://motion")

	soft.makeBot(t, "gizmo", `{"name":"Gizmo"}`)
	soft.editBot(t, "motion", `{"description":"edited"}`, "")
	root.makeBot(t, "hostbot", `{"name":"Host bot"}`)
	root.editBot(t, "hostbot", `{"color":"blue"}`, "")
	root.deleteBot(t, "motion")
	soft.deleteBot(t, "gizmo")
	g.settle(t)

	// each watch's actions in order; two watches of one client are two
	// channels, with no order between them.
	all := []string{
		"added bot://gizmo", "updated bot://motion", "added bot://hostbot",
		"updated bot://hostbot", "deleted bot://motion", "deleted bot://gizmo",
	}
	softs := []string{"added bot://gizmo", "updated bot://motion", "deleted bot://motion", "deleted bot://gizmo"}
	motion := []string{"updated bot://motion", "deleted bot://motion"}
	want := map[string]map[string][]string{
		"root": {"bot://": all},
		"soft": {"bot://": softs, "bot://motion": motion},
		"kim":  {"bot://": all, "bot://motion": motion},
		"nemo": {},
	}
	for name, c := range map[string]*client{"root": root, "soft": soft, "kim": kim, "nemo": nemo} {
		t.Run("what "+name+" hears", func(t *testing.T) {
			if diff := cmp.Diff(want[name], byLabel(c.events(t))); diff != "" {
				t.Errorf("watch actions by watch (-want +got):\n%s", diff)
			}
		})
	}
}

// byLabel splits summaries by their label, keeping the order of each.
func byLabel(events []string) map[string][]string {
	out := map[string][]string{}
	for _, e := range events {
		label, what, _ := strings.Cut(e, ": ")
		out[label] = append(out[label], what)
	}
	return out
}

func TestEndToEndCatalogueShowsEachReaderItsBots(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	g := newGroup(ctx, t)
	root := g.connect(t, rootToken, "root")
	soft := g.connect(t, softToken, "soft")
	kim := g.connect(t, kimToken, "kim")
	nemo := g.connect(t, nemoToken, "nemo")
	soft.makeBot(t, "softs", `{"name":"Soft's"}`)
	soft.makeBot(t, "teams", `{"name":"Team's","owner":"team:backend"}`)
	root.makeBot(t, "hosts", `{"name":"Host's"}`)
	g.settle(t)

	t.Run("the snapshot holds the bots the reader may read", func(t *testing.T) {
		wantList(t, "root", root.subscribeCatalogue(t), []string{"bot-builder", "hosts", "softs", "teams"}) // the builder is bundled
		wantList(t, "soft", soft.subscribeCatalogue(t), []string{"softs", "teams"})
		wantList(t, "kim", kim.subscribeCatalogue(t), []string{"bot-builder", "hosts", "softs", "teams"})
		wantList(t, "nemo", nemo.subscribeCatalogue(t), []string{})
	})
	t.Run("added, changed and removed follow for the bots the reader may read", func(t *testing.T) {
		soft.makeBot(t, "fresh", `{"name":"Fresh"}`)
		soft.editBot(t, "teams", `{"description":"edited"}`, "")
		root.makeBot(t, "another", `{"name":"Another","owner":"team:backend"}`)
		root.editBot(t, "hosts", `{"color":"green"}`, "")
		root.deleteBot(t, "softs")
		g.settle(t)
		want := map[string][]string{
			"root": {"bots: added fresh", "bots: changed teams", "bots: added another", "bots: changed hosts", "bots: removed softs"},
			"soft": {"bots: added fresh", "bots: changed teams", "bots: added another", "bots: removed softs"},
			"kim":  {"bots: added fresh", "bots: changed teams", "bots: added another", "bots: changed hosts", "bots: removed softs"},
			"nemo": {},
		}
		for name, c := range map[string]*client{"root": root, "soft": soft, "kim": kim, "nemo": nemo} {
			wantList(t, name, c.events(t), want[name])
		}
	})
	t.Run("an added or changed action carries the bot as a read answers it", func(t *testing.T) {
		soft.editBot(t, "fresh", `{"instructions":"Be fresh."}`, "")
		var env envelope
		for {
			m := soft.next(t)
			if err := json.Unmarshal(m.Params, &env); err != nil {
				t.Fatal(err)
			}
			if env.Channel == "x-ahpd-bots://" {
				break
			}
		}
		var a struct {
			Type string         `json:"type"`
			Bot  map[string]any `json:"bot"`
		}
		if err := json.Unmarshal(env.Action, &a); err != nil {
			t.Fatal(err)
		}
		read := soft.readBot(t, "fresh")
		if a.Type != "x-ahpd-bots/changed" || !cmp.Equal(a.Bot, read) {
			t.Errorf("action %s, read %v", env.Action, read)
		}
		g.settle(t)
		for _, c := range []*client{root, soft, kim, nemo} {
			c.events(t)
		}
	})
	t.Run("an edit cannot take a bot out of a reader's sight", func(t *testing.T) {
		// owner is the only field sight depends on, and an edit may not
		// move it; a users-file change does (see the membership test).
		soft.fail(t, "resourceWrite", write("bot://teams", `{"owner":"user:soft"}`), codeInvalidParams, "owner")
	})
	t.Run("a client cannot dispatch to the catalogue", func(t *testing.T) {
		root.notify(t, "dispatchAction", map[string]any{"channel": "x-ahpd-bots://", "clientSeq": 1, "action": map[string]any{"type": "x-ahpd-bots/removed", "id": "hosts"}})
		got := root.events(t)
		if len(got) != 1 || !strings.HasPrefix(got[0], "bots: rejected removed hosts: ") {
			t.Errorf("root heard %q, want its action rejected", got)
		}
		for name, c := range map[string]*client{"soft": soft, "kim": kim, "nemo": nemo} {
			wantList(t, name, c.events(t), []string{})
		}
		root.readBot(t, "hosts")
	})
}

func TestEndToEndUsersFileChangeMovesAMembership(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	g := newGroup(ctx, t)
	soft := g.connect(t, softToken, "soft")
	soft.makeBot(t, "softs", `{"name":"Soft's"}`)
	soft.makeBot(t, "teams", `{"name":"Team's","owner":"team:backend"}`)
	g.settle(t)
	root := g.connect(t, rootToken, "root")
	kim := g.connect(t, kimToken, "kim")
	nemo := g.connect(t, nemoToken, "nemo")
	wantList(t, "soft", soft.subscribeCatalogue(t), []string{"softs", "teams"})
	wantList(t, "nemo", nemo.subscribeCatalogue(t), []string{})
	kim.subscribeCatalogue(t)
	root.subscribeCatalogue(t)

	// backend moves from soft to nemo: the directory polls the file.
	writeAtomic(t, g.dirs.users, usersJSON("nemo"))
	wantList(t, "nemo", nemo.waitFor(t, "bots: added teams"), []string{"bots: added teams"})
	wantList(t, "soft", soft.waitFor(t, "bots: removed teams"), []string{"bots: removed teams"})
	for name, c := range map[string]*client{"soft": soft, "nemo": nemo, "kim": kim, "root": root} {
		wantList(t, name+" after the move", c.events(t), []string{})
	}

	t.Run("the resource methods of open connections follow the move", func(t *testing.T) {
		wantList(t, "nemo lists", nemo.list(t), []string{"teams"})
		wantList(t, "soft lists", soft.list(t), []string{"softs"})
		nemo.editBot(t, "teams", `{"description":"nemo's team now"}`, "")
		soft.fail(t, "resourceWrite", write("bot://teams", `{"description":"not soft's"}`), codeDenied, "bot://teams")
		soft.fail(t, "createResourceWatch", res("bot://teams"), codeDenied, "bot://teams")
	})
}

func TestEndToEndWrongTokenIsRefusedWith401(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	srv := startServer(t, newDirs(t).args())
	for _, tc := range []struct {
		name  string
		token string
		by    tokenBy
	}{
		{"a wrong token in the query", "wrong", byQuery},
		{"a wrong bearer token", "wrong", byBearer},
		{"no token", "", byQuery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, resp, err := dialErr(ctx, srv, tc.token, tc.by)
			if err == nil {
				c.close()
				t.Fatal("the upgrade succeeded")
			}
			if resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("dial: %v, response %v; want 401", err, resp)
			}
		})
	}
	t.Run("a right bearer token is served", func(t *testing.T) {
		c := dial(ctx, t, srv, softToken, byBearer)
		if r := c.initialize(t, "bearer"); r.Meta["ahpd.principal"] != "user:soft" {
			t.Errorf("principal %v, want user:soft", r.Meta["ahpd.principal"])
		}
	})
}

func TestEndToEndWithoutUsersFile(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	t.Run("a non-loopback address is refused", func(t *testing.T) {
		d := newDirs(t)
		d.users = ""
		args := append(d.args(), "-addr", "0.0.0.0:0")
		_, err := tryStart(args)
		if err == nil || !strings.Contains(err.Error(), "0.0.0.0:0") || !strings.Contains(err.Error(), "users file") {
			t.Fatalf("run = %v, want a refusal naming the address and the users file", err)
		}
	})
	t.Run("the local token alone connects, and as root", func(t *testing.T) {
		d := newDirs(t)
		d.users = ""
		srv := startServer(t, d.args())
		for _, token := range []string{"anything", softToken, rootToken} {
			if _, resp, err := dialErr(ctx, srv, token, byQuery); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("token %q: %v, want 401", token, err)
			}
		}
		for i, by := range []tokenBy{byQuery, byBearer, byQuery} {
			token := srv.token
			c := dial(ctx, t, srv, token, by)
			if r := c.initialize(t, "anyone"); r.Meta["ahpd.principal"] != "root:"+hostName {
				t.Errorf("token %q: principal %v, want root:%s", token, r.Meta["ahpd.principal"], hostName)
			}
			slug := []string{"first", "second", "third"}[i]
			c.makeBot(t, slug, `{"name":"Any"}`)
			if b := c.readBot(t, slug); b["owner"] != "root:"+hostName {
				t.Errorf("owner %v, want root:%s", b["owner"], hostName)
			}
			c.editBot(t, "first", fmt.Sprintf(`{"description":"edited by %d"}`, i), "")
		}
	})
}

func TestEndToEndReconnectReplaysMissedActions(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	g := newGroup(ctx, t)
	soft := g.connect(t, softToken, "soft-desk")
	soft.makeBot(t, "kept", `{"name":"Kept"}`)
	soft.makeBot(t, "doomed", `{"name":"Doomed","owner":"team:backend"}`)
	g.settle(t)

	phone := dial(ctx, t, g.srv, softToken, byQuery)
	phone.initialize(t, "soft-phone")
	snap := phone.subscribe(t, "x-ahpd-bots://", "bots")
	lastSeen := snap.FromSeq
	soft.editBot(t, "kept", `{"description":"seen"}`, "")
	m := phone.next(t)
	var env envelope
	if err := json.Unmarshal(m.Params, &env); err != nil {
		t.Fatal(err)
	}
	if phone.summary(t, m) != "bots: changed kept" || env.ServerSeq <= lastSeen {
		t.Fatalf("phone heard %s after its snapshot at %d", m.raw, lastSeen)
	}
	lastSeen = env.ServerSeq
	phone.close()

	soft.makeBot(t, "missed", `{"name":"Missed"}`)
	soft.editBot(t, "kept", `{"description":"unseen"}`, "")
	g.root.deleteBot(t, "doomed")
	g.root.makeBot(t, "hidden", `{"name":"Hidden"}`) // soft may not read it
	g.settle(t)

	again := dial(ctx, t, g.srv, softToken, byBearer)
	again.mu.Lock()
	again.labels["x-ahpd-bots://"] = "bots"
	again.mu.Unlock()
	var r struct {
		Type    string     `json:"type"`
		Actions []envelope `json:"actions"`
		Missing []string   `json:"missing"`
	}
	again.result(t, "reconnect", map[string]any{
		"channel": "ahp-root://", "clientId": "soft-phone", "lastSeenServerSeq": lastSeen,
		"subscriptions": []string{"x-ahpd-bots://"},
	}, &r)
	if r.Type != "replay" || len(r.Missing) != 0 {
		t.Fatalf("reconnect answered type %q, missing %q; want a replay", r.Type, r.Missing)
	}
	var got []string
	prev := lastSeen
	for _, env := range r.Actions {
		if env.ServerSeq <= prev {
			t.Errorf("replayed serverSeq %d after %d", env.ServerSeq, prev)
		}
		prev = env.ServerSeq
		raw, _ := json.Marshal(env)
		if s := again.summary(t, &message{Method: "action", Params: raw}); !strings.Contains(s, fenceSlug) {
			got = append(got, s)
		}
	}
	wantList(t, "replayed", got, []string{"bots: added missed", "bots: changed kept", "bots: removed doomed"})

	t.Run("live actions follow on the new connection", func(t *testing.T) {
		soft.editBot(t, "missed", `{"description":"live"}`, "")
		g.settle(t)
		wantList(t, "after the replay", again.events(t), []string{"bots: changed missed"})
	})
}

func TestEndToEndHealthzAndAdvertisements(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	srv := startServer(t, newDirs(t).args())
	t.Run("GET /healthz answers 200", func(t *testing.T) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+srv.addr+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
			t.Errorf("GET /healthz: %d %q", resp.StatusCode, body)
		}
	})
	c := dial(ctx, t, srv, kimToken, byQuery)
	init := c.initialize(t, "meta")
	var root struct {
		Meta map[string]any `json:"_meta"`
	}
	snap := c.subscribe(t, "ahp-root://", "root")
	if err := json.Unmarshal(snap.State, &root); err != nil {
		t.Fatal(err)
	}
	for name, meta := range map[string]map[string]any{"initialize": init.Meta, "the root state": root.Meta} {
		t.Run(name+" advertises the bot: scheme and the catalogue", func(t *testing.T) {
			checkMeta(t, meta)
		})
	}
}

// checkMeta checks _meta['ahpd.resourceProviders'].bot and
// _meta['ahpd.channels'].
func checkMeta(t *testing.T, meta map[string]any) {
	t.Helper()
	data, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Providers map[string]struct {
			Title      string         `json:"title"`
			Root       string         `json:"root"`
			Operations []string       `json:"operations"`
			Manifest   map[string]any `json:"manifest"`
		} `json:"ahpd.resourceProviders"`
		Channels []struct {
			Scheme, Title, Description, Grant string
		} `json:"ahpd.channels"`
		Principal string `json:"ahpd.principal"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("_meta %s: %v", data, err)
	}
	b, ok := m.Providers["bot"]
	if !ok {
		t.Fatalf("_meta %s has no ahpd.resourceProviders.bot", data)
	}
	if b.Title == "" || b.Root != "bot://" {
		t.Errorf("bot provider title %q root %q", b.Title, b.Root)
	}
	wantList(t, "operations", b.Operations, []string{"get", "list", "resolve", "watch", "put", "delete"})
	props, _ := b.Manifest["properties"].(map[string]any)
	owner, _ := props["owner"].(map[string]any)
	if b.Manifest["type"] != "object" || props["name"] == nil || !strings.Contains(jsonString(owner), `"const":"root:`+hostName+`"`) {
		t.Errorf("manifest %s", jsonString(b.Manifest))
	}
	if len(m.Channels) != 2 || m.Channels[0].Scheme != "x-ahpd-bots" || m.Channels[0].Title != "Bots" || m.Channels[1].Scheme != "x-ahpd-problems" ||
		m.Channels[0].Grant != "bot:read" || m.Channels[0].Description == "" {
		t.Errorf("ahpd.channels = %+v", m.Channels)
	}
	if m.Principal != "user:kim" {
		t.Errorf("ahpd.principal = %q, want user:kim", m.Principal)
	}
}

func jsonString(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func TestEndToEndRestartKeepsBotsAndEtags(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := newDirs(t)
	first := startServer(t, d.args())
	c := dialClient(t, first.addr, softToken, "")
	for slug, f := range map[string]ahpclient.Fields{
		"motion": {Name: "Motion", Description: "Reads pull requests.", Instructions: "Say what breaks.", Labels: []string{"ci"}},
		"team":   {Name: "Team", Owner: "team:backend"}, "gone": {Name: "Gone"},
	} {
		_, err := c.Make(ctx, slug, f)
		check(t, err)
	}
	_, err := c.Edit(ctx, "team", ahpclient.Fields{Color: "purple"}, "")
	check(t, err)
	check(t, c.Delete(ctx, "gone"))
	before := map[string]ahpclient.Bot{}
	for _, slug := range []string{"motion", "team"} {
		before[slug], err = c.Read(ctx, slug)
		check(t, err)
	}
	c.Close()
	first.stop(t)

	second := startServer(t, d.args())
	c = dialClient(t, second.addr, softToken, "")
	slugs, err := c.List(ctx)
	check(t, err)
	wantList(t, "listed after the restart", slugs, []string{"motion", "team"})
	for slug, b := range before {
		if after, err := c.Read(ctx, slug); err != nil || !cmp.Equal(after, b) {
			t.Errorf("%s after the restart (-before +after), %v:\n%s", slug, err, cmp.Diff(b, after))
		}
	}
	if _, err := c.Make(ctx, "gone", ahpclient.Fields{Name: "Gone"}); errcode.Of(err) != errcode.AlreadyExists || !strings.Contains(err.Error(), "bot://gone") {
		t.Errorf("making gone again answered %v, want already exists naming bot://gone", err)
	}
	_, err = c.Edit(ctx, "motion", ahpclient.Fields{Description: "after"}, before["motion"].ETag)
	check(t, err)
}
