// Package pgtest gives tests a PostgreSQL of their own: the database named
// by BOTS_TEST_DATABASE_URL when it is set, else a throwaway cluster
// (initdb and pg_ctl in a temporary folder, on a free loopback port) that
// one test binary starts at its first use and stops when it ends. Each
// test gets a schema of its own, dropped when it ends. The cluster fsyncs
// only when benchmarks run (durability).
//
// A package uses it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and each test calls URL. Where no PostgreSQL is found the tests skip with
// one line, unless BOTS_REQUIRE_POSTGRES=1 (CI), which makes that a failure.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The environment variables the harness reads.
const (
	// EnvURL names a database to test against instead of a throwaway
	// cluster; the role must be allowed to create schemas.
	EnvURL = "BOTS_TEST_DATABASE_URL"
	// EnvRequire set to 1 turns "no PostgreSQL found" from a skip into a
	// failure.
	EnvRequire = "BOTS_REQUIRE_POSTGRES"
)

// cluster is the one PostgreSQL of a test binary.
type cluster struct {
	once    sync.Once
	url     string // the base URL, database postgres
	missing string // why there is none, when there is none
	err     error  // why starting it failed
	dir     string // the throwaway cluster's folder, "" for BOTS_TEST_DATABASE_URL
	run     []string
	bin     string
	seq     int
	seqMu   sync.Mutex
	inMain  atomic.Bool // Main runs the tests: it stops the cluster after them
	// admin makes and drops the tests' schemas on connections it keeps:
	// a connection is a backend process, whose start and end take some
	// 30 ms of CPU on a small machine (a connection each, before).
	admin *pgxpool.Pool
}

var the cluster // one per test binary: TestMain owns its start and stop

