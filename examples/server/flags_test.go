package main

import (
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestOptionFlagWithAnUnknownValueStopsTheServerNamingIt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ flag, value, want string }{
		{"-main-turn-post-message-absent", "loud", `mainTurnPostMessageAbsent "loud" is not one of post, notice, silence or postNotice`},
		{"-context-in", "header", `contextIn "header" is neither text nor meta`},
		{"-ask-in", "elsewhere", `askIn "elsewhere" is neither main nor own`},
		{"-instructions-in", "footer", `instructionsIn "footer" is neither section nor body`},
		{"-lease-ttl", "100ms", `-lease-ttl: a lease time to live of 100ms is refused: it must be at least 500ms`},
		{"-lease-ttl", "-1s", `-lease-ttl: a lease time to live of -1s is refused`},
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

// asServerEnv set to "1" makes the test binary run main (see TestMain).
const asServerEnv = "BOTS_TEST_AS_SERVER"

func TestHelpFlagPrintsUsageAndExitsZero(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"-h", "-help", "--help"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$", "--", flag)
		cmd.Env = append(os.Environ(), asServerEnv+"=1", "HOME="+t.TempDir())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			t.Errorf("server %s: %v (stderr %q), want exit status 0", flag, err, stderr.String())
			continue
		}
		usage := stdout.String() + stderr.String()
		for _, want := range []string{"Usage", "-config", "-addr", "-ask-in", "-public-host"} {
			if !strings.Contains(usage, want) {
				t.Errorf("server %s printed %q, which does not show %s", flag, usage, want)
			}
		}
		if strings.Contains(usage, "help requested") {
			t.Errorf("server %s printed %q", flag, usage)
		}
	}
}

func TestServerRefusesAnAddressThatIsNotLoopbackWithoutAUsersFile(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	d.users = ""
	s, err := tryStart(d.args("-addr", "0.0.0.0:0"))
	if err == nil {
		s.stop(t)
		t.Fatal("the server served 0.0.0.0 with no users file")
	}
	if want := "refusing to serve 0.0.0.0:0 without a users file"; !strings.Contains(err.Error(), want) {
		t.Errorf("the server stopped with %q, want it to say %s", err, want)
	}
}

func TestBundledFlagWithABadFolderOrBotStopsTheServerNamingIt(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nowhere")
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "evil", "bot.md"), []byte("---\nname: Evil\nowner: user:mallory\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	if err := os.MkdirAll(filepath.Join(empty, "blank"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{missing, missing},
		{bad, filepath.Join(bad, "evil") + ": bot.md: a bundled bot names no owner"},
		{empty, filepath.Join(empty, "blank") + " has no bot.md"},
	} {
		s, err := tryStart(newDirs(t).args("-bundled", c.dir))
		if err == nil {
			s.stop(t)
			t.Errorf("the server started with -bundled %s", c.dir)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("-bundled %s: %v, want it to say %s", c.dir, err, c.want)
		}
	}
}

func TestLoginWithNoAgentsFileSaysWhereItGoesAndWhichSectionShowsOne(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	err := run(t.Context(), d.args("-login", "claude"), io.Discard)
	if err == nil {
		t.Fatal("-login with no agents file succeeded")
	}
	for _, want := range []string{filepath.Join(d.config, "agents.json"), "-agents FILE", `"Real agents"`, "naming claude"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("-login with no agents file said %q, want it to say %s", err, want)
		}
	}
}

// TestABusyAddressSaysHowToPickAnother: a second server on the default
// address fails saying that something listens there, and how -addr gives
// another.
func TestABusyAddressSaysHowToPickAnother(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	d := newDirs(t)
	_, err = tryStart(append(d.args(), "-addr", busy.Addr().String()))
	if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), "with -addr") {
		t.Errorf("a server on a busy address: %v, want it to say so and how -addr picks another", err)
	}
}
