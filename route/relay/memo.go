package relay

import (
	"context"
	"encoding/json"
	"fmt"
)

// seenLimit is how many message ids a connection's memo keeps: enough to
// recognise what a network delivers again after a reconnect, a restart or
// a takeover by another instance.
const seenLimit = 1000

// memo is what a connection remembers: the chat each key talks in, and
// the ids of the messages it passed on, oldest first.
type memo struct {
	Chats map[string]string `json:"chats"`
	Seen  []string          `json:"seen"`
}

// decodeMemo reads a memo's value; an empty memo for none. A value that
// does not decode is an error naming the connection: it is replaced by
// the next write, losing nothing a person keeps (the chats themselves
// stay on the server).
func decodeMemo(conn string, data []byte) (memo, error) {
	m := memo{Chats: map[string]string{}}
	if data == nil {
		return m, nil
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return memo{Chats: map[string]string{}}, fmt.Errorf("the relay's memory of the connection %s does not decode: %w", conn, err)
	}
	if m.Chats == nil {
		m.Chats = map[string]string{}
	}
	return m, nil
}

// see records that the connection passed on the message id and reports
// whether it was the first time.
func see(ctx context.Context, mem Memory, conn, id string) (first bool, err error) {
	err = mem.Update(ctx, connKey(conn), func(old []byte) ([]byte, error) {
		m, _ := decodeMemo(conn, old)
		for _, s := range m.Seen {
			if s == id {
				first = false
				return old, nil
			}
		}
		first = true
		m.Seen = append(m.Seen, id)
		if len(m.Seen) > seenLimit {
			m.Seen = m.Seen[len(m.Seen)-seenLimit:]
		}
		return json.Marshal(m)
	})
	return first, err
}

// chatOf is the session the chat key of the connection talks in, "" for
// none yet.
func chatOf(ctx context.Context, mem Memory, conn, key string) (string, error) {
	data, err := mem.Get(ctx, connKey(conn))
	if err != nil {
		return "", err
	}
	m, err := decodeMemo(conn, data)
	return m.Chats[key], err
}

// rememberChat records that the chat key of the connection talks in
// session.
func rememberChat(ctx context.Context, mem Memory, conn, key, session string) error {
	return mem.Update(ctx, connKey(conn), func(old []byte) ([]byte, error) {
		m, _ := decodeMemo(conn, old)
		m.Chats[key] = session
		return json.Marshal(m)
	})
}
