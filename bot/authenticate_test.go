package bot_test

import (
	"testing"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
)

func TestAServiceWithNoUsersDirectoryAuthenticatesNoConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tok := range []string{"", "root", "any-token-0123456789"} {
		if p, ok := e.svc.Authenticate(tok); ok || p.Root {
			t.Errorf("with no users directory the token %q authenticates as %+v, %v; want nobody", tok, p, ok)
		}
	}
	// In process the embedder is still root.
	e.make(t, access.RootPrincipal(), "motion", `{"name":"Motion"}`)
}

func TestAServiceOfALocalDirectoryAuthenticatesItsTokenAloneAsRoot(t *testing.T) {
	t.Parallel()
	const tok = "local-token-0123456789abcdef"
	e := newEnv(t, func(c *bot.Config) { c.Users = access.NewLocal(tok) })
	if p, ok := e.svc.Authenticate(tok); !ok || !p.Root {
		t.Errorf("the local token authenticates as %+v, %v; want root", p, ok)
	}
	if p, ok := e.svc.Authenticate("other-token-0123456789"); ok || p.Root {
		t.Errorf("another token authenticates as %+v, %v; want nobody", p, ok)
	}
}
