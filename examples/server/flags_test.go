package main

import (
	"strings"
	"testing"
)

func TestOptionFlagWithAnUnknownValueStopsTheServerNamingIt(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"-main-turn-post-message-absent", "loud", `mainTurnPostMessageAbsent "loud" is not one of post, notice, silence or postNotice`},
		{"-context-in", "header", `contextIn "header" is neither text nor meta`},
		{"-ask-in", "elsewhere", `askIn "elsewhere" is neither main nor own`},
		{"-instructions-in", "footer", `instructionsIn "footer" is neither section nor body`},
	} {
		s, err := tryStart(newDirs(t).args(c.flag, c.value))
		if err == nil {
			s.stop(t)
			t.Errorf("the server started with %s %s", c.flag, c.value)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want it to say %s", c.flag, c.value, err, c.want)
		}
	}
}
