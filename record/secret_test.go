package record

import (
	"encoding/json"
	"strings"
	"testing"
)

// Fake secrets, built so that no scanner takes this file for a leak.
var (
	fakeOpenAI    = "sk-" + "proj-" + "Abc123def456GHI789jkl012MNO345"
	fakeAnthropic = "sk-ant-" + "api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0"
	fakeGitHub    = "gh" + "p_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
	fakeGitHubPAT = "github" + "_pat_" + "11ABCDEFG0123456789_abcdefghijklmnop"
	fakeSlack     = "xox" + "b-" + "123456789012-1234567890123-AbCdEfGhIjKl"
	fakeAWS       = "AKIA" + "IOSFODNN7EXAMPLE"
	fakeAWSTemp   = "ASIA" + "Y34FZKBOKMUTVV7A"
	fakeGoogle    = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
	fakeGitLab    = "glpat-" + "xY12zW34vU56tS78rQ90"
	fakeKey       = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----"
	fakeOpenSSH   = "-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3Blbn...\n"
	fakeStripe    = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	fakeJWT       = "eyJ" + "hbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N"
	fakeURL       = "https://" + "bob:hunter2hunter2@example.com/x"
)

func TestSecretLookingValuesAreFound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, kind string }{
		{fakeOpenAI, "an OpenAI-style key"},
		{"key is " + fakeOpenAI + " ok", "an OpenAI-style key"},
		{fakeAnthropic, "an Anthropic key"},
		{fakeGitHub, "a GitHub token"},
		{fakeGitHubPAT, "a GitHub token"},
		{fakeSlack, "a Slack token"},
		{fakeAWS, "an AWS access key"},
		{fakeAWSTemp, "an AWS access key"},
		{fakeGoogle, "a Google API key"},
		{fakeGitLab, "a GitLab token"},
		{fakeKey, "a private key"},
		{fakeOpenSSH, "a private key"},
		{fakeStripe, "a Stripe key"},
		{fakeJWT, "a JSON Web Token"},
		{fakeURL, "a URL with a password in it"},
	} {
		kind, ok := LooksLikeSecret(tc.in)
		if !ok || kind != tc.kind {
			t.Errorf("LooksLikeSecret(%.12q…) = %q, %v; want %q", tc.in, kind, ok, tc.kind)
		}
	}
}

func TestOrdinaryWordsAreNoSecrets(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"task-list",
		"Review every task-list-of-the-day-for-the-team before noon",
		"desk-organizer-for-the-home-office-and-more",
		"sk-learn-is-a-python-library-for-machine-learning",
		"sk-short1",
		"ghp_short",
		"AKIA is a prefix",
		"AKIAlowercase0123456",
		"connectors://ap-resend/account-123",
		"-----BEGIN PUBLIC KEY-----",
		"https://example.com/path?x=1",
		"ssh://git@github.com/agenthost/bots",
		"Use the xoxb- prefix for bot tokens",
		"claude-sonnet-5",
		"2026-10-11T09:00:00.000Z",
		"project:shop:website",
		"",
	} {
		if kind, ok := LooksLikeSecret(s); ok {
			t.Errorf("LooksLikeSecret(%q) = %q: an ordinary value taken for a secret", s, kind)
		}
	}
}

func TestPatchRefusesASecretNamingTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "M", "instructions": "Use " + fakeOpenAI + " to call"}, "instructions holds what looks like a secret (an OpenAI-style key)"},
		{map[string]any{"name": fakeGitHub}, "name holds"},
		{map[string]any{"name": "M", "description": fakeKey}, "description holds what looks like a secret (a private key)"},
		{map[string]any{"name": "M", "labels": []any{"ok", fakeAWS}}, "labels[1] holds"},
		{map[string]any{"name": "M", "connectors": map[string]any{"work": "connectors://http/" + fakeSlack}}, `connectors "work" holds`},
		{map[string]any{"name": "M", "connectors": map[string]any{fakeGitLab: "connectors://http/x"}}, "a key of connectors holds"},
		{map[string]any{"name": "M", "session": fakeOpenAI}, "session holds"},
		{map[string]any{"name": "M", "color": fakeGoogle}, "color holds"},
		{map[string]any{"name": "M", "model": fakeAnthropic}, "model holds what looks like a secret (an Anthropic key)"},
		{map[string]any{"name": "M", fakeStripe: "x"}, "a key of the body holds"},
	} {
		_, err := PatchFromMap(tc.body)
		if err == nil {
			t.Errorf("PatchFromMap(%v) accepted a secret", tc.body)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.field) || !strings.Contains(msg, "keep credentials in the vault, not in a bot") {
			t.Errorf("error %q does not name %q", msg, tc.field)
		}
		for _, s := range []string{fakeOpenAI, fakeGitHub, fakeKey, fakeAWS, fakeSlack, fakeGitLab, fakeGoogle, fakeAnthropic, fakeStripe} {
			if strings.Contains(msg, s) {
				t.Errorf("error %q echoes the secret", msg)
			}
		}
	}
}

