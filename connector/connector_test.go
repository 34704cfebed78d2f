package connector_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/connector"
)

const secret = "tok-3f9a1c77e2b04d5aa8c1"

func TestCredentialNeverPrinted(t *testing.T) {
	t.Parallel()
	c := connector.NewCredential(secret, "X-Api-Key", "https://example.com")
	call := connector.Call{From: access.Principal{User: "ann"}, Credential: c}
	var out []string
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		out = append(out, fmt.Sprintf(f, c), fmt.Sprintf(f, call), fmt.Sprintf(f, &call))
	}
	out = append(out, c.String())
	b, err := json.Marshal(call)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, string(b))
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("x", "cred", c, "call", call)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "cred", c, "call", call)
	out = append(out, buf.String())
	for _, s := range out {
		if strings.Contains(s, secret) {
			t.Errorf("the value is printed: %s", s)
		}
	}
	if c.Value() != secret {
		t.Errorf("Value() = %q", c.Value())
	}
}

func TestParseRef(t *testing.T) {
	t.Parallel()
	r, err := connector.ParseRef("connectors://ap-resend/account-123")
	if err != nil || r != (connector.Ref{Adapter: "ap-resend", ID: "account-123"}) {
		t.Fatalf("ParseRef = %v, %v", r, err)
	}
	if r.String() != "connectors://ap-resend/account-123" {
		t.Errorf("String() = %q", r.String())
	}
	for _, bad := range []string{"", "http://a/b", "connectors://a", "connectors:///b", "connectors://a/b/c"} {
		if _, err := connector.ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) accepted", bad)
		}
	}
}

func TestRegistryRefusesDuplicateAndBadNames(t *testing.T) {
	t.Parallel()
	var r connector.Registry
	a := &echoAdapter{}
	if err := r.Register("http", a); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("http", a); err == nil {
		t.Error("a second adapter under the same name was accepted")
	}
	if err := r.Register("no/slash", a); err == nil {
		t.Error("a name with a slash was accepted")
	}
	if err := r.Register("nil", nil); err == nil {
		t.Error("a nil adapter was accepted")
	}
	if _, ok := r.Adapter("http"); !ok {
		t.Error("the registered adapter is not found")
	}
	if got := r.Names(); len(got) != 1 || got[0] != "http" {
		t.Errorf("Names() = %v", got)
	}
}

func TestScrubberReplacesEveryKnownValue(t *testing.T) {
	t.Parallel()
	var s connector.Scrubber
	if got := s.String("nothing " + secret); got != "nothing "+secret {
		t.Errorf("an empty scrubber changed the text: %q", got)
	}
	quoted := `se"cr\et-value-1234`
	s.Add(secret, "Bearer abcdefgh12345678", quoted, "")
	for in, want := range map[string]string{
		"a " + secret + " b " + secret:            "a [redacted] b [redacted]",
		"auth: Bearer abcdefgh12345678":           "auth: [redacted]",
		"token abcdefgh12345678 alone":            "token [redacted] alone",
		`{"v":"se\"cr\\et-value-1234"}`:           `{"v":"[redacted]"}`,
		"nothing to hide":                         "nothing to hide",
		"q=" + "se%22cr%5Cet-value-1234" + "&x=1": "q=[redacted]&x=1",
	} {
		if got := s.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScrubbedErrorKeepsItsSentinel(t *testing.T) {
	t.Parallel()
	var s connector.Scrubber
	s.Add(secret)
	err := s.Error(fmt.Errorf("far end said %s: %w", secret, connector.ErrDenied))
	if strings.Contains(err.Error(), secret) || !errors.Is(err, connector.ErrDenied) {
		t.Errorf("Error() = %v (is ErrDenied: %v)", err, errors.Is(err, connector.ErrDenied))
	}
	if errors.Unwrap(err) != nil {
		t.Error("a scrubbed error unwraps to the unscrubbed one")
	}
	if s.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}

func TestScrubHandlerScrubsLogs(t *testing.T) {
	t.Parallel()
	var s connector.Scrubber
	var buf bytes.Buffer
	log := s.Logger(slog.New(slog.NewJSONHandler(&buf, nil)))
	s.Add(secret) // learnt after the logger was made
	log.With("pre", "x"+secret).WithGroup("g").Info("saw "+secret,
		"s", secret, "err", errors.New("e "+secret), "any", map[string]string{"k": secret},
		slog.Group("inner", "v", secret))
	if strings.Contains(buf.String(), secret) {
		t.Errorf("the log holds the value: %s", buf.String())
	}
	if !strings.Contains(buf.String(), connector.Redacted) {
		t.Errorf("the log does not say what was taken out: %s", buf.String())
	}
}
