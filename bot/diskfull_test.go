package bot_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
)

// refusingStore is a memrecord whose writes fail with err once refuse
// sets it, as a file store's writes do on a full or read-only disk.
type refusingStore struct {
	*memrecord.Store
	mu  sync.Mutex
	err error
}

func (s *refusingStore) refuse(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *refusingStore) failure(op, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", op, id, &fs.PathError{Op: "write", Path: "/config/bots/" + id + "/.tmp-bot.md", Err: s.err})
}

func (s *refusingStore) Create(ctx context.Context, r record.Record) (record.Entry, error) {
	if err := s.failure("create", r.ID); err != nil {
		return record.Entry{}, err
	}
	return s.Store.Create(ctx, r)
}

func (s *refusingStore) Update(ctx context.Context, r record.Record, ifMatch string) (record.Entry, error) {
	if err := s.failure("update", r.ID); err != nil {
		return record.Entry{}, err
	}
	return s.Store.Update(ctx, r, ifMatch)
}

func (s *refusingStore) Delete(ctx context.Context, id, ifMatch string) error {
	if err := s.failure("delete", id); err != nil {
		return err
	}
	return s.Store.Delete(ctx, id, ifMatch)
}

func TestAWriteTheDiskRefusesIsUnavailableAndSaysWhyAndWhatWasNotSaved(t *testing.T) {
	t.Parallel()
	store := &refusingStore{Store: memrecord.New()}
	e := newEnv(t, withStore(store))
	e.make(t, soft, "keep", `{"name":"Keep","description":"as it was"}`)
	for _, tc := range []struct {
		cause error
		code  errcode.Code
		says  string
	}{
		{syscall.ENOSPC, errcode.Unavailable, "the server's disk is full"},
		{syscall.EDQUOT, errcode.Unavailable, "the server's disk is full"},
		{syscall.EROFS, errcode.Unavailable, "the server's disk is read-only"},
		{syscall.EIO, errcode.Internal, "internal error"},
	} {
		t.Run(tc.cause.Error(), func(t *testing.T) {
			store.refuse(tc.cause)
			defer store.refuse(nil)
			_, mk := e.svc.Make(ctx(t), soft, "lost", []byte(`{"name":"Lost"}`))
			_, ed := e.svc.Edit(ctx(t), soft, "keep", []byte(`{"description":"never saved"}`), "")
			del := e.svc.Delete(ctx(t), soft, "keep", "")
			for what, err := range map[string]error{"bot://lost": mk, "bot://keep": ed, "the deletion of bot://keep": del} {
				if errcode.Of(err) != tc.code || !strings.Contains(errcode.Message(err), tc.says) {
					t.Errorf("%s: %v (code %v), want %v saying %q", what, err, errcode.Of(err), tc.code, tc.says)
				}
				if tc.code == errcode.Unavailable && !strings.HasSuffix(errcode.Message(err), what+" was not saved") {
					t.Errorf("message %q does not say %s was not saved", errcode.Message(err), what)
				}
				if !errors.Is(err, tc.cause) {
					t.Errorf("%s: the cause %v is lost from %v", what, tc.cause, err)
				}
			}
		})
	}
	if got := e.read(t, soft, "keep").Record.Description; got != "as it was" {
		t.Errorf("after the refused edits the persona says %q, want it as it was", got)
	}
	if _, err := e.svc.Read(ctx(t), soft, "lost"); errcode.Of(err) != errcode.NotFound {
		t.Errorf("the refused make: read answered %v, want not found", err)
	}
}

func TestATurnWhoseLogLineCannotBeWrittenEndsInAnErrorNeverComplete(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, bot.Options{})
	e.makeBot(t, "motion", motionBody)
	c := e.connect(t, "soft")
	session, chat := c.open("ahp-session:/unlogged", "motion")
	c.say(chat, "t1", "hello")
	if turn := c.turn(chat, "t1"); turn.State != ahp.TurnStateComplete {
		t.Fatalf("turn t1 %s", jsonText(turn))
	}
	// The log can no longer be appended to: a folder stands in its place.
	log := filepath.Join(e.configDir, "bots", "motion", "logs", base64.RawURLEncoding.EncodeToString([]byte(session))+".jsonl")
	saved, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(log, 0o700); err != nil {
		t.Fatal(err)
	}
	c.say(chat, "t2", "lost words")
	turn := c.turn(chat, "t2")
	ei := turnError(turn)
	if turn.State != ahp.TurnStateError || ei == nil || ei.ErrorType != bot.UnsavedType || !strings.Contains(ei.Message, "log could not be written") {
		t.Fatalf("a turn whose log could not be written ended %s", jsonText(turn))
	}

	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	c.say(chat, "t3", "saved again")
	if turn := c.turn(chat, "t3"); turn.State != ahp.TurnStateComplete {
		t.Fatalf("the turn after the log came back %s", jsonText(turn))
	}
}
