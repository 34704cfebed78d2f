package client

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agenthost/bots/ahp"
)

// gatedConn is a Conn whose Recv, once the connection is closed, waits
// for gate before it returns: a reader still busy when Close is called.
type gatedConn struct {
	closed  chan struct{}
	once    sync.Once
	gate    chan struct{}
	inRecv  chan struct{}
	returns chan struct{}
}

func (g *gatedConn) Send(ctx context.Context, msg []byte) error { return nil }

func (g *gatedConn) Recv(ctx context.Context) ([]byte, error) {
	<-g.closed
	close(g.inRecv)
	<-g.gate
	close(g.returns)
	return nil, errors.New("closed")
}

func (g *gatedConn) Close() error {
	g.once.Do(func() { close(g.closed) })
	return nil
}

func TestCloseWaitsForTheReaderAndEndsWatchesAndCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := &gatedConn{closed: make(chan struct{}), gate: make(chan struct{}), inRecv: make(chan struct{}), returns: make(chan struct{})}
		c := New(g, Options{})
		w := &Watch{c: c, events: newQueue[BotEvent]()}
		c.mu.Lock()
		c.subs[CatalogueURI] = w
		c.mu.Unlock()
		closed := make(chan struct{})
		go func() {
			c.Close()
			close(closed)
		}()
		<-g.inRecv
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while its reader was still reading")
		default:
		}
		close(g.gate)
		<-closed
		select {
		case <-g.returns:
		default:
			t.Fatal("Close returned before the reader's Recv did")
		}
		if _, err := w.Next(t.Context()); !errors.Is(err, ErrClosed) {
			t.Errorf("the watch's Next after Close answered %v, want ErrClosed", err)
		}
		if err := c.Call(t.Context(), "ping", ahp.PingParams{Channel: ahp.RootURI}, nil); !errors.Is(err, ErrClosed) {
			t.Errorf("a call after Close answered %v, want ErrClosed", err)
		}
	})
}
