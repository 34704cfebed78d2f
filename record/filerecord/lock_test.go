package filerecord

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/bots/record"
)

func TestWriteToOneBotDoesNotWaitForAnother(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), Config{ConfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	unlock := s.lock("alpha") // as a write to alpha in progress holds it
	done := make(chan error, 1)
	go func() {
		_, err := s.Create(context.Background(), record.Record{ID: "beta", Name: "Beta"})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write to beta waited for alpha's lock")
	}
	unlock()
	s.lockMu.Lock()
	defer s.lockMu.Unlock()
	if len(s.locks) != 0 {
		t.Fatalf("locks left behind: %v", s.locks)
	}
}
