package builder_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/bot/builder"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
	"github.com/agenthost/bots/wake"
)

func TestBuilderLoadsAsABundledBotHoldingTheWorkspaceTools(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	s, err := bot.New(context.Background(), bot.Config{Store: memrecord.New(), ConfigDir: filepath.Join(base, "config"), HostName: "h",
		Options: bot.Options{Root: filepath.Join(base, "bots")}, Bundled: []bot.Bundle{builder.Bundle()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := s.Read(context.Background(), access.RootPrincipal(), builder.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if b.Record.Owner != "root:h" || !strings.Contains(b.Record.Instructions, "bot_make") {
		t.Errorf("the builder reads %+v", b.Record)
	}
	if err := wake.DefaultToolPolicy().Check(b.Record.Tools); err != nil {
		t.Errorf("the builder's tools list is refused by the default policy: %v", err)
	}
	if got := wake.DefaultToolPolicy().For(b.Record.Tools); !got.Has(wake.BotMake) || !got.Has(wake.AskQuestion) {
		t.Errorf("the builder holds %v, want the workspace tools and ask_question", got.Names())
	}
}

func TestBuilderInstructionsNameEveryToolColourAndBodyThisHostKnows(t *testing.T) {
	t.Parallel()
	data, err := fs.ReadFile(builder.FS(), builder.Slug+"/AGENTS.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	var want []string
	want = append(want, wake.ToolNames()...)
	want = append(want, record.Colors()...)
	want = append(want, record.Bodies()...)
	for _, w := range want {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(w) + `\b`).MatchString(text) {
			t.Errorf("the builder's AGENTS.md never names %q", w)
		}
	}
	// The colours and bodies it lists are all there are: none it names is
	// refused.
	for _, list := range []struct {
		known []string
		re    *regexp.Regexp
	}{
		{record.Colors(), regexp.MustCompile(`Pick a color \(([^)]*)\)`)},
		{record.Bodies(), regexp.MustCompile(`and a body \(([^)]*)\)`)},
	} {
		m := list.re.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("the builder's AGENTS.md has no list matching %s", list.re)
			continue
		}
		if named := strings.Split(m[1], ", "); !slices.Equal(named, list.known) {
			t.Errorf("the builder's AGENTS.md lists %q, the host knows %q", named, list.known)
		}
	}
}
