package bots_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/agenthost/bots"
)

// wsURL is the AHP WebSocket of an httptest server.
func wsURL(web *httptest.Server) string { return "ws" + strings.TrimPrefix(web.URL, "http") + "/" }

// refused reports whether an upgrade at url with header is refused with
// status, before any WebSocket.
func refused(t *testing.T, url string, header http.Header, status int) bool {
	t.Helper()
	ws, resp, err := websocket.Dial(t.Context(), url, &websocket.DialOptions{HTTPHeader: header})
	if err == nil {
		ws.CloseNow()
		return false
	}
	return resp != nil && resp.StatusCode == status
}

func TestServerWithoutAUsersDirectoryRequiresItsLocalTokenOnEveryConnection(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	defer srv.Close()
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	tok := srv.LocalToken()
	if len(tok) < 32 {
		t.Fatalf("LocalToken is %q, want a token of at least 32 characters", tok)
	}
	path := filepath.Join(srv.ConfigDir, bots.LocalTokenFile)
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the local token file: %v, %v; want mode 0600", info, err)
	}
	if data, _ := os.ReadFile(path); strings.TrimSpace(string(data)) != tok {
		t.Errorf("the file holds %q, LocalToken is %q", data, tok)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	url := wsURL(web)
	for name, c := range map[string]struct {
		url    string
		header http.Header
	}{
		"no token":            {url, nil},
		"a wrong token":       {url + "?tkn=" + strings.Repeat("0", 64), nil},
		"a wrong bearer":      {url, http.Header{"Authorization": {"Bearer nope"}}},
		"a prefix of the one": {url + "?tkn=" + tok[:len(tok)-1], nil},
	} {
		if !refused(t, c.url, c.header, http.StatusUnauthorized) {
			t.Errorf("%s: not refused with 401", name)
		}
	}
	if got := initialize(t, url+"?tkn="+tok)["ahpd.principal"]; got != "root:test" {
		t.Errorf("the local token as ?tkn= connects as %v, want root:test", got)
	}
	ws, _, err := websocket.Dial(t.Context(), url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatalf("the local token as a Bearer: %v", err)
	}
	ws.CloseNow()
	if code, _ := get(t, srv.Handler(), "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz without a token answered %d, want 200", code)
	}
}

func TestLocalTokenIsKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	first := newServer(t)
	if err := first.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	tok := first.LocalToken()
	first.Close()
	again := &bots.Server{ConfigDir: first.ConfigDir, HostName: first.HostName, Options: first.Options}
	defer again.Close()
	if err := again.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if again.LocalToken() != tok || tok == "" {
		t.Errorf("after a restart the local token is %q, was %q", again.LocalToken(), tok)
	}
}

func TestLocalTokenFileOfAWrongModeOrContentRefusesTheStartInOneSentence(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		data string
		mode os.FileMode
		want string
	}{
		"readable by others": {strings.Repeat("a", 64), 0o644, "is mode 0644: it must be 0600"},
		"too short":          {"short", 0o600, "does not hold a token"},
		"empty":              {"", 0o600, "does not hold a token"},
		"two lines":          {strings.Repeat("a", 40) + "\n" + strings.Repeat("b", 40), 0o600, "does not hold a token"},
		"spaces":             {strings.Repeat("a ", 20), 0o600, "does not hold a token"},
	} {
		srv := newServer(t)
		if err := os.MkdirAll(srv.ConfigDir, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(srv.ConfigDir, bots.LocalTokenFile)
		if err := os.WriteFile(path, []byte(c.data), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		err := srv.Start(t.Context())
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) || strings.Count(err.Error(), ". ") > 0 {
			t.Errorf("%s: start answered %v, want one sentence naming %s and saying %q", name, err, path, c.want)
		}
		if srv.LocalToken() != "" {
			t.Errorf("%s: a refused file's token is in use: %q", name, srv.LocalToken())
		}
	}
	// A token a person wrote is taken when it is one.
	srv := newServer(t)
	defer srv.Close()
	if err := os.MkdirAll(srv.ConfigDir, 0o700); err != nil {
		t.Fatal(err)
	}
	mine := "my-own-local-token-of-forty-characters.."
	if err := os.WriteFile(filepath.Join(srv.ConfigDir, bots.LocalTokenFile), []byte(mine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil || srv.LocalToken() != mine {
		t.Errorf("a token written by hand: start %v, LocalToken %q", err, srv.LocalToken())
	}
}

func TestServerWithAUsersDirectoryHasNoLocalToken(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	srv.UsersFile = filepath.Join(t.TempDir(), "users.json")
	writeFile(t, srv.UsersFile, `{"root": {"token": "root-token-of-some-length"}, "users": []}`)
	defer srv.Close()
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if srv.LocalToken() != "" {
		t.Errorf("with a users file LocalToken is %q", srv.LocalToken())
	}
	if _, err := os.Stat(filepath.Join(srv.ConfigDir, bots.LocalTokenFile)); !os.IsNotExist(err) {
		t.Errorf("with a users file a local token file was made: %v", err)
	}
}