// Main runs the tests of m and then stops the throwaway cluster, if one was
// started. Its result is the exit code to pass to os.Exit.
func Main(m *testing.M) int {
	the.inMain.Store(true)
	code := m.Run()
	if err := the.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stop the throwaway PostgreSQL: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// outsideMain says why a test may not have a PostgreSQL when Main does
// not run the tests: the throwaway cluster would outlive the test binary,
// a server left running on the machine after every run; "" when Main
// runs them.
func (c *cluster) outsideMain() string {
	if c.inMain.Load() {
		return ""
	}
	return "pgtest: the package's tests do not run through pgtest.Main, which stops the throwaway PostgreSQL when they end: add func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }"
}

// URL returns the URL of a fresh, empty schema for tb (its search_path),
// dropped when tb ends. Without a PostgreSQL it skips tb with one line, or
// fails it when BOTS_REQUIRE_POSTGRES=1.
func URL(tb testing.TB) string {
	tb.Helper()
	if problem := the.outsideMain(); problem != "" {
		tb.Fatal(problem)
	}
	the.once.Do(the.start)
	if the.missing != "" {
		if os.Getenv(EnvRequire) == "1" {
			tb.Fatalf("no PostgreSQL and %s=1: %s", EnvRequire, the.missing)
		}
		tb.Skipf("PostgreSQL tests skipped: %s", the.missing)
	}
	if the.err != nil {
		tb.Fatalf("pgtest: %v", the.err)
	}
	schema := the.nextSchema()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := the.admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := the.admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	return WithSchema(the.url, schema)
}

// Pool opens a pool on url (one URL gives), closed when tb ends.
func Pool(tb testing.TB, url string) *pgxpool.Pool {
	tb.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		tb.Fatalf("pgtest: open a pool: %v", err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// Stores opens stores of one kind for a conformance suite's harness: Open
// one on a fresh schema, Reopen another on the schema of one it opened (a
// restart, or a second instance), each on a pool of its own.
type Stores[T comparable] struct {
	open func(context.Context, *pgxpool.Pool) (T, error)
	mu   sync.Mutex
	urls map[T]string
}

// NewStores returns Stores that open each store with open.
func NewStores[T comparable](open func(context.Context, *pgxpool.Pool) (T, error)) *Stores[T] {
	return &Stores[T]{open: open, urls: map[T]string{}}
}

// On opens a store on a new pool to url, closed when tb ends.
func (s *Stores[T]) On(tb testing.TB, url string) T {
	tb.Helper()
	st, err := s.open(context.Background(), Pool(tb, url))
	if err != nil {
		tb.Fatalf("pgtest: open a store: %v", err)
	}
	s.mu.Lock()
	s.urls[st] = url
	s.mu.Unlock()
	return st
}

// Open opens a store on a fresh schema of tb's (URL).
func (s *Stores[T]) Open(tb *testing.T) T {
	tb.Helper()
	return s.On(tb, URL(tb))
}

// Reopen opens another store on the schema of old, which s opened.
func (s *Stores[T]) Reopen(tb *testing.T, old T) T {
	tb.Helper()
	s.mu.Lock()
	url, ok := s.urls[old]
	s.mu.Unlock()
	if !ok {
		tb.Fatal("pgtest: Reopen of a store these Stores did not open")
	}
	return s.On(tb, url)
}

// WithSchema returns base with its search_path set to schema.
func WithSchema(base, schema string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func (c *cluster) nextSchema() string {
	c.seqMu.Lock()
	defer c.seqMu.Unlock()
	c.seq++
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("t%d_%d_%s", os.Getpid(), c.seq, hex.EncodeToString(b[:]))
}

// binDir finds a folder holding initdb and pg_ctl: the newest
// /usr/lib/postgresql/<version>/bin, else the PATH's.
func binDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	initdb, err1 := exec.LookPath("initdb")
	pgctl, err2 := exec.LookPath("pg_ctl")
	if err1 == nil && err2 == nil && filepath.Dir(initdb) == filepath.Dir(pgctl) {
		return filepath.Dir(initdb)
	}
	return ""
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func (c *cluster) start() {
	if u := os.Getenv(EnvURL); u != "" {
		c.url = u
	} else {
		c.bin = binDir()
		if c.bin == "" {
			c.missing = "no initdb and pg_ctl under /usr/lib/postgresql/*/bin or on PATH (apt-get install postgresql, scripts/ci-deps.sh, or set " + EnvURL + ")"
			return
		}
		if c.err = c.startCluster(); c.err != nil {
			return
		}
	}
	c.admin, c.err = pgxpool.New(context.Background(), c.url) // it connects at its first use
}

// startCluster makes a cluster in a temporary folder and starts it on a
// free loopback port. initdb refuses to run as root: as root it runs the
// binaries as the postgres user, which owns the folder.
func (c *cluster) startCluster() error {
	dir, err := os.MkdirTemp("", "bots-pgtest-")
	if err != nil {
		return err
	}
	c.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root needs a postgres user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
		runuser, err := exec.LookPath("runuser")
		if err != nil {
			return fmt.Errorf("running as root needs runuser to run PostgreSQL as postgres: %w", err)
		}
		c.run = []string{runuser, "-u", "postgres", "--"}
	}
	data := filepath.Join(dir, "data")
	if out, err := c.command(context.Background(), "initdb", "-D", data, "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--no-locale", "--no-sync").CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, bytes.TrimSpace(out))
	}
	var last error
	for range 3 { // a free port can be taken before pg_ctl binds it
		port, err := freePort()
		if err != nil {
			return err
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=300 %s", port, dir, durability())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := c.command(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "100", "-o", opts, "start").CombinedOutput()
		cancel()
		if err == nil {
			c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
			return nil
		}
		logText, _ := os.ReadFile(filepath.Join(dir, "log"))
		last = fmt.Errorf("pg_ctl start: %w: %s %s", err, bytes.TrimSpace(out), lastLines(logText, 5))
	}
	return last
}

func (c *cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := append(slices.Clone(c.run), filepath.Join(c.bin, name))
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.dir // the postgres user may not read the test's working folder
	return cmd
}

func (c *cluster) stop() error {
	if c.admin != nil {
		c.admin.Close()
	}
	if c.dir == "" {
		return nil
	}
	var err error
	if c.url != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, e := c.command(ctx, "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop").CombinedOutput()
		cancel()
		if e != nil {
			err = fmt.Errorf("pg_ctl stop: %w: %s", e, bytes.TrimSpace(out))
		}
	}
	return errors.Join(err, os.RemoveAll(c.dir))
}

// durability is how the cluster writes to its disk. Benchmarks run on a
// database that keeps what it acknowledged through a power loss (fsync
// on), as docs/PERFORMANCE.md gives their figures. Tests check what the
// programs do with the database, and none crashes the machine under it:
// without fsync the cluster still keeps every commit through a crash of
// its own processes, at less of the CPU the whole suite shares.
func durability() string {
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return "-c fsync=on"
	}
	return "-c fsync=off -c full_page_writes=off"
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte(" | "))
}
