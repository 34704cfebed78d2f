package local

import (
	"context"
	"errors"

	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/wake"
)

// The channels a Host session serves: its session state and its chat.

// sessionChannel serves a session's state.
type sessionChannel struct{ s *localSession }

func (c sessionChannel) URI() string { return c.s.SessionURI }

func (c sessionChannel) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	return c.s.SessionSnapshot(), nil
}

func (c sessionChannel) Dispatch(ctx context.Context, d engine.Dispatch) error {
	a, err := d.Decode()
	if err != nil {
		return err
	}
	origin := d.Origin
	return wireError(c.s.dispatchSession(a, &origin))
}

// chatChannel serves a session's chat.
type chatChannel struct{ s *localSession }

func (c chatChannel) URI() string { return c.s.ChatURI }

func (c chatChannel) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	return c.s.ChatSnapshot(), nil
}

func (c chatChannel) Dispatch(ctx context.Context, d engine.Dispatch) error {
	a, err := d.Decode()
	if err != nil {
		return err
	}
	origin := d.Origin
	return wireError(c.s.dispatch(a, &origin))
}

// wireError gives a dispatch error the code transport answers it with.
func wireError(err error) error {
	var r *wake.RefusedError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, wake.ErrNoSession):
		return errcode.Wrap(errcode.NotFound, err, "no such session")
	case errors.As(err, &r):
		return errcode.Wrap(errcode.Invalid, err, "%s", r.Reason)
	case errors.Is(err, wake.ErrRefused):
		return errcode.Wrap(errcode.Invalid, err, "%s", err.Error())
	}
	return err
}
