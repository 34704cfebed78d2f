package bot

import (
	"context"

	"github.com/agenthost/bots/record"
)

// ApplyOpening is Apply, opening the store it opens with open.
func ApplyOpening(ctx context.Context, h Host, opts Options, open func(context.Context, Config) (record.Store, error)) (*Service, error) {
	return apply(ctx, h, opts, open)
}
