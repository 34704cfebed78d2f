package route

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// This file holds what several adapters do alike.

// CheckServer checks an adapter's server setting: a host:port, and one on
// this machine when tls is false (plain text crosses no network). network
// names the adapter in the sentence ("IRC").
func CheckServer(network, server string, tls bool) error {
	host, _, err := net.SplitHostPort(server)
	switch {
	case err != nil:
		return fmt.Errorf("the %s server %q is no host:port", network, server)
	case !tls && !Loopback(host):
		return fmt.Errorf("the %s server %s is not on this machine: plain text (tls false) is only for a loopback address", network, server)
	}
	return nil
}

// Loopback reports whether host names this machine: localhost or a
// loopback address.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// List splits a comma-separated setting ("#a, #b"), leaving out empty
// items.
func List(setting string) []string {
	var out []string
	for _, s := range strings.Split(setting, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Numbered is a question as the text of a network without buttons: its
// markdown, its options numbered one a line, and how to answer.
func Numbered(q Question) string {
	text := q.Markdown
	for i, o := range q.Options {
		text += fmt.Sprintf("\n%d. %s", i+1, o.Label)
	}
	if len(q.Options) > 0 {
		text += "\nReply with a number."
	}
	return text
}

// Pacer spaces the messages sent to each scope by Every: a network's
// flood limit. The zero value does not pace. It is safe for concurrent
// use.
type Pacer struct {
	Every time.Duration

	mu   sync.Mutex
	next map[string]time.Time // scope → when its next message may go
}

// Wait returns once a message may go to the scope key, or with ctx's
// error.
func (p *Pacer) Wait(ctx context.Context, key string) error {
	if p.Every <= 0 {
		return ctx.Err()
	}
	p.mu.Lock()
	if p.next == nil {
		p.next = map[string]time.Time{}
	}
	at := p.next[key]
	if now := time.Now(); at.Before(now) {
		at = now
	}
	p.next[key] = at.Add(p.Every)
	p.mu.Unlock()
	if wait := time.Until(at); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
