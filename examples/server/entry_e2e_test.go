package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upgrade sends the WebSocket upgrade of the curl to the server at
// addr, naming host as its Host, with origin as its Origin and token as
// ?tkn= when they are not empty, and returns the status and body of the
// answer.
func upgrade(t *testing.T, addr, host, origin, token string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	path := "/"
	if token != "" {
		path += "?tkn=" + token
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	if origin != "" {
		req += "Origin: " + origin + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, ""
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// getHost answers a GET of path on the server at addr naming host as its
// Host: the status and body.
func getHost(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestEndToEndAServerWithoutAUsersFilePrintsItsLocalTokenAndTakesNoConnectionWithoutIt(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	d.users = ""
	s := startServer(t, d.args())
	data, err := os.ReadFile(filepath.Join(d.config, "local-token"))
	if err != nil {
		t.Fatal(err)
	}
	if s.token == "" || strings.TrimSpace(string(data)) != s.token {
		t.Fatalf("the listening line's token %q is not the one of <config>/local-token, %q", s.token, data)
	}
	if info, err := os.Stat(filepath.Join(d.config, "local-token")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("<config>/local-token: %v, %v; want mode 0600", info, err)
	}
	// A process that has not the token: nothing, by ?tkn=, Bearer, or none.
	if code, body := upgrade(t, s.addr, s.addr, "", ""); code != http.StatusUnauthorized {
		t.Errorf("an upgrade without a token answered %d %q, want 401", code, body)
	}
	if code, _ := upgrade(t, s.addr, s.addr, "", strings.Repeat("f", 64)); code != http.StatusUnauthorized {
		t.Errorf("an upgrade with a wrong token answered %d, want 401", code)
	}
	if code, body := upgrade(t, s.addr, s.addr, "http://"+s.addr, s.token); code != http.StatusSwitchingProtocols {
		t.Errorf("the page's own upgrade with the token answered %d %q, want 101", code, body)
	}
	if code, body := getHost(t, s.addr, s.addr, "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz without a token answered %d %q, want 200", code, body)
	}
	// The restart keeps the token.
	s.stop(t)
	again := startServer(t, d.args())
	if again.token != s.token {
		t.Errorf("after a restart the server printed the token %q, before %q", again.token, s.token)
	}
}

func TestEndToEndAPageOfAnotherHostGetsNothingEvenWithTheToken(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	d.users = ""
	s := startServer(t, d.args("-public-host", "bots.example"))
	_, port, _ := net.SplitHostPort(s.addr)
	evil := "evil.example:" + port
	// The curl: a rebinding page's upgrade, its Origin matching
	// its Host. Refused whatever it presents.
	for _, token := range []string{"", s.token} {
		code, body := upgrade(t, s.addr, evil, "http://"+evil, token)
		if code != http.StatusMisdirectedRequest || !strings.Contains(body, `"`+evil+`"`) || !strings.Contains(body, "-public-host evil.example") {
			t.Errorf("token %q: the rebinding upgrade answered %d %q, want 421 naming the Host and -public-host", token, code, body)
		}
	}
	if code, body := getHost(t, s.addr, evil, "/"); code != http.StatusMisdirectedRequest || strings.Contains(body, "<html") {
		t.Errorf("the page under a foreign Host answered %d %q, want 421", code, body)
	}
	if code, _ := getHost(t, s.addr, evil, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz under a foreign Host answered %d, want 200 (it is open)", code)
	}
	// A page of another origin on an allowed Host: 403.
	if code, body := upgrade(t, s.addr, s.addr, "http://"+evil, s.token); code != http.StatusForbidden || !strings.Contains(body, evil) {
		t.Errorf("an upgrade from another origin answered %d %q, want 403 naming it", code, body)
	}
	// Loopback names, the listen address and the public host are answered.
	for _, host := range []string{s.addr, "localhost:" + port, "app.localhost:" + port, "[::1]:" + port, "bots.example:" + port, "BOTS.example"} {
		if code, body := upgrade(t, s.addr, host, "http://"+host, s.token); code != http.StatusSwitchingProtocols {
			t.Errorf("Host %s: the upgrade answered %d %q, want 101", host, code, body)
		}
		if code, body := getHost(t, s.addr, host, "/"); code != http.StatusOK || !strings.Contains(body, "<html") {
			t.Errorf("Host %s: the page answered %d", host, code)
		}
	}
}

func TestEndToEndAServerWithAUsersFileAnswersOnlyItsHostsAndPrintsNoToken(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	s := startServer(t, d.args())
	if s.token != "" {
		t.Errorf("with a users file the server printed the token %q", s.token)
	}
	if _, err := os.Stat(filepath.Join(d.config, "local-token")); !os.IsNotExist(err) {
		t.Errorf("with a users file <config>/local-token was made: %v", err)
	}
	_, port, _ := net.SplitHostPort(s.addr)
	evil := "evil.example:" + port
	if code, _ := upgrade(t, s.addr, evil, "http://"+evil, rootToken); code != http.StatusMisdirectedRequest {
		t.Errorf("the rebinding upgrade with root's token answered %d, want 421", code)
	}
	if code, _ := upgrade(t, s.addr, s.addr, "", rootToken); code != http.StatusSwitchingProtocols {
		t.Errorf("root's upgrade answered %d, want 101", code)
	}
}

func TestPublicHostFlagRefusesANameThatIsNotAHost(t *testing.T) {
	t.Parallel()
	d := newDirs(t)
	s, err := tryStart(d.args("-public-host", "http://bots.example/"))
	if err == nil {
		s.stop(t)
		t.Fatal("the server started with -public-host http://bots.example/")
	}
	if want := `"http://bots.example/" is not a host name or address`; !strings.Contains(err.Error(), want) {
		t.Errorf("the server stopped with %q, want it to say %s", err, want)
	}
}
