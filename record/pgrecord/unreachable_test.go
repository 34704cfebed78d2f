package pgrecord_test

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/agenthost/bots/record/pgrecord"
)

// TestADatabaseThatCannotBeReachedIsOneSentenceNamingWhereAndWhatToCheck:
// pgx reports each address it tried on a line of its own; Open says, in
// one line, which database at which address as whom, the cause in a few
// words and what to check - never the password - and keeps the cause for
// errors.Is.
func TestADatabaseThatCannotBeReachedIsOneSentenceNamingWhereAndWhatToCheck(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	_, err = pgrecord.Open(t.Context(), pgrecord.Config{URL: "postgres://alice:s3cret-passw0rd@" + addr + "/team?connect_timeout=5"})
	if err == nil {
		t.Fatal("Open of a database nobody serves succeeded")
	}
	msg := err.Error()
	for _, want := range []string{`"team"`, addr, `"alice"`, "connection refused", "check that PostgreSQL runs there"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, "s3cret") {
		t.Errorf("the error is more than one line or holds the password: %q", msg)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the cause is lost: %v", err)
	}
}
