package bot_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/record/filerecord"
)

// crashChildEnv, when set, makes the test binary the child of
// TestCrashMidWriteTearsNoBotMDOrAgentsMD: it writes until it is killed.
const crashChildEnv = "BOTS_CRASH_CHILD_BASE"

func openFileService(base string) (*bot.Service, *filerecord.Store, error) {
	ctx := context.Background()
	store, err := filerecord.Open(ctx, filerecord.Config{ConfigDir: filepath.Join(base, "config")})
	if err != nil {
		return nil, nil, err
	}
	svc, err := bot.New(ctx, bot.Config{
		Store: store, ConfigDir: filepath.Join(base, "config"), HostName: "h",
		Options: bot.Options{Root: filepath.Join(base, "bots")},
	})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return svc, store, nil
}

// TestMain runs the crash test's child when the environment asks for it,
// and the tests otherwise.
func TestMain(m *testing.M) {
	if base := os.Getenv(crashChildEnv); base != "" {
		crashChild(base)
	}
	waittest.Parallel(3)
	os.Exit(m.Run())
}

// crashChild makes and edits bots until it is killed, printing each
// acknowledged write.
func crashChild(base string) {
	svc, _, err := openFileService(base)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	p := access.RootPrincipal()
	for i := 0; ; i++ {
		id := fmt.Sprintf("bot-%d", i%8)
		rev := i / 8
		var err error
		if rev == 0 {
			_, err = svc.Make(context.Background(), p, id, []byte(fmt.Sprintf(`{"name":"Bot %d","instructions":"rev 0"}`, i)))
		} else {
			_, err = svc.Edit(context.Background(), p, id, []byte(fmt.Sprintf(`{"instructions":"rev %d","description":"%s"}`, rev, strings.Repeat("x", rev%50))), "")
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "write %s rev %d: %v\n", id, rev, err)
			os.Exit(2)
		}
		fmt.Fprintf(out, "ack %s %d\n", id, rev)
		out.Flush()
	}
}

func TestCrashMidWriteTearsNoBotMDOrAgentsMD(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+base)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int{}
	scan := bufio.NewScanner(stdout)
	for n := 0; n < 300 && scan.Scan(); n++ {
		f := strings.Fields(scan.Text())
		if len(f) == 3 && f[0] == "ack" {
			rev, _ := strconv.Atoi(f[2])
			acked[f[1]] = rev
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if len(acked) == 0 {
		t.Fatalf("the child acknowledged nothing; stderr:\n%s", stderr.String())
	}

	svc, store, err := openFileService(base)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	defer svc.Close()
	if problems := store.Problems(); len(problems) != 0 {
		t.Fatalf("torn or unreadable bot.md after the crash: %+v", problems)
	}
	for id, rev := range acked {
		b, err := svc.Read(context.Background(), access.RootPrincipal(), id)
		if err != nil {
			t.Fatalf("acknowledged bot %s: %v", id, err)
		}
		var got int
		if _, err := fmt.Sscanf(b.Record.Instructions, "rev %d", &got); err != nil || got < rev {
			t.Errorf("bot %s reads instructions %q, acknowledged rev %d", id, b.Record.Instructions, rev)
		}
	}
	// Every AGENTS.md on disk, acknowledged or not, parses.
	entries, _ := os.ReadDir(filepath.Join(base, "bots"))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(base, "bots", e.Name(), "AGENTS.md"))
		if err != nil {
			continue // a make killed before it wrote the file
		}
		if _, err := persona.Read(data, persona.InSection); err != nil {
			t.Errorf("torn AGENTS.md in %s: %v", e.Name(), err)
		}
	}
}
