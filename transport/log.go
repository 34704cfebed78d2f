package transport

import (
	"context"
	"log/slog"

	"github.com/agenthost/bots/access"
)

// connHandler is a connection's log handler: it adds the connection's id,
// principal and remote address to each record as With would, but builds
// them only when a record is handled. With copies the handler at once,
// which every idle connection would pay for.
type connHandler struct {
	h         slog.Handler
	id        uint64
	principal access.Principal
	remote    string
}

func (c *connHandler) full() slog.Handler {
	return c.h.WithAttrs([]slog.Attr{
		slog.Uint64("conn", c.id),
		slog.String("principal", c.principal.String()),
		slog.String("remote", c.remote),
	})
}

func (c *connHandler) Enabled(ctx context.Context, l slog.Level) bool { return c.h.Enabled(ctx, l) }

func (c *connHandler) Handle(ctx context.Context, r slog.Record) error {
	return c.full().Handle(ctx, r)
}

func (c *connHandler) WithAttrs(as []slog.Attr) slog.Handler { return c.full().WithAttrs(as) }

func (c *connHandler) WithGroup(name string) slog.Handler { return c.full().WithGroup(name) }
