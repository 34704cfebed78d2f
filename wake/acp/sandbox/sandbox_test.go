package sandbox_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/wake/acp/sandbox"
	"github.com/agenthost/bots/wake/acp/sandbox/sandboxtest"
)

// place is a test's folders: a bot's folder and a home the sandbox
// grants, and a secret file beside them it does not.
type place struct {
	work, home, secret string
}

func newPlace(t *testing.T) place {
	t.Helper()
	base := t.TempDir()
	p := place{work: filepath.Join(base, "work"), home: filepath.Join(base, "home"), secret: filepath.Join(base, "secret.json")}
	for _, d := range []string{p.work, p.home, filepath.Join(p.home, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(p.secret, []byte(`{"token": "s3cret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p place) policy() sandbox.Policy {
	return sandbox.Policy{Write: []string{p.work, p.home}, Protect: []string{p.secret}}
}

// run runs name inside the sandbox of pol in p's work folder and returns
// its output and exit code.
func run(t *testing.T, p place, pol sandbox.Policy, name string, args ...string) (string, int) {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	pol.Read = append(pol.Read, sandbox.CommandPaths(path)...)
	cmd := exec.Command(path, args...)
	cmd.Dir = p.work
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + p.home, "TMPDIR=" + filepath.Join(p.home, "tmp")}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := sandbox.Start(cmd, pol); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

func TestShellReadsTheSystemAndWritesOnlyItsGrants(t *testing.T) {
	t.Parallel()
	sandboxtest.Require(t)
	p := newPlace(t)
	script := `set -e
ls /usr/bin >/dev/null
head -c 16 /dev/urandom >/dev/null
echo work > "$PWD/note" && cat "$PWD/note"
echo home > "$HOME/note" && cat "$HOME/note"
mkdir -p "$PWD/a" "$PWD/b" && echo x > "$PWD/a/f" && mv "$PWD/a/f" "$PWD/b/f"
t=$(mktemp) && echo tmp > "$t" && cat "$t"
echo ok`
	out, code := run(t, p, p.policy(), "sh", "-c", script)
	if code != 0 || out != "work\nhome\ntmp\nok\n" {
		t.Fatalf("sh exited %d: %q", code, out)
	}
	for _, probe := range []string{
		"cat " + p.secret,
		"echo x > " + filepath.Join(filepath.Dir(p.work), "new"),
		": > " + p.secret,
		"ls " + filepath.Dir(p.work),
		"cat /etc/shadow",
		"ls /tmp",
		"cat /proc/self/environ",
		"cat /proc/" + strconv.Itoa(os.Getpid()) + "/environ",
		"cat /proc/" + strconv.Itoa(os.Getpid()) + "/cmdline",
	} {
		if out, code := run(t, p, p.policy(), "sh", "-c", probe); code == 0 {
			t.Errorf("%q ran inside the sandbox: %q", probe, out)
		}
	}
	if data, err := os.ReadFile(p.secret); err != nil || string(data) != `{"token": "s3cret"}` {
		t.Errorf("the secret file is now %q, %v", data, err)
	}
}

func TestTheServerStaysUnrestrictedAfterStartingASandboxedChild(t *testing.T) {
	sandboxtest.Require(t)
	p := newPlace(t)
	for range 4 {
		if _, code := run(t, p, p.policy(), "sh", "-c", "cat "+p.secret); code == 0 {
			t.Fatal("the child read the secret")
		}
	}
	// Many goroutines on many threads, some of them new: none is
	// restricted.
	var wg sync.WaitGroup
	errs := make(chan error, 128)
	for range 64 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if _, err := os.ReadFile(p.secret); err != nil {
				errs <- err
			}
			if err := os.WriteFile(filepath.Join(filepath.Dir(p.work), "server-wrote"), []byte("x"), 0o600); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("the server is restricted after starting a sandboxed child: %v", err)
	}
}

func TestNodeRunsInsideTheSandbox(t *testing.T) {
	t.Parallel()
	sandboxtest.Require(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipped: node is not on PATH")
	}
	p := newPlace(t)
	script := `
const fs = require("fs"), os = require("os"), path = require("path"), dns = require("dns"), cp = require("child_process");
const out = [];
fs.readdirSync("/usr/lib");
const certs = ["/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs"].find(p => fs.existsSync(p));
if (certs) fs.statSync(certs).isDirectory() ? fs.readdirSync(certs) : fs.readFileSync(certs);
require("tls").rootCertificates.length;
fs.readFileSync("/etc/resolv.conf");
fs.writeFileSync(path.join(os.homedir(), ".agentrc"), "home");
fs.writeFileSync(path.join(process.cwd(), "notes.md"), "work");
fs.mkdtempSync(path.join(os.tmpdir(), "x-"));
out.push(os.cpus().length > 0, os.totalmem() > 0, os.loadavg().length);
out.push(cp.execSync("sh -c 'echo child'").toString().trim());
try { fs.readFileSync(process.argv[1]); out.push("read the secret") } catch (e) { out.push(e.code) }
dns.lookup("localhost", (err) => { out.push(err ? err.code : "dns"); console.log(out.join(" ")) });
`
	out, code := run(t, p, p.policy(), "node", "-e", script, p.secret)
	if code != 0 || strings.TrimSpace(out) != "true true 3 child EACCES dns" {
		t.Fatalf("node exited %d: %s", code, out)
	}
	if data, err := os.ReadFile(filepath.Join(p.work, "notes.md")); err != nil || string(data) != "work" {
		t.Errorf("node's file in the work folder: %q, %v", data, err)
	}
}

func TestAGrantReachingAProtectedPathIsRefused(t *testing.T) {
	t.Parallel()
	p := newPlace(t)
	pol := p.policy()
	pol.Read = []string{filepath.Dir(p.secret)}
	cmd := exec.Command("true")
	if err := sandbox.Start(cmd, pol); !errors.Is(err, sandbox.ErrReaches) {
		t.Fatalf("a grant holding the protected file: %v, want ErrReaches", err)
	}
	if cmd.Process != nil {
		t.Error("the command was started")
	}
}

func TestCommandPathsHoldTheNodeModulesTree(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	pkg := filepath.Join(base, "node_modules", "@zed", "agent", "dist")
	bin := filepath.Join(base, "node_modules", ".bin")
	for _, d := range []string{pkg, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pkg, "index.js"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../@zed/agent/dist/index.js", filepath.Join(bin, "agent")); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(base)
	got := sandbox.CommandPaths(filepath.Join(bin, "agent"))
	want := []string{bin, filepath.Join(real, "node_modules", "@zed", "agent", "dist"), filepath.Join(real, "node_modules")}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CommandPaths = %q, want %q", got, want)
	}
}

// listenLoopback listens on a free loopback port, accepting and closing
// every connection, and returns the port.
func listenLoopback(t testing.TB) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// connectScript tries a TCP connect to each port on 127.0.0.1 and says
// "<port> open" or "<port> refused" for each.
func connectScript(ports ...uint16) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "if (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null; then echo %d open; else echo %d refused; fi\n", p, p, p)
	}
	return b.String()
}

func TestAChildCannotConnectToARefusedPortAndCanConnectToAnother(t *testing.T) {
	t.Parallel()
	if abi := sandboxtest.Require(t); abi < sandbox.NetworkABI {
		t.Skipf("skipped: the kernel offers Landlock ABI %d, network rules need %d", abi, sandbox.NetworkABI)
	}
	p := newPlace(t)
	server, other := listenLoopback(t), listenLoopback(t)
	want := fmt.Sprintf("%d refused\n%d open\n", server, other)
	pol := p.policy()
	pol.RefuseConnect = []uint16{server}
	for i := range 3 {
		start := time.Now()
		out, code := run(t, p, pol, "bash", "-c", connectScript(server, other))
		t.Logf("start %d with a refused port, run to its end: %v", i+1, time.Since(start).Round(100*time.Microsecond))
		if out != want || code != 0 {
			t.Fatalf("a child refused port %d says %q (exit %d), want %q", server, out, code, want)
		}
	}
	// Its terminals, started by it, are refused too.
	if out, _ := run(t, p, pol, "bash", "-c", "bash -c '"+connectScript(server)+"'"); out != fmt.Sprintf("%d refused\n", server) {
		t.Errorf("a grandchild says %q", out)
	}
	// The same port is open to a child of a policy that refuses none.
	if out, _ := run(t, p, p.policy(), "bash", "-c", connectScript(server)); out != fmt.Sprintf("%d open\n", server) {
		t.Errorf("a child refused nothing says %q", out)
	}
	// And to this process, which the ruleset never restricts.
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", server))
	if err != nil {
		t.Errorf("the parent cannot connect to the port refused its children: %v", err)
	} else {
		c.Close()
	}
}

// BenchmarkStartWithARefusedPort is a sandboxed start of true, with a port
// refused and without, for docs/PERFORMANCE.md.
func BenchmarkStartWithARefusedPort(b *testing.B) {
	if abi := sandboxtest.Require(b); abi < sandbox.NetworkABI {
		b.Skipf("skipped: Landlock ABI %d has no network rules", abi)
	}
	path, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	for _, refuse := range []bool{false, true} {
		b.Run(fmt.Sprintf("refuse=%v", refuse), func(b *testing.B) {
			pol := sandbox.Policy{Read: sandbox.CommandPaths(path)}
			if refuse {
				pol.RefuseConnect = []uint16{9187}
			}
			for b.Loop() {
				cmd := exec.Command(path)
				if err := sandbox.Start(cmd, pol); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
