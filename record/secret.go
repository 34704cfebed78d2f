package record

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// secretShape is one kind of secret a record must not hold: a pattern and
// the words that name it in an error.
type secretShape struct {
	kind string
	re   *regexp.Regexp
	// digit asks that a match hold a digit, so that a long hyphenated word
	// after a prefix such as sk- is not taken for a key.
	digit bool
	// hints are literal strings of which every match holds one: a string
	// holding none of them is not searched with re, which is what keeps a
	// load of many bots from spending its time in regular expressions
	// (FuzzSecretHintsHideNoMatch holds each shape to its hints).
	hints []string
}

// secretShapes are the secret-looking values a record refuses, most
// specific first. It is a constant table: compiled once, never written.
var secretShapes = []secretShape{
	{kind: "a private key", re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----`), hints: []string{"-----BEGIN"}},
	{kind: "an Anthropic key", re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`), digit: true, hints: []string{"sk-ant-"}},
	{kind: "a Stripe key", re: regexp.MustCompile(`\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}`), digit: true, hints: []string{"k_live_", "k_test_"}},
	{kind: "an OpenAI-style key", re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`), digit: true, hints: []string{"sk-"}},
	{kind: "a GitHub token", re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}`), hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
	{kind: "a GitHub token", re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{22,}`), hints: []string{"github_pat_"}},
	{kind: "a GitLab token", re: regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`), hints: []string{"glpat-"}},
	{kind: "a Slack token", re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), digit: true, hints: []string{"xox"}},
	{kind: "a Slack webhook", re: regexp.MustCompile(`hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]{8,}`), hints: []string{"hooks.slack.com/services/T"}},
	{kind: "an AWS access key", re: regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`), hints: []string{"AKIA", "ASIA"}},
	{kind: "a Google API key", re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), hints: []string{"AIza"}},
	{kind: "an npm token", re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}`), hints: []string{"npm_"}},
	{kind: "a Hugging Face token", re: regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`), hints: []string{"hf_"}},
	{kind: "a SendGrid key", re: regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}`), hints: []string{"SG."}},
	{kind: "a Resend key", re: regexp.MustCompile(`\bre_[A-Za-z0-9_]{20,}`), digit: true, hints: []string{"re_"}},
	{kind: "a Telegram bot token", re: regexp.MustCompile(`\b[0-9]{8,10}:AA[A-Za-z0-9_-]{30,}`), hints: []string{":AA"}},
	{kind: "a JSON Web Token", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), hints: []string{"eyJ"}},
	{kind: "a URL with a password in it", re: regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:[^/\s@]+@`), hints: []string{"://"}},
}

// minSecret is the shortest string any shape can match; shorter strings are
// not searched.
const minSecret = 16

// LooksLikeSecret reports whether s holds a secret-looking value - a
// private-key block or a well-known token shape - and names the kind of
// secret it looks like ("an OpenAI-style key").
func LooksLikeSecret(s string) (kind string, ok bool) {
	kind, _, _, ok = findSecret(s)
	return kind, ok
}

// findSecret returns the kind and the span of the first secret-looking
// value in s.
func findSecret(s string) (kind string, start, end int, ok bool) {
	if len(s) < minSecret {
		return "", 0, 0, false
	}
	held := hintsHeld(s)
	if held == 0 {
		return "", 0, 0, false
	}
	for i, sh := range secretShapes {
		if held&(1<<i) == 0 {
			continue
		}
		for _, loc := range sh.re.FindAllStringIndex(s, -1) {
			if sh.digit && !strings.ContainsAny(s[loc[0]:loc[1]], "0123456789") {
				continue
			}
			return sh.kind, loc[0], loc[1], true
		}
	}
	return "", 0, 0, false
}

// hintsHeld returns the set of secretShapes (bit i for shape i) one of
// whose hints s holds, in one pass over s: at each byte it tries only the
// hints that start with that byte (hintsByFirst), where a search for
// each hint would pass over s some thirty times.
func hintsHeld(s string) uint32 {
	var held uint32
	for i := 0; i < len(s); i++ {
		for _, h := range hintsByFirst[s[i]] {
			if held&h.shapes != h.shapes && strings.HasPrefix(s[i:], h.hint) {
				held |= h.shapes
			}
		}
	}
	return held
}

// shapeHint is a hint and the shapes (a bit each) it is a hint of.
type shapeHint struct {
	hint   string
	shapes uint32
}

// hintsByFirst holds, for each byte, the hints that start with it. It is a
// constant table: made once from secretShapes, never written. (A shape
// beyond the 32nd would have no bit: TestHintsHeldHasABitForEverySecretShape.)
var hintsByFirst = func() (t [256][]shapeHint) {
	for i, sh := range secretShapes {
		for _, h := range sh.hints {
			t[h[0]] = append(t[h[0]], shapeHint{hint: h, shapes: 1 << i})
		}
	}
	return t
}()

// maxSecretDepth bounds how deep checkSecrets looks into nested values.
const maxSecretDepth = 8

// checkSecrets reports the first field of a decoded body, whose keys
// names holds in order (appendOrderedKeys), whose value - a string, a
// label or a connector - looks like a secret: one sentence naming the
// field and the kind of secret, never the value. Keys a bot does not have
// are searched too (a key is named only when it looks like no secret);
// _meta is the host's and is not. It runs before the fields' own checks
// (ParsePatch), whose errors may quote a value.
func checkSecrets(m map[string]any, names []string) error {
	for _, k := range names {
		if k == metaKey {
			continue
		}
		if kind, ok := LooksLikeSecret(k); ok {
			return secretError("a key of the body", kind)
		}
		if err := checkSecretValue(k, m[k], 0); err != nil {
			return err
		}
	}
	return nil
}

func checkSecretValue(field string, v any, depth int) error {
	if depth > maxSecretDepth {
		return nil
	}
	switch t := v.(type) {
	case string:
		if kind, ok := LooksLikeSecret(t); ok {
			return secretError(field, kind)
		}
	case []any:
		if depth >= maxSecretDepth {
			return nil // as deep as checkSecrets looks
		}
		for i, e := range t {
			if str, ok := e.(string); ok {
				// A string is checked here, so that its name is made
				// only for an error.
				if kind, ok := LooksLikeSecret(str); ok {
					return secretError(fmt.Sprintf("%s[%d]", field, i), kind)
				}
				continue
			}
			if err := checkSecretValue(fmt.Sprintf("%s[%d]", field, i), e, depth+1); err != nil {
				return err
			}
		}
	case []string:
		if depth >= maxSecretDepth {
			return nil
		}
		for i, e := range t {
			if kind, ok := LooksLikeSecret(e); ok {
				return secretError(fmt.Sprintf("%s[%d]", field, i), kind)
			}
		}
	case map[string]any:
		return checkSecretMap(field, t, depth)
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = e
		}
		return checkSecretMap(field, m, depth)
	}
	return nil
}

func checkSecretMap(field string, m map[string]any, depth int) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if kind, ok := LooksLikeSecret(k); ok {
			return secretError("a key of "+field, kind)
		}
		if str, ok := m[k].(string); ok {
			if kind, ok := LooksLikeSecret(str); ok && depth < maxSecretDepth {
				return secretError(fmt.Sprintf("%s %q", field, k), kind)
			}
			continue
		}
		if err := checkSecretValue(fmt.Sprintf("%s %q", field, k), m[k], depth+1); err != nil {
			return err
		}
	}
	return nil
}

func secretError(field, kind string) error {
	return fmt.Errorf("%s holds what looks like a secret (%s): keep credentials in the vault, not in a bot", field, kind)
}
