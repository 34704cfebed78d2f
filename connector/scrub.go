package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Scrubber replaces every secret value it knows with "[redacted]" in text
// bound for an agent, a file or a log. It learns values as they are
// resolved (Add). The zero value knows none; it is safe to use concurrently.
type Scrubber struct {
	mu       sync.RWMutex
	values   map[string]bool
	replacer *strings.Replacer
	longest  int
}

// Add teaches the scrubber secret values. For each value it also learns the
// forms the value takes when it is JSON- or URL-encoded, and, for a value
// such as "Bearer <token>", the token alone. Empty values are ignored.
func (s *Scrubber) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, v := range values {
		for _, form := range forms(v) {
			if form == "" || s.values[form] {
				continue
			}
			if s.values == nil {
				s.values = make(map[string]bool)
			}
			s.values[form] = true
			changed = true
		}
	}
	if !changed {
		return
	}
	all := make([]string, 0, len(s.values))
	for v := range s.values {
		all = append(all, v)
	}
	// Longest first, so that a value holding another is replaced whole.
	slices.SortFunc(all, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	s.longest = len(all[0])
	pairs := make([]string, 0, 2*len(all))
	for _, v := range all {
		pairs = append(pairs, v, Redacted)
	}
	s.replacer = strings.NewReplacer(pairs...)
}

// minToken is the shortest token taken out of a "<scheme> <token>" value.
const minToken = 8

func forms(v string) []string {
	if v == "" {
		return nil
	}
	out := []string{v}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	out = append(out, url.QueryEscape(v), url.PathEscape(v))
	if _, tok, ok := strings.Cut(v, " "); ok && len(strings.TrimSpace(tok)) >= minToken {
		out = append(out, forms(strings.TrimSpace(tok))...)
	}
	return out
}

// String returns in with every known value replaced by "[redacted]".
func (s *Scrubber) String(in string) string {
	if s == nil {
		return in
	}
	s.mu.RLock()
	r := s.replacer
	s.mu.RUnlock()
	if r == nil {
		return in
	}
	return r.Replace(in)
}

// Longest is the length in bytes of the longest text String replaces (a
// value or one of its forms); 0 when it knows none. A stream cut anywhere
// may split a value only within its last Longest()-1 bytes.
func (s *Scrubber) Longest() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.longest
}

// Bytes is String for a byte slice.
func (s *Scrubber) Bytes(in []byte) []byte { return []byte(s.String(string(in))) }

// Contains reports whether in holds a known value.
func (s *Scrubber) Contains(in string) bool { return s.String(in) != in }

// Error returns err with every known value taken out of its message. The
// result still matches the sentinels err matched (errors.Is), but does not
// unwrap to err, whose message may hold a value. A nil err stays nil.
func (s *Scrubber) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := s.String(msg)
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, orig: err}
}

type scrubbedError struct {
	msg  string
	orig error
}

func (e *scrubbedError) Error() string { return e.msg }

// Is matches what the original error matches, without handing it out.
func (e *scrubbedError) Is(target error) bool { return errors.Is(e.orig, target) }

// Handler wraps h so that every message and attribute it handles has the
// known values taken out. A nil h discards.
func (s *Scrubber) Handler(h slog.Handler) slog.Handler {
	if h == nil {
		h = slog.DiscardHandler
	}
	return &scrubHandler{s: s, h: h}
}

// Logger returns a logger writing through l's handler with values scrubbed.
// A nil l discards.
func (s *Scrubber) Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(s.Handler(l.Handler()))
}

type scrubHandler struct {
	s *Scrubber
	h slog.Handler
}

func (h *scrubHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a, 0))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a, 0)
	}
	return &scrubHandler{s: h.s, h: h.h.WithAttrs(clean)}
}

func (h *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{s: h.s, h: h.h.WithGroup(h.s.String(name))}
}

// maxLogDepth bounds how deep a scrub looks into nested groups.
const maxLogDepth = 16

func (h *scrubHandler) attr(a slog.Attr, depth int) slog.Attr {
	a.Key = h.s.String(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.s.String(v.String()))
	case slog.KindGroup:
		if depth >= maxLogDepth {
			return slog.String(a.Key, Redacted)
		}
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = h.attr(g, depth+1)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		var text string
		if err, ok := v.Any().(error); ok {
			text = err.Error()
		} else {
			text = fmt.Sprintf("%+v", v.Any())
		}
		if clean := h.s.String(text); clean != text {
			return slog.String(a.Key, clean)
		}
		if b, err := json.Marshal(v.Any()); err == nil && h.s.Contains(string(b)) {
			return slog.String(a.Key, h.s.String(text))
		}
		return slog.Attr{Key: a.Key, Value: v}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
