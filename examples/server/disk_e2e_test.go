package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
)

// smallDisk mounts a tmpfs of size bytes at dir for the test and unmounts
// it at cleanup. It skips the test where mounting is refused (not root, or
// no mount in a container).
func smallDisk(t *testing.T, dir string, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a small filesystem of the test's own could not be mounted (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fill writes a file in dir until the filesystem is full, and returns a
// function that removes it.
func fill(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	// the last pages too: a byte at a time would be slow, a page at a time
	// is enough, since files grow by whole pages.
	for {
		if _, err := f.Write(chunk[:4096]); err != nil {
			break
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEndToEndAFullDiskRefusesWritesAsUnavailableAndFailsTheTurnItCannotLog(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	config, root := filepath.Join(base, "config"), filepath.Join(base, "bots")
	smallDisk(t, config, "2m")

	srv := startChatServer(t, config, root)
	c := dialChat(t, srv.addr, "disk")
	c.makeBot("keep", `{"name":"Keep"}`)
	chat := c.openChat("ahp-session:/disk", "keep")
	c.dispatch(chat, ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("before")))
	if turn := c.turn(chat, "t1"); turn.State != ahp.TurnStateComplete {
		t.Fatalf("the turn before the disk filled: %+v", turn)
	}

	free := fill(t, config)
	for _, tc := range []struct {
		what   string
		method string
		params map[string]any
		uri    string
	}{
		{"a make", "resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://lost", "data": `{"name":"Lost"}`, "encoding": "utf-8", "createOnly": true}, "bot://lost"},
		{"an edit", "resourceWrite", map[string]any{"channel": ahp.RootURI, "uri": "bot://keep", "data": `{"description":"` + strings.Repeat("d", 2000) + `"}`, "encoding": "utf-8"}, "bot://keep"},
		{"a new chat", "createSession", map[string]any{"channel": "ahp-session:/full", "provider": "bot-chat", "config": map[string]any{"bot": "keep"}}, "ahp-session:/full"},
	} {
		err := c.call(tc.method, tc.params, nil, nil)
		if err == nil {
			t.Fatalf("%s on a full disk was acknowledged", tc.what)
		}
		if err.Code != -32603 || !strings.Contains(err.Message, "disk is full") || !strings.Contains(err.Message, tc.uri) {
			t.Errorf("%s on a full disk answered %d %q, want -32603 saying the disk is full and naming %s", tc.what, err.Code, err.Message, tc.uri)
		}
	}

	// A long message: its log line needs pages the full disk has not.
	words := strings.Repeat("full ", 4000)
	c.dispatch(chat, ahp.TurnStarted("t2", time.Now(), ahp.UserMessage(words)))
	turn := c.turn(chat, "t2")
	if turn.State == ahp.TurnStateComplete {
		t.Fatalf("a turn whose log could not be written ended as complete")
	}
	ei := turnErrorOf(turn)
	if turn.State != ahp.TurnStateError || ei == nil || !strings.Contains(ei.Message, "disk is full") {
		t.Fatalf("the turn on a full disk ended %s with %+v, want an error saying the disk is full", turn.State, ei)
	}

	free()
	c.dispatch(chat, ahp.TurnStarted("t3", time.Now(), ahp.UserMessage("after")))
	if turn := c.turn(chat, "t3"); turn.State != ahp.TurnStateComplete {
		t.Fatalf("the turn after the disk was freed: %+v", turn)
	}

	t.Run("after a restart, what was acknowledged is there and nothing else", func(t *testing.T) {
		srv.restart(t)
		srv = startChatServer(t, config, root)
		c := dialChat(t, srv.addr, "disk-after")
		var keep struct {
			Data string `json:"data"`
		}
		c.must("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": "bot://keep"}, &keep)
		if strings.Contains(keep.Data, "ddd") {
			t.Errorf("the edit refused on the full disk is in the bot: %s", keep.Data)
		}
		if err := c.call("resourceRead", map[string]any{"channel": ahp.RootURI, "uri": "bot://lost"}, nil, nil); err == nil || err.Code != -32008 {
			t.Errorf("the make refused on the full disk: read answered %+v, want not found", err)
		}
		c.subscribe("ahp-session:/disk")
		c.subscribe(chat)
		c.mu.Lock()
		s := c.chats[chat]
		c.mu.Unlock()
		states := map[string]ahp.TurnState{}
		for _, turn := range s.Turns {
			states[turn.ID] = turn.State
		}
		if states["t1"] != ahp.TurnStateComplete || states["t3"] != ahp.TurnStateComplete || states["t2"] == ahp.TurnStateComplete {
			t.Errorf("the turns after the restart: %v; want t1 and t3 complete, t2 not", states)
		}
	})
}

// restart stops the server, as for a restart on the same folders: the
// test's cleanup still finds it stopped.
func (s *chatServer) restart(t *testing.T) {
	t.Helper()
	s.cancel()
	err := <-s.done
	if err != nil {
		t.Errorf("run: %v", err)
	}
	s.done <- nil
}

func turnErrorOf(t ahp.Turn) *ahp.ErrorInfo {
	for _, p := range t.ResponseParts {
		if p.Error != nil {
			return &p.Error.Error
		}
	}
	return nil
}
