package client

import "context"

// DialWS dials the WebSocket at url as Dial does, without the client, for
// the tests that break and redial connections themselves.
func DialWS(ctx context.Context, url, token string) (Conn, error) {
	return dialWS(ctx, wsURL(url), token)
}
