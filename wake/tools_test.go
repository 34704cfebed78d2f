package wake

import (
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/record"
)

func TestToolPolicyOnlyNarrowsAndKeepsPostMessage(t *testing.T) {
	t.Parallel()
	p := DefaultToolPolicy()
	if got := p.For(nil).Names(); slices.Contains(got, BotMake) || !slices.Contains(got, AskQuestion) {
		t.Fatalf("a bot listing no tools holds %v: want the default set, without the workspace tools", got)
	}
	if got := p.For([]string{WorkspaceTools}).Names(); !slices.Contains(got, BotMake) || !slices.Contains(got, PostMessage) || slices.Contains(got, AskQuestion) {
		t.Fatalf("a bot listing bots holds %v: want the workspace tools and post_message alone", got)
	}
	if got := p.For([]string{AskQuestion}).Names(); !slices.Equal(got, []string{AskQuestion, PostMessage}) {
		t.Fatalf("a bot listing ask_question alone holds %v: post_message is never narrowed away", got)
	}
	narrow := ToolPolicy{Offered: []string{PostMessage, AskQuestion}}
	if got := narrow.For([]string{WorkspaceTools, ConnectorTools}).Names(); !slices.Equal(got, []string{PostMessage}) {
		t.Fatalf("a list wider than the host's offer gives %v: want the intersection", got)
	}
}

func TestToolPolicyRefusesAToolItDoesNotOfferNamingIt(t *testing.T) {
	t.Parallel()
	narrow := ToolPolicy{Offered: []string{PostMessage, AskQuestion}}
	err := narrow.Check([]string{PostMessage, WorkspaceTools})
	if err == nil || !strings.Contains(err.Error(), `"bots"`) {
		t.Fatalf("Check = %v, want a refusal naming bots", err)
	}
	if err := DefaultToolPolicy().Check([]string{"telepathy"}); err == nil || !strings.Contains(err.Error(), `"telepathy"`) {
		t.Fatalf("Check = %v, want a refusal naming telepathy", err)
	}
	if err := (ToolPolicy{Offered: []string{AskQuestion}}).Check([]string{PostMessage}); err != nil {
		t.Errorf("Check of post_message on a host not listing it = %v: every back session holds it", err)
	}
	if err := DefaultToolPolicy().Check([]string{BotRead, WorkspaceTools, ConnectorTools}); err != nil {
		t.Fatalf("Check of offered tools = %v", err)
	}
}

func TestToolPolicyListsWhatAToolsListMayNameOnItsHost(t *testing.T) {
	t.Parallel()
	if got := DefaultToolPolicy().Listable(); !slices.Equal(got, ToolNames()) {
		t.Errorf("the default policy lists %v, want every name %v", got, ToolNames())
	}
	narrow := ToolPolicy{Offered: []string{AskQuestion, BotRead}}
	if got := narrow.Listable(); !slices.Equal(got, []string{PostMessage, AskQuestion, BotRead}) {
		t.Errorf("a narrow policy lists %v, want post_message, ask_question and bot_read", got)
	}
	for _, n := range narrow.Listable() {
		if err := narrow.Check([]string{n}); err != nil {
			t.Errorf("the policy lists %q and refuses it: %v", n, err)
		}
	}
}

func TestRoutedNameIsASessionNameOfItsOwnPerRoute(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 40)
	a, b := RoutedName("work", "irc-dm"), RoutedName("work", "irc-room")
	if a == b || a == "work" || !strings.HasPrefix(a, "work-r") {
		t.Errorf("RoutedName gave %q and %q", a, b)
	}
	for _, name := range []string{a, RoutedName(long, "r"), RoutedName(strings.Repeat("ab-", 13)+"a", "r")} {
		if got, err := record.FillSessionName(name, "t1"); err != nil || got != name {
			t.Errorf("%q is no session name: %v", name, err)
		}
	}
}
