package bot_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/record/memrecord"
)

func TestUnknownOptionValueStopsNewNamingItAndTheAllowedOnes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		options bot.Options
		want    []string
	}{
		{"mainTurnPostMessageAbsent", bot.Options{MainTurnPostMessageAbsent: "loud"}, []string{`"loud"`, "post", "notice", "silence", "postNotice"}},
		{"contextIn", bot.Options{ContextIn: "header"}, []string{`"header"`, "text", "meta"}},
		{"askIn", bot.Options{AskIn: "elsewhere"}, []string{`"elsewhere"`, "main", "own"}},
		{"instructionsIn", bot.Options{InstructionsIn: "footer"}, []string{`"footer"`, "section", "body"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			c.options.Root = filepath.Join(base, "bots")
			store := memrecord.New()
			defer store.Close()
			_, err := bot.New(ctx(t), bot.Config{Store: store, ConfigDir: filepath.Join(base, "config"), HostName: "testhost", Options: c.options})
			if err == nil {
				t.Fatalf("New took %s %v", c.name, c.options)
			}
			for _, w := range append(c.want, c.name) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New's error %q does not say %s", err, w)
				}
			}
		})
	}
}

func TestKnownOptionValuesAreTaken(t *testing.T) {
	t.Parallel()
	for _, o := range []bot.Options{
		{MainTurnPostMessageAbsent: "notice", ContextIn: "meta", AskIn: "own", InstructionsIn: "body"},
		{MainTurnPostMessageAbsent: "postNotice", ContextIn: "text", AskIn: "main", InstructionsIn: "section"},
		{}, // every default
	} {
		base := t.TempDir()
		o.Root = filepath.Join(base, "bots")
		store := memrecord.New()
		svc, err := bot.New(ctx(t), bot.Config{Store: store, ConfigDir: filepath.Join(base, "config"), HostName: "testhost", Options: o})
		if err != nil {
			t.Fatalf("New(%+v): %v", o, err)
		}
		svc.Close()
		store.Close()
	}
}
