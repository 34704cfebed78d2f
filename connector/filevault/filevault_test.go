package filevault_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/connector/filevault"
)

const secret = "tok-8d2e4f6a0b1c3e5f7a9b"

var ref = connector.Ref{Adapter: "http", ID: "crm"}

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

const body = `{"connectors": {"http/crm": {"value": "` + secret + `", "header": "X-Api-Key", "url": "https://crm.example.com"}}}`

type dirs struct{ config, root, vault string }

func newDirs(t *testing.T) dirs {
	base := t.TempDir()
	return dirs{config: filepath.Join(base, "config"), root: filepath.Join(base, "root"), vault: filepath.Join(base, "secrets", "vault.json")}
}

func TestResolveReadsTheEntry(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	write(t, d.vault, body, 0o600)
	v, err := filevault.New(filevault.Config{Path: d.vault, ConfigDir: d.config, Root: d.root})
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Resolve(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if c.Value() != secret || c.Header != "X-Api-Key" || c.URL != "https://crm.example.com" {
		t.Errorf("Resolve = %v", c)
	}
	_, err = v.Resolve(context.Background(), connector.Ref{Adapter: "http", ID: "other"})
	if !errors.Is(err, connector.ErrNoCredential) {
		t.Errorf("a missing entry = %v, want ErrNoCredential", err)
	}
}

func TestRefusesAFileOthersCanRead(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	write(t, d.vault, body, 0o644)
	_, err := filevault.New(filevault.Config{Path: d.vault})
	if !errors.Is(err, connector.ErrVault) || !strings.Contains(err.Error(), d.vault) || !strings.Contains(err.Error(), "mode 0644") {
		t.Fatalf("New = %v, want a refusal naming the file and its mode", err)
	}
}

func TestRefusesAModeChangedAfterStart(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	write(t, d.vault, body, 0o600)
	v, err := filevault.New(filevault.Config{Path: d.vault})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d.vault, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Resolve(context.Background(), ref); !errors.Is(err, connector.ErrVault) || !strings.Contains(err.Error(), "mode 0640") {
		t.Fatalf("Resolve = %v, want the mode refused", err)
	}
}

func TestRefusesAFileInTheConfigFolder(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	path := filepath.Join(d.config, "vault.json")
	write(t, path, body, 0o600)
	_, err := filevault.New(filevault.Config{Path: path, ConfigDir: d.config, Root: d.root})
	if !errors.Is(err, connector.ErrVault) || !strings.Contains(err.Error(), "inside the config folder") || !strings.Contains(err.Error(), path) {
		t.Fatalf("New = %v, want the config folder refused", err)
	}
}

func TestRefusesAFileInTheRootFolder(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	path := filepath.Join(d.root, "motion", "vault.json")
	write(t, path, body, 0o600)
	_, err := filevault.New(filevault.Config{Path: path, ConfigDir: d.config, Root: d.root})
	if !errors.Is(err, connector.ErrVault) || !strings.Contains(err.Error(), "inside the root folder") {
		t.Fatalf("New = %v, want the root folder refused", err)
	}
}

func TestRefusesALinkIntoTheRootFolder(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	inside := filepath.Join(d.root, "vault.json")
	write(t, inside, body, 0o600)
	if err := os.MkdirAll(filepath.Dir(d.vault), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(inside, d.vault); err != nil {
		t.Fatal(err)
	}
	if _, err := filevault.New(filevault.Config{Path: d.vault, Root: d.root}); !errors.Is(err, connector.ErrVault) {
		t.Fatalf("New = %v, want a link into the root refused", err)
	}
}

func TestEditReachesTheNextResolve(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	write(t, d.vault, body, 0o600)
	v, err := filevault.New(filevault.Config{Path: d.vault})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := v.Resolve(context.Background(), ref); err != nil || c.Value() != secret {
		t.Fatalf("Resolve = %v, %v", c, err)
	}
	write(t, d.vault, `{"connectors": {"http/crm": {"value": "new-value"}}}`, 0o600)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(d.vault, later, later); err != nil {
		t.Fatal(err)
	}
	if c, err := v.Resolve(context.Background(), ref); err != nil || c.Value() != "new-value" {
		t.Fatalf("Resolve after the edit = %q, %v", c.Value(), err)
	}
}

func TestBrokenFileNeverQuotesAValue(t *testing.T) {
	t.Parallel()
	for _, data := range []string{
		`{"connectors": {"http/crm": {"value": "` + secret + `", "extra` + secret + `": 1}}}`,
		`{"connectors": {"http/crm": {"value": ` + secret + `}}}`,
		`{"connectors": {"` + secret + `": {"value": "x"}}}`,
		`{"connectors": {"http/crm": {"value": 12}}}`,
		`[`,
	} {
		d := newDirs(t)
		write(t, d.vault, data, 0o600)
		v, err := filevault.New(filevault.Config{Path: d.vault})
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Resolve(context.Background(), ref)
		if !errors.Is(err, connector.ErrVault) {
			t.Errorf("Resolve of %q = %v, want ErrVault", data, err)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "tok-") {
			t.Errorf("the error quotes the file: %v", err)
		}
	}
}

func TestBrokenFileSaysOnWhichLineAndColumn(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]string{
		"{\"connectors\": {\n  \"http/crm\": {\"value\": " + secret + "}}}": "is not valid JSON (at line 2, column 26)",
		"{\"connectors\": {\n  \"http/crm\": {\"value\": 12}}}":             "has a number where a string or an object belongs (at line 2, column 26)",
		"{\"connectors\": {": "is not valid JSON (at line 1, column 17)",
	} {
		d := newDirs(t)
		write(t, d.vault, data, 0o600)
		v, err := filevault.New(filevault.Config{Path: d.vault})
		if err != nil {
			t.Fatal(err)
		}
		if _, err = v.Resolve(context.Background(), ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve of %q = %v, want it to say %q", data, err, want)
		}
	}
}

func TestEntryOwnersReachTheCredential(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	write(t, d.vault, `{"connectors": {"http/crm": {"value": "`+secret+`", "owners": ["user:soft", "team:backend", "*"]}}}`, 0o600)
	v, err := filevault.New(filevault.Config{Path: d.vault})
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Resolve(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Owners, ",") != "user:soft,team:backend,*" {
		t.Errorf("owners = %q", c.Owners)
	}
}

func TestEntryWithNoOwnersIsSaidAtLoad(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	write(t, d.vault, body, 0o600)
	var log bytes.Buffer
	v, err := filevault.New(filevault.Config{Path: d.vault, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Resolve(context.Background(), ref)
	if err != nil || len(c.Owners) != 0 {
		t.Fatalf("Resolve = %v, %v", c, err)
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "vault entry http/crm names no owners, so only root and bots root owns may use it") {
		t.Errorf("the load does not say the entry is root's alone: %s", log.String())
	}
	if strings.Contains(log.String(), secret) {
		t.Errorf("the log holds the value: %s", log.String())
	}
}

func TestEntryWithABadOwnerIsRefused(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	write(t, d.vault, `{"connectors": {"http/crm": {"value": "`+secret+`", "owners": ["soft"]}}}`, 0o600)
	v, err := filevault.New(filevault.Config{Path: d.vault})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Resolve(context.Background(), ref)
	if !errors.Is(err, connector.ErrVault) || !strings.Contains(err.Error(), "entry http/crm: owner \"soft\"") || strings.Contains(err.Error(), secret) {
		t.Fatalf("Resolve = %v, want the owner refused, naming the entry", err)
	}
}

func TestScrubberLearnsEveryValueAtRead(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	write(t, d.vault, `{"connectors": {"http/crm": {"value": "`+secret+`"}, "http/mail": {"value": "mail-value-123456"}}}`, 0o600)
	scrub := &connector.Scrubber{}
	v, err := filevault.New(filevault.Config{Path: d.vault, Scrubber: scrub})
	if err != nil {
		t.Fatal(err)
	}
	if err := connector.Learn(context.Background(), v, &connector.Scrubber{}); err != nil {
		t.Fatal(err)
	}
	if !scrub.Contains(secret) || !scrub.Contains("mail-value-123456") {
		t.Error("the scrubber did not learn every value of the file")
	}
	values, err := v.Values(context.Background())
	if err != nil || len(values) != 2 {
		t.Errorf("Values = %d values, %v", len(values), err)
	}
}
