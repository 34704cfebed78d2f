package acp

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// The causes a failure sentence recognises in what an agent said (its
// error's words, then its last lines on stderr, newest first), each with
// what to do about it.
type causeKind int

const (
	causeNone causeKind = iota
	// causeUnreachable: the model's API cannot be reached.
	causeUnreachable
	// causeKeyRefused: the model's API refused the key.
	causeKeyRefused
	// causeQuota: the plan's quota or rate limit is used up.
	causeQuota
	// causeSignedOut: the agent is not signed in.
	causeSignedOut
)

// causePatterns are what each cause looks like in an agent's words, in
// the order a line is tried: a refused key also says "authentication",
// and a quota error may say "request failed".
var causePatterns = []struct {
	kind causeKind
	re   *regexp.Regexp
}{
	{causeKeyRefused, regexp.MustCompile(`(?i)invalid[ _-]?(x-)?api[ _-]?key|incorrect api key|api[ _]key[ _]not[ _]valid|api_key_invalid|authentication_error|invalid authentication|\b401\b|unauthorized`)},
	{causeQuota, regexp.MustCompile(`(?i)quota|rate[ _-]?limit|resource_exhausted|\b429\b|usage limit|credit balance is too low|too many requests`)},
	{causeSignedOut, regexp.MustCompile(`(?i)authentication required|not (logged|signed) in|please (run /login|log ?in|sign ?in)|login required|no credentials`)},
	{causeUnreachable, regexp.MustCompile(`(?i)ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|fetch failed|getaddrinfo|unable to connect|error sending request|stream disconnected|dns error|failed to lookup address|could not resolve host|connection refused|network is unreachable|connection error`)},
}

// hostPatterns find the host an unreachable API has: after a resolver's
// error code, or in a URL.
var hostPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(?:ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|getaddrinfo|resolve host:?|lookup)\s+([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{2,})\b`),
	regexp.MustCompile(`(?i)(?:https?|wss?)://([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{2,})\b`),
}

// diagnosis is what a failure's words and an agent's last lines say.
type diagnosis struct {
	kind causeKind
	// host is the host that could not be reached, when a line names it.
	host string
	// line is the agent's line on stderr the sentence quotes: the one
	// that told the cause, else its last meaningful line; "" when stderr
	// said nothing more than the failure's own words.
	line string
	// inWords is true when the failure's own words told the cause.
	inWords bool
}

