package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/connector"
)

func TestVaultFlagRefusesAFileNotMode0600OrInsideConfigOrRoot(t *testing.T) {
	base := t.TempDir()
	config, root, outside := filepath.Join(base, "config"), filepath.Join(base, "root"), filepath.Join(base, "secrets")
	for _, d := range []string{config, root, outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, mode os.FileMode) string {
		if err := os.WriteFile(path, []byte(`{"connectors": {"http/crm": {"value": "tok-123456"}}}`), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	log := slog.New(slog.DiscardHandler)
	for name, path := range map[string]string{
		"mode 0644": write(filepath.Join(outside, "open.json"), 0o644),
		"in config": write(filepath.Join(config, "vault.json"), 0o600),
		"in root":   write(filepath.Join(root, "vault.json"), 0o600),
		"no file":   filepath.Join(outside, "none.json"),
	} {
		_, err := openVault(context.Background(), path, config, root, nil, log)
		if !errors.Is(err, connector.ErrVault) {
			t.Errorf("%s: err = %v, want a refusal", name, err)
		} else if strings.Contains(err.Error(), "tok-123456") {
			t.Errorf("%s: the refusal holds the value: %v", name, err)
		}
	}
	v, err := openVault(context.Background(), write(filepath.Join(outside, "vault.json"), 0o600), config, root, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := v.Resolve(ctx, connector.Ref{Adapter: "http", ID: "crm"}); err != nil || c.Value() != "tok-123456" {
		t.Errorf("resolve from the file: %v, %v", c, err)
	}
}

func TestVaultFallsBackToEnvironmentVariables(t *testing.T) {
	t.Setenv("BOTS_CONNECTOR_HTTP_MAIL", "env-token-1")
	dir := t.TempDir()
	path := filepath.Join(dir, "vault.json")
	if err := os.WriteFile(path, []byte(`{"connectors": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range []string{path, ""} {
		v, err := openVault(context.Background(), p, filepath.Join(dir, "config"), filepath.Join(dir, "root"), nil, log)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := v.Resolve(ctx, connector.Ref{Adapter: "http", ID: "mail"}); err != nil || c.Value() != "env-token-1" {
			t.Errorf("vault %q: resolve = %v, %v", p, c, err)
		}
		if _, err := v.Resolve(ctx, connector.Ref{Adapter: "http", ID: "none"}); !errors.Is(err, connector.ErrNoCredential) {
			t.Errorf("vault %q: an unknown connector: %v", p, err)
		}
	}
}
