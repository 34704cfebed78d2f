package relay

import (
	"testing"
	"time"

	"github.com/agenthost/bots/route"
)

func TestAGroupIsToldAgainOfAStrangerOnceTheirCodeCouldHaveRunOut(t *testing.T) {
	t.Parallel()
	w := &worker{told: map[toldKey]time.Time{}}
	k := toldKey{scope: route.Scope{Kind: route.Group, ID: "#motion"}, identity: "irc:mallory@irc.example.org", unmapped: route.Pair}
	if w.wasTold(k) {
		t.Fatal("a group was told of a stranger it never was")
	}
	w.tell(k)
	if !w.wasTold(k) {
		t.Fatal("a group just told of a stranger would be told again")
	}
	w.told[k] = time.Now().Add(-tellAgain) // as long ago as a code works
	if w.wasTold(k) {
		t.Error("a stranger whose code has run out is not told again")
	}
}