// diagnose reads the failure's words, then the agent's lines on stderr
// (oldest first, as kept), for a known cause.
func diagnose(words string, lines []string) diagnosis {
	var d diagnosis
	if k := kindOf(words); k != causeNone {
		d.kind, d.inWords = k, true
	} else {
		for _, l := range slices.Backward(lines) {
			if k := kindOf(l); k != causeNone && meaningful(l) {
				d.kind, d.line = k, l
				break
			}
		}
	}
	if d.kind == causeUnreachable {
		for _, l := range append([]string{words}, reversed(lines)...) {
			if kindOf(l) != causeUnreachable {
				continue
			}
			if h := hostIn(l); h != "" {
				d.host = h
				break
			}
		}
	}
	if d.line == "" {
		d.line = lastMeaningful(lines)
	}
	if d.line != "" && strings.Contains(words, d.line) {
		d.line = ""
	}
	return d
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// kindOf is the cause a line says, if any.
func kindOf(line string) causeKind {
	for _, p := range causePatterns {
		if p.re.MatchString(line) {
			return p.kind
		}
	}
	return causeNone
}

// hostIn returns the host a line says could not be reached, or "".
func hostIn(line string) string {
	for _, re := range hostPatterns {
		if m := re.FindStringSubmatch(line); m != nil {
			return strings.ToLower(m[1])
		}
	}
	return ""
}

// lastMeaningful is the last meaningful line of lines, or "".
func lastMeaningful(lines []string) string {
	for _, l := range slices.Backward(lines) {
		if meaningful(l) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// meaningful reports whether a line says something in words: it is not a
// stack frame, nor the end of a dumped object, nor without letters.
func meaningful(l string) bool {
	t := strings.TrimSpace(l)
	switch {
	case strings.HasPrefix(t, "at "), strings.HasPrefix(t, "node:"), strings.HasPrefix(t, "^"),
		!strings.ContainsFunc(t, unicode.IsLetter):
		return false
	case strings.IndexFunc(t, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) > 2:
		return false // "}, {" or "...": the end of a dumped object
	}
	return true
}

// explain completes e, a failure of the agent, from what it said: a known
// cause leads the sentence and says what to do, the agent's line on
// stderr that told it (or its last meaningful one) is quoted, and a
// failure that still has no next step gets its step's. A sentence saying
// what signs the agent in (see auth.go) ends with its own next step.
func (h *Harness) explain(e *StepError, lines []string) {
	cfg := h.cfg
	// The agent's words may hold the key it was given ("Incorrect API
	// key provided: sk-…"); its lines on stderr are scrubbed already.
	e.Cause = childScrubbers(cfg, childEnv(environ(cfg.Environ), cfg.Agent.Env, "")).text(e.Cause)
	d := diagnose(e.Cause, lines)
	e.Said = d.line
	var se *signInError
	signIn := errors.As(e.Err, &se)
	if d.kind != causeNone && !signIn {
		what, hint := causeWords(cfg, d)
		switch {
		case strings.Contains(e.Cause, what):
		case d.inWords:
			e.Cause = what + " (it said: " + e.Cause + ")"
		default:
			e.Cause = what + "; " + e.Cause
		}
		e.Hint = hint
	}
	switch {
	case e.Hint != "":
	case !signIn:
		e.Hint = nextStep(cfg, e)
	case strings.Contains(e.Cause, "auth names"):
		e.Hint = fmt.Sprintf("Name a method it offers in %s's auth in the agents file, or leave auth out.", cfg.Provider)
	case !saysWhatToDo(e.Cause):
		_, e.Hint = causeWords(cfg, diagnosis{kind: causeSignedOut})
	}
}

// saysWhatToDo reports whether a sentence of auth.go about signing in
// ends with what to do (set a variable, log the agent in, name a method).
func saysWhatToDo(s string) bool {
	for _, w := range []string{"; set ", "set it", "set them", "log it in", "; add ", "; name the"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// causeWords says a known cause and what to do about it.
func causeWords(cfg Config, d diagnosis) (what, hint string) {
	agent := cfg.Provider
	switch d.kind {
	case causeUnreachable:
		if d.host == "" {
			return "it could not reach its model's API",
				fmt.Sprintf("Check that this machine can reach %s's model API: its network, or a proxy (pass HTTPS_PROXY in %[1]s's env in the agents file); then send the message again.", agent)
		}
		return "it could not reach " + d.host,
			fmt.Sprintf("Check that this machine can reach %s: its network, or a proxy (pass HTTPS_PROXY in %s's env in the agents file); then send the message again.", d.host, agent)
	case causeKeyRefused:
		return "its model's API refused its key",
			fmt.Sprintf("Check the key in %s (the server's environment gives it to %s), or log it in%s; then send the message again.", keyVars(cfg), agent, loginWith(cfg))
	case causeQuota:
		return "its plan's quota is used up",
			fmt.Sprintf("Wait until the plan's quota renews, or raise it with the model's vendor (or give %s another key in %s); then send the message again.", agent, keyVars(cfg))
	case causeSignedOut:
		return "it is not signed in",
			fmt.Sprintf("Log it in%s, or set its key in %s; then send the message again.", loginWith(cfg), keyVars(cfg))
	}
	return "", ""
}

// keyVars names the variables that hold the agent's key: those the agents
// file's env passes whose names say they are secret.
func keyVars(cfg Config) string {
	var vars []string
	for _, n := range cfg.Agent.Env {
		if secretName(n) && !slices.Contains(vars, n) {
			vars = append(vars, n)
		}
	}
	if len(vars) == 0 {
		return "a variable the agents file's env passes"
	}
	return or(vars)
}

// loginWith is " with <the login command>" when the harness knows one.
func loginWith(cfg Config) string {
	if cfg.LoginHint != "" {
		return " with " + cfg.LoginHint
	}
	return ""
}

// nextStep is what to do after a failure of e's step whose cause is not
// known: send the message again, and where to look if it fails again.
func nextStep(cfg Config, e *StepError) string {
	look := fmt.Sprintf("run the command of %s by hand, or read its stderr in the server's log at -log-level debug", cfg.Provider)
	if e.Step == StepTurn {
		return "Send the message again; if it fails again, " + look + "."
	}
	return "Send the message again to start it again; if it fails again, " + look + "."
}
