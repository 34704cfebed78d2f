package connector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/connector/filevault"
	"github.com/agenthost/bots/connector/httpadapter"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
)

// syncWriter serialises writes of several loggers to one file.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestNoCredentialValueLeftAnywhere makes connector calls the way a back
// session does - a bot record on files naming the connector, the vault file
// outside the config and root folders, the http adapter against an
// endpoint that echoes the credential back, the session writing what it got
// into its work folder and the host logging everything at Debug - and then
// greps every file under the config folder and the root, and the captured
// logs, for the credential's value.
func TestNoCredentialValueLeftAnywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := t.TempDir()
	configDir, root := filepath.Join(base, "config"), filepath.Join(base, "root")
	vaultPath := filepath.Join(base, "secrets", "vault.json")
	const value = "tok-c0ffee1234567890deadbeef"

	var seen sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store("key", r.Header.Get("Authorization"))
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(r.URL.Path, "fail") {
			w.WriteHeader(http.StatusForbidden)
		}
		fmt.Fprintf(w, `{"you sent":%s,"with":%q}`, body, r.Header.Get("Authorization"))
	}))
	defer srv.Close()

	for _, d := range []string{configDir, filepath.Join(root, "motion"), filepath.Dir(vaultPath)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	vaultJSON, _ := json.Marshal(map[string]any{"connectors": map[string]any{
		"http/crm":  map[string]any{"value": "Bearer " + value, "url": srv.URL + "/ok", "owners": []string{"user:ann"}},
		"http/fail": map[string]any{"value": "Bearer " + value, "url": srv.URL + "/fail", "owners": []string{"user:ann"}},
	}})
	if err := os.WriteFile(vaultPath, vaultJSON, 0o600); err != nil {
		t.Fatal(err)
	}

	logFile, err := os.OpenFile(filepath.Join(configDir, "host.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	var captured strings.Builder
	out := &syncWriter{w: io.MultiWriter(logFile, &captured)}
	hostLog := slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))

	store, err := filerecord.Open(ctx, filerecord.Config{ConfigDir: configDir, Logger: hostLog})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Create(ctx, record.Record{
		ID: "motion", Name: "Motion", Session: record.DefaultSession, Owner: "user:ann",
		Workspace: filepath.Join(root, "motion"), Body: "robot", Color: "teal",
		Connectors: map[string]string{"crm": "connectors://http/crm", "broken": "connectors://http/fail"},
		CreatedAt:  time.Now(), UpdatedAt: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}

	vault, err := filevault.New(filevault.Config{Path: vaultPath, ConfigDir: configDir, Root: root, Logger: hostLog})
	if err != nil {
		t.Fatal(err)
	}
	scrub := &connector.Scrubber{}
	adapter, err := httpadapter.New(httpadapter.Config{Logger: scrub.Logger(hostLog)})
	if err != nil {
		t.Fatal(err)
	}
	var reg connector.Registry
	if err := reg.Register(httpadapter.Name, adapter); err != nil {
		t.Fatal(err)
	}
	tools, err := connector.NewTools(connector.ToolsConfig{
		Bot: "motion",
		Connectors: func() map[string]string {
			e, err := store.Get(ctx, "motion")
			if err != nil {
				return nil
			}
			return e.Record.Connectors
		},
		Registry: &reg, Vault: vault, Scrubber: scrub, Logger: hostLog,
	})
	if err != nil {
		t.Fatal(err)
	}

	// The session writes whatever the calls answered into its work folder,
	// and the host logs it at Debug.
	transcript, err := os.Create(filepath.Join(root, "motion", "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sessionLog := scrub.Logger(hostLog)
	for _, alias := range []string{"crm", "broken", "crm"} {
		res, err := tools.Call(ctx, ann, ann, alias, json.RawMessage(`{"q":"orders"}`))
		line, _ := json.Marshal(map[string]any{"alias": alias, "result": res, "err": fmt.Sprint(err)})
		if _, werr := fmt.Fprintf(transcript, "%s\n", line); werr != nil {
			t.Fatal(werr)
		}
		sessionLog.Debug("tool answered", "alias", alias, "result", res, "err", err)
	}
	if err := transcript.Close(); err != nil {
		t.Fatal(err)
	}

	if data, _ := os.ReadFile(filepath.Join(root, "motion", "transcript.jsonl")); !strings.Contains(string(data), connector.Redacted) {
		t.Fatalf("the endpoint's echo of the credential did not reach the transcript scrubbed: %s", data)
	}
	if k, _ := seen.Load("key"); k != "Bearer "+value {
		t.Fatalf("the endpoint got Authorization %q, want the credential", k)
	}
	if !strings.Contains(captured.String(), "connector call") {
		t.Fatalf("nothing was logged: %s", captured.String())
	}
	grep := func(name, s string) {
		if strings.Contains(s, value) {
			t.Errorf("%s holds the credential value", name)
		}
	}
	grep("the captured log", captured.String())
	files := 0
	for _, dir := range []string{configDir, root} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			grep(path, string(data))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 3 {
		t.Errorf("only %d files were searched: the record, the log and the transcript should be there", files)
	}
}
