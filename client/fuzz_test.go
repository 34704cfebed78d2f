package client

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agenthost/bots/record"
)

// scriptConn is a Conn that hands the reader its frames, then ends.
type scriptConn struct {
	start  chan struct{} // closed when the reader may begin
	mu     sync.Mutex
	frames [][]byte
}

func (s *scriptConn) Send(ctx context.Context, msg []byte) error { return nil }

func (s *scriptConn) Recv(ctx context.Context) ([]byte, error) {
	<-s.start
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.frames) == 0 {
		return nil, errors.New("the script ended")
	}
	f := s.frames[0]
	s.frames = s.frames[1:]
	return f, nil
}

func (s *scriptConn) Close() error { return nil }

// FuzzTheReaderTakesAnyFrame hands the reader any frame, on a client
// subscribed to the catalogue and to a chat with a turn running: it
// neither panics nor blocks, whatever the server sends.
func FuzzTheReaderTakesAnyFrame(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"x-ahpd-bots://","action":{"type":"x-ahpd-bots/added","bot":{"id":"a","name":"A"}},"serverSeq":3}}`,
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"x-ahpd-bots://","action":{"type":"x-ahpd-bots/removed","id":"a"},"serverSeq":4}}`,
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"x-ahpd-bots://","action":{"type":"x-ahpd-bots/changed","bot":{"id":3}},"serverSeq":5}}`,
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-chat://t","action":{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-01-01T00:00:00.000Z","message":{"text":"hi","origin":{"kind":"user"}}},"serverSeq":6,"origin":{"clientId":"fuzz","clientSeq":1}}}`,
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-chat://t","action":{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"c","invocationMessage":"x"},"serverSeq":7}}`,
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-chat://t","action":{"type":"chat/inputRequested","request":{"id":"q"}},"serverSeq":8}}`,
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-chat://t","action":{"type":"chat/turnComplete","turnId":"t1","duration":1},"serverSeq":9}}`,
		`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-chat://t","action":{"type":"chat/turnCancelled","turnId":"t1"},"rejectionReason":"no","origin":{"clientId":"fuzz","clientSeq":2}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1.1.0"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32009,"message":"Permission denied"}}`,
		`[]`, `null`, `{"id":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		conn := &scriptConn{start: make(chan struct{}), frames: [][]byte{frame, frame}}
		c := New(conn, Options{ClientID: "fuzz"})
		w := &Watch{c: c, events: newQueue[BotEvent](), bots: map[string]record.Record{}}
		ch := &Chat{c: c, uri: "ahp-chat://t", turns: map[string]*Turn{}, queued: map[string]*Turn{}, acks: map[int64]chan string{}, changed: make(chan struct{})}
		t1 := newTurn(ch)
		t1.id = "t1"
		ch.turns["t1"] = t1
		ch.acks[1] = make(chan string, 1)
		c.mu.Lock()
		c.subs[CatalogueURI] = w
		c.subs[ch.uri] = ch
		c.pending[1] = &call{done: make(chan struct{})}
		c.mu.Unlock()
		close(conn.start)
		<-c.done // the reader took both frames, then the script ended
		c.Close()
		if _, err := w.Next(t.Context()); err == nil {
			// events the frames made are fine; the watch must end after them.
			for err == nil {
				_, err = w.Next(t.Context())
			}
		}
	})
}
