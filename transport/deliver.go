package transport

import (
	"encoding/json"
	"strconv"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/internal/jsonx"
)

// A conn is the engine's Peer: what the engine delivers is queued as it
// is, under the engine's lock, and encoded by the writer.

// writeItem writes a queued message, encoding it first when the engine
// delivered it. One that does not encode is logged and skipped.
func (c *conn) writeItem(it outItem) error {
	if it.data != nil {
		return c.w.write(c.ctx, it.data)
	}
	m := it.msg
	if c.dialect != current {
		var send bool
		if m, send = c.translate(m); !send {
			return nil
		}
	}
	e := getEncoder()
	defer e.free()
	if err := e.message(m); err != nil {
		c.log.Error("message did not marshal", "method", it.msg.Method, "channel", it.msg.Channel, "err", err)
		return nil
	}
	if _, socket := c.w.(*wsWire); socket {
		return c.w.write(c.ctx, e.buf.Bytes()) // the socket copies it
	}
	return c.w.write(c.ctx, e.bytes()) // a pipe hands it over
}

// translate gives a message the shapes of the connection's dialect; false
// when its version has no such action and nothing is sent.
func (c *conn) translate(m engine.Message) (engine.Message, bool) {
	switch {
	case m.Answer != nil:
		return m, true // translated when it was made
	case m.Action != nil:
		env, ok := c.dialect.envelope(m.Action)
		m.Action = env
		return m, ok
	}
	return c.dialect.notification(m), true
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
		return e.action(m.Action)
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

// action appends the action notification of env exactly as value would
// write notification{"2.0", "action", env}, without reflection: every
// subscriber of a channel gets one, so a catalogue edit writes it once per
// connection. The action is checked and compacted (a rejected dispatch
// carries the client's own JSON); on invalid JSON nothing is written.
func (e *encoder) action(env *engine.Envelope) error {
	start := e.buf.Len()
	e.buf.Grow(len(env.Action) + len(env.Channel) + len(env.RejectionReason) + 160)
	b := e.buf.AvailableBuffer()
	b = append(b, `{"jsonrpc":"2.0","method":"action","params":{"channel":`...)
	b = jsonx.AppendStringNoHTML(b, env.Channel)
	b = append(b, `,"action":`...)
	e.buf.Write(b)
	if env.Action == nil {
		e.buf.WriteString("null") // as json.RawMessage marshals nil
	} else if err := json.Compact(&e.buf, env.Action); err != nil {
		e.buf.Truncate(start)
		return err
	}
	b = e.buf.AvailableBuffer()
	b = append(b, `,"serverSeq":`...)
	b = strconv.AppendInt(b, env.ServerSeq, 10)
	if o := env.Origin; o != nil {
		b = append(b, `,"origin":{"clientId":`...)
		b = jsonx.AppendStringNoHTML(b, o.ClientID)
		b = append(b, `,"clientSeq":`...)
		b = strconv.AppendInt(b, o.ClientSeq, 10)
		b = append(b, '}')
	}
	if env.RejectionReason != "" {
		b = append(b, `,"rejectionReason":`...)
		b = jsonx.AppendStringNoHTML(b, env.RejectionReason)
	}
	b = append(b, "}}"...)
	e.buf.Write(b)
	return nil
}