func TestPatchAcceptsOrdinaryValues(t *testing.T) {
	t.Parallel()
	body := `{"name":"Motion","labels":["review","task-list"],"instructions":"Keep the task-list short; sk-learn is fine.",` +
		`"connectors":{"work":"connectors://ap-resend/account-123"},"model":"claude-sonnet-5","session":"work"}`
	if _, err := ParsePatch([]byte(body)); err != nil {
		t.Fatalf("ParsePatch refused an ordinary body: %v", err)
	}
}

func TestParsePatchRefusesASecretInJSON(t *testing.T) {
	t.Parallel()
	body, _ := json.Marshal(map[string]any{"name": "M", "instructions": "token: " + fakeGitHub})
	_, err := ParsePatch(body)
	if err == nil || !strings.HasPrefix(err.Error(), "instructions holds what looks like a secret (a GitHub token)") {
		t.Fatalf("ParsePatch = %v, want the instructions refused as holding a GitHub token", err)
	}
}

// FuzzSecretNeverEchoed checks that a refusal never quotes the
// secret-looking part of what it refuses, whichever field holds it.
func FuzzSecretNeverEchoed(f *testing.F) {
	for _, s := range []string{fakeOpenAI, fakeGitHub, fakeKey, fakeAWS, "x " + fakeSlack + " y", fakeURL, "task-list", fakeJWT} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		_, start, end, ok := findSecret(s)
		if !ok {
			return
		}
		secret := s[start:end]
		k := keys[int(which)%len(keys)]
		for _, body := range []map[string]any{
			{k: s},
			{"name": "M", "labels": []any{s}},
			{"name": "M", "connectors": map[string]any{"work": s}},
			{"name": "M", "connectors": map[string]any{s: "connectors://a/b"}},
			{s: "x"},
		} {
			_, err := PatchFromMap(body)
			if err == nil {
				t.Fatalf("PatchFromMap accepted a body holding %s", secret)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error %q echoes %q", err, secret)
			}
		}
	})
}

// FuzzSecretHintsHideNoMatch holds each secret shape to its hints: a
// string its pattern matches holds one of them, so that skipping the
// pattern for a string that holds none finds every secret it would.
func FuzzSecretHintsHideNoMatch(f *testing.F) {
	for _, s := range []string{fakeOpenAI, fakeAnthropic, fakeGitHub, fakeGitHubPAT, fakeSlack, fakeAWS, fakeAWSTemp,
		fakeGoogle, fakeGitLab, fakeKey, fakeOpenSSH, fakeStripe, fakeJWT, fakeURL, "rk_test_" + "4eC39HqLyjWDarjt",
		"hooks.slack.com/services/" + "T0000/B0000/abcdefgh", "123456789:AA" + strings.Repeat("x", 30),
		"npm_" + strings.Repeat("a1", 18), "hf_" + strings.Repeat("b", 30), "SG." + strings.Repeat("c", 16) + "." + strings.Repeat("d", 16),
		"re_" + strings.Repeat("e1", 10), "a plain description of a bot"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		held := hintsHeld(s)
		for i, sh := range secretShapes {
			if sh.re.MatchString(s) && held&(1<<i) == 0 {
				t.Errorf("%s matches %q but holds none of its hints %q", sh.re, s, sh.hints)
			}
			holds := false
			for _, h := range sh.hints {
				holds = holds || strings.Contains(s, h)
			}
			if holds != (held&(1<<i) != 0) {
				t.Errorf("hintsHeld(%q) says %v for the hints %q", s, !holds, sh.hints)
			}
		}
	})
}

func TestHintsHeldHasABitForEverySecretShape(t *testing.T) {
	t.Parallel()
	if len(secretShapes) > 32 {
		t.Fatalf("%d secret shapes, and hintsHeld has 32 bits", len(secretShapes))
	}
}
