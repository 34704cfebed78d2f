package access_test

import (
	"testing"

	"github.com/agenthost/bots/access"
)

func TestALocalDirectoryMakesItsTokenRootAndNoOtherAnyone(t *testing.T) {
	t.Parallel()
	l := access.NewLocal("local-token-0123456789abcdef")
	if p, ok := l.Authenticate("local-token-0123456789abcdef"); !ok || !p.Root {
		t.Errorf("the local token authenticates as %+v, %v; want root", p, ok)
	}
	for _, tok := range []string{"", "local-token-0123456789abcde", "local-token-0123456789abcdefg", "root"} {
		if p, ok := l.Authenticate(tok); ok || p.Root {
			t.Errorf("token %q authenticates as %+v, %v; want nobody", tok, p, ok)
		}
	}
	if _, ok := access.NewLocal("").Authenticate(""); ok {
		t.Error("a directory of an empty token lets the empty token in")
	}
	if p, ok := l.Principal("alice"); ok || p.Root {
		t.Errorf("a local directory knows user alice as %+v", p)
	}
}
