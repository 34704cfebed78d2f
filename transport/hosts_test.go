package transport_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenthost/bots/transport"
)

func TestHostsAnswerLoopbackTheirOwnAddressAndThePublicNamesOnly(t *testing.T) {
	t.Parallel()
	h := transport.Hosts{Public: []string{"Bots.Example.com", "team.example:8443", "10.1.2.3"}}
	local := &net.TCPAddr{IP: net.ParseIP("192.168.1.5"), Port: 9187}
	for host, want := range map[string]bool{
		"localhost":                  true,
		"localhost:9187":             true,
		"LOCALHOST.:9187":            true,
		"app.localhost:9187":         true,
		"127.0.0.1:9187":             true,
		"127.8.9.10":                 true,
		"[::1]:9187":                 true,
		"[::1]":                      true,
		"192.168.1.5:9187":           true, // the address the request came in on
		"bots.example.com":           true,
		"bots.example.com:9187":      true,
		"BOTS.EXAMPLE.COM.:1":        true,
		"team.example:8443":          true,
		"10.1.2.3:9187":              true,
		"evil.example:9187":          false,
		"evil.example":               false,
		"localhost.evil.example":     false,
		"127.0.0.1.evil.example":     false,
		"team.example:9187":          false, // listed with another port
		"team.example":               false,
		"192.168.1.6:9187":           false,
		"example.com":                false,
		"bots.example.com.evil.test": false,
		"":                           false,
		"[::2]:9187":                 false,
		"localhost:99999":            false,
		"a b":                        false,
	} {
		if got := h.Allows(host, local); got != want {
			t.Errorf("Allows(%q) = %v, want %v", host, got, want)
		}
	}
	if (transport.Hosts{}).Allows("192.168.1.5", nil) {
		t.Error("an address is allowed with no local address to match")
	}
}

func TestHostsRefuseAPublicNameThatIsNotAHostInOneSentence(t *testing.T) {
	t.Parallel()
	if err := (transport.Hosts{Public: []string{"bots.example.com", "bots.example.com:443", "[2001:db8::1]:9187", "10.0.0.1"}}).Check(); err != nil {
		t.Errorf("good names refused: %v", err)
	}
	for _, bad := range []string{"", "http://bots.example.com", "bots.example.com/x", "a b", "bots..example", "host:port"} {
		err := (transport.Hosts{Public: []string{bad}}).Check()
		if err == nil || !strings.Contains(err.Error(), `"`+bad+`" is not a host name`) {
			t.Errorf("Check of %q: %v", bad, err)
		}
	}
}

func TestHostsGuardAnswers421NamingTheHostAndTheFlag(t *testing.T) {
	t.Parallel()
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("served")) })
	g := transport.Hosts{}.Guard(next)
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Host = "evil.example:9187"
	g.ServeHTTP(rec, r)
	body := rec.Body.String()
	if rec.Code != http.StatusMisdirectedRequest || !strings.Contains(body, `"evil.example:9187"`) || !strings.Contains(body, "-public-host evil.example") || strings.Contains(body, "served") {
		t.Errorf("a foreign Host answered %d %q", rec.Code, body)
	}
	rec = httptest.NewRecorder()
	r.Host = "localhost:9187"
	g.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK || rec.Body.String() != "served" {
		t.Errorf("localhost answered %d %q", rec.Code, rec.Body.String())
	}
}

func FuzzHostsAllows(f *testing.F) {
	for _, s := range []string{"localhost:9187", "[::1]:1", "evil.example", "127.0.0.1", "[", "a.localhost.", ":80"} {
		f.Add(s)
	}
	h := transport.Hosts{Public: []string{"bots.example.com"}}
	f.Fuzz(func(t *testing.T, host string) {
		if h.Allows(host, nil) {
			lower := strings.ToLower(host)
			if !strings.Contains(lower, "localhost") && !strings.Contains(lower, "bots.example.com") && !strings.Contains(host, "127.") && !strings.Contains(host, ":") {
				t.Errorf("Allows(%q) with nothing loopback or public in it", host)
			}
		}
	})
}
