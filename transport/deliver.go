package transport

import (
	"encoding/json"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/engine"
)

// A conn is the engine's Peer: what the engine delivers is queued as it
// is, under the engine's lock, and encoded by the writer.

// writeItem writes a queued message, encoding it first when the engine
// delivered it. One that does not encode is logged and skipped.
func (c *conn) writeItem(it outItem) error {
	if it.data != nil {
		return c.w.write(c.ctx, it.data)
	}
	e := getEncoder()
	defer e.free()
	if err := e.message(it.msg); err != nil {
		c.log.Error("message did not marshal", "method", it.msg.Method, "channel", it.msg.Channel, "err", err)
		return nil
	}
	if _, socket := c.w.(*wsWire); socket {
		return c.w.write(c.ctx, e.buf.Bytes()) // the socket copies it
	}
	return c.w.write(c.ctx, e.bytes()) // a pipe hands it over
}

// Deliver queues what the engine delivers, to be encoded by the writer.
// It is called with the Bus locked: it never blocks nor encodes.
func (c *conn) Deliver(m engine.Message) {
	if data, ok := m.Answer.([]byte); ok {
		c.enqueue(outItem{data: data})
		return
	}
	c.enqueue(outItem{msg: m})
}

// Overflow closes a connection whose client fell too far behind while it
// took snapshots.
func (c *conn) Overflow() { c.tooSlow() }

// Replaced closes a connection whose client reconnected on another.
func (c *conn) Replaced() {
	c.fail(websocket.StatusPolicyViolation, "the client reconnected on another connection", false)
}

// message appends m as the notification it is: an action envelope, or a
// notification with its params.channel set to the subscriber's spelling.
func (e *encoder) message(m engine.Message) error {
	if m.Answer != nil { // an answer made elsewhere than Deliver expects
		return e.value(m.Answer)
	}
	if m.Action != nil {
		return e.value(notification{JSONRPC: jsonrpcVersion, Method: "action", Params: m.Action})
	}
	params := make(map[string]json.RawMessage, len(m.Params)+1)
	for k, v := range m.Params {
		params[k] = v
	}
	ch, err := json.Marshal(m.Channel)
	if err != nil {
		return err
	}
	params["channel"] = ch
	return e.value(notification{JSONRPC: jsonrpcVersion, Method: m.Method, Params: params})
}
