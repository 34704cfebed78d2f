package bots_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/bot/builder"
	"github.com/agenthost/bots/wake"
)

func TestServerServesTheBundlesItIsGivenAndNarrowsByItsToolPolicy(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	srv.Bundled = []bot.Bundle{builder.Bundle(), {Origin: "my host", FS: fstest.MapFS{
		"house/bot.md":    {Data: []byte("---\nname: House\n---\n")},
		"house/AGENTS.md": {Data: []byte("---\nname: House\n---\n## Instructions\nYou keep house.\n")},
	}}}
	srv.Tools = wake.ToolPolicy{Offered: []string{wake.PostMessage, wake.AskQuestion}}
	defer srv.Close()
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	svc := srv.Service()
	root := access.RootPrincipal()
	list, err := svc.List(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	for _, b := range list {
		slugs = append(slugs, b.Record.ID)
	}
	if strings.Join(slugs, " ") != "bot-builder house" {
		t.Errorf("the server lists %q, want the two bundled bots", slugs)
	}
	house, err := svc.Read(t.Context(), root, "house")
	if err != nil || house.Record.Owner != "root:test" || house.Record.Instructions != "You keep house." {
		t.Errorf("house reads %+v (%v), want the bundle's, owned by the host", house.Record, err)
	}
	if _, err := svc.Make(t.Context(), root, "mine", []byte(`{"name": "Mine", "tools": ["bots"]}`)); err == nil || !strings.Contains(err.Error(), `tools names "bots", which this host does not offer`) {
		t.Errorf("a make asking for tools the server's policy leaves out answers %v", err)
	}
	if _, err := svc.Make(t.Context(), root, "house", []byte(`{"name": "Mine"}`)); err == nil || !strings.Contains(err.Error(), "bundled with this host") {
		t.Errorf("a make of a bundled slug answers %v", err)
	}
	plain := newServer(t)
	defer plain.Close()
	if err := plain.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if list, err := plain.Service().List(t.Context(), root); err != nil || len(list) != 0 {
		t.Errorf("a server given no bundles lists %v (%v), want no bot", list, err)
	}
}
