package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/engine"
)

// wire is one connection's frames: a WebSocket or an in-memory pipe.
type wire interface {
	// read returns the next text frame. errBinary reports a binary frame.
	read(ctx context.Context) ([]byte, error)
	// write sends one text frame.
	write(ctx context.Context, data []byte) error
	// close closes with a close frame, after a handshake when the peer
	// answers; it may block for a few seconds.
	close(code websocket.StatusCode, reason string)
	// closeNow closes at once; the pipe still reports code and reason to
	// its client.
	closeNow(code websocket.StatusCode, reason string)
	// abort marks the wire closed with code and reason without blocking,
	// under any lock; the connection's cancelled context does the rest.
	abort(code websocket.StatusCode, reason string)
}

var (
	errBinary      = errors.New("binary frame")
	errInvalidUTF8 = errors.New("text frame not valid UTF-8")
)

// outItem is one queued outgoing message, or the instruction to close once
// what was queued before it is sent. A message the engine delivered is
// queued as it is and encoded by the writer: the engine delivers with its
// lock held.
type outItem struct {
	data      []byte
	msg       engine.Message // when data is nil and closeCode 0
	closeCode websocket.StatusCode
	reason    string
}

// conn is one client connection.
type conn struct {
	srv       *Server
	id        uint64
	w         wire
	principal access.Principal
	token     string      // what it presented at the upgrade, asked again by Reauthenticate
	valid     func() bool // for PipeAs: asked instead of the token
	log       *slog.Logger
	link      *engine.Link // the connection's tie to the engine

	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc

	out *sendQueue

	// Direct writes: an answer the reading goroutine writes itself when
	// nothing is queued, sparing the writer's wake-up. direct is the
	// answer to write once the frame is handled (the wire is reserved for
	// it meanwhile); touched by the reading goroutine only.
	direct *encoder
	// Guarded by out.mu: directOK is false on a pipe, and while a stalled
	// direct write still runs after reading was handed over; inDirect
	// while a direct write runs; moved from a hand-over until the stalled
	// write ends. readEnd, made at the first hand-over, takes the end of
	// the last goroutine reading.
	directOK bool
	inDirect bool
	moved    bool
	readEnd  chan error
	// stall watches direct writes while they happen, guarded by out.mu: it
	// runs every stallTimeout, and hands reading over to a new goroutine
	// when one direct write lasted from one run to the next, so that a
	// client that does not read still fills its queue and is closed.
	// directs counts direct writes, seen is the count at its last run.
	stall      *time.Timer
	stallArmed bool
	directs    uint64
	seen       uint64

	closeMu  sync.Mutex
	closing  bool // no more reading: a close was decided
	graceful bool // the writer closes after the queue drains
	hard     bool // closed at once

	// Handshake state, touched by the reading goroutine only.
	ready    bool
	clientID string
	version  string
	// dialect is the shapes of version, set before the engine delivers
	// anything to the connection; current needs no translation.
	dialect dialect

	// The request being handled, for telemetry, touched by the reading
	// goroutine only: the JSON-RPC error code it was answered with (0
	// for a result), the context it is served with, its span.
	code int
	rctx context.Context
	span trace.Span
}

func (c *conn) caller() engine.Caller {
	return engine.Caller{ClientID: c.clientID, Principal: c.principal}
}

// serve reads and handles messages until the connection ends, then tidies
// up. It is the connection's one goroutine while it is idle: a writer runs
// only while messages wait (sendQueue).
func (c *conn) serve() {
	defer c.srv.forget(c)
	c.log.Debug("connection open")
	moved, err := c.readLoop()
	if moved {
		err = <-c.readEnd
	}
	c.closeMu.Lock()
	graceful := c.graceful
	c.closeMu.Unlock()
	if graceful {
		// the writer sends what is queued, then closes and cancels the
		// connection's context (as a failed write does); a client that
		// does not read for that long is cut off.
		t := time.NewTimer(gracefulCloseTimeout)
		select {
		case <-c.ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	c.cancel()
	c.out.stop()
	c.unwatch()
	c.w.closeNow(websocket.StatusNormalClosure, "")
	c.link.Close()
	c.log.Debug("connection closed", "err", err)
}

// readLoop reads and handles frames until the connection ends, or until
// it hands reading over to another goroutine (moved), whose end serve
// then waits for on readEnd.
func (c *conn) readLoop() (moved bool, err error) {
	for {
		data, err := c.w.read(c.ctx)
		if errors.Is(err, errBinary) {
			c.closeAfterQueue(websocket.StatusUnsupportedData, "binary frames are not supported: send one JSON-RPC message per text frame")
			return false, err
		}
		if err != nil {
			return false, err
		}
		if !utf8.Valid(data) {
			// RFC 6455 §8.1: a text frame that is not UTF-8 fails the
			// connection with 1007.
			c.closeAfterQueue(websocket.StatusInvalidFramePayloadData, "a text frame must be valid UTF-8")
			return false, errInvalidUTF8
		}
		c.handleFrame(data)
		if c.direct != nil && c.writeDirect() {
			return true, nil
		}
		if c.isClosing() {
			return false, nil
		}
	}
}

// stallTimeout is about how long a direct write may block (between one
// and two of it) before reading moves to another goroutine: the client is
// slow to read, so its answers are queued from then on, and a full queue
// closes it as before.
const stallTimeout = 10 * time.Millisecond

// send sends an answer from the reading goroutine: written directly once
// the frame is handled when nothing waits to be written (and the wire
// allows it), queued otherwise. e is the send's to free.
func (c *conn) send(e *encoder) {
	if c.direct == nil && c.out.reserve(c) {
		c.direct = e
		return
	}
	c.enqueue(outItem{data: e.bytes()})
	e.free()
}

// writeDirect writes the answer reserved by send, then gives the wire
// back to the writer. It reports whether reading moved to another
// goroutine meanwhile, the write having stalled.
func (c *conn) writeDirect() (moved bool) {
	e := c.direct
	c.direct = nil
	q := c.out
	q.mu.Lock()
	// From here stalled may hand reading over: the lock orders what this
	// goroutine did before it with what the next reader does.
	c.inDirect = true
	c.watchLocked()
	q.mu.Unlock()
	var err error
	if c.ctx.Err() == nil {
		err = c.w.write(c.ctx, e.buf.Bytes())
	}
	e.free()
	moved = q.release(c)
	if err != nil {
		c.fail(websocket.StatusAbnormalClosure, "write failed", false)
	}
	return moved
}

// watchLocked starts a direct write's watch. Called with out.mu held.
func (c *conn) watchLocked() {
	c.directs++
	if c.stallArmed {
		return // it runs already; arming a timer for each write costs
	}
	c.stallArmed = true
	if c.stall == nil {
		c.stall = time.AfterFunc(stallTimeout, c.stalled)
	} else {
		c.stall.Reset(stallTimeout)
	}
}

// stalled runs every stallTimeout while direct writes happen. When the
// direct write it saw last time still runs, the client is slow to read: a
// new goroutine reads on, and answers are queued from then on.
func (c *conn) stalled() {
	q := c.out
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case c.moved || c.ctx.Err() != nil:
		c.stallArmed = false
	case c.inDirect && c.directs == c.seen:
		c.moved, c.directOK, c.stallArmed = true, false, false
		if c.readEnd == nil {
			c.readEnd = make(chan error, 1)
		}
		go func() {
			var err error
			moved := false
			if !c.isClosing() { // as the loop handed over would check
				moved, err = c.readLoop()
			}
			if !moved { // else the goroutine it moved to sends the end
				c.readEnd <- err
			}
		}()
	case c.directs != c.seen:
		c.seen = c.directs
		c.stall.Reset(stallTimeout)
	default:
		c.stallArmed = false // idle: the next direct write arms it again
	}
}

// unwatch stops the watch when the connection ends.
func (c *conn) unwatch() {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	if c.stall != nil {
		c.stall.Stop()
	}
	c.stallArmed = false
}

func (c *conn) isClosing() bool {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	return c.closing
}

// writeLoop writes what waits, in order, and returns once nothing does:
// the queue starts it again when a message comes. It also returns, leaving
// the wire taken so that no writer starts again, once the connection ends,
// closes or a write fails.
func (c *conn) writeLoop() {
	for {
		it, ok := c.out.take()
		if !ok {
			return
		}
		if c.ctx.Err() != nil {
			return
		}
		if it.closeCode != 0 {
			c.w.close(it.closeCode, it.reason)
			c.cancel()
			return
		}
		if err := c.writeItem(it); err != nil {
			c.fail(websocket.StatusAbnormalClosure, "write failed", false)
			return
		}
		c.out.done()
	}
}

// sendQueue is a connection's outgoing messages, in order, up to a limit.
// It holds memory only for the messages waiting: a buffered channel of
// the limit's size would hold it for every idle connection.
//
// One message is written at a time: busy while the writer or a direct
// write of the reading goroutine has the wire. The writer is a goroutine
// started when a message waits and the wire is free, which returns once
// nothing waits: an idle connection has none.
type sendQueue struct {
	mu      sync.Mutex
	items   []outItem // waiting from head on
	head    int
	limit   int
	busy    bool
	writing bool   // a writer runs
	stopped bool   // no writer starts any more
	writer  func() // the writer's loop
	writers sync.WaitGroup
}

func newSendQueue(limit int, writer func()) *sendQueue {
	return &sendQueue{limit: limit, writer: writer}
}

// kickLocked starts the writer when a message waits, the wire is free and
// no writer runs. Called with mu held; it never blocks.
func (q *sendQueue) kickLocked() {
	if q.writing || q.busy || q.stopped || q.head == len(q.items) {
		return
	}
	q.writing = true
	q.writers.Add(1)
	go func() {
		defer q.writers.Done()
		q.writer()
	}()
}

// stop starts no writer any more and waits for the one running, if any.
// The connection's context is cancelled first, which ends a blocked write.
func (q *sendQueue) stop() {
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	q.writers.Wait()
}

// push queues it; false when limit messages wait already.
func (q *sendQueue) push(it outItem) bool {
	q.mu.Lock()
	n := len(q.items) - q.head
	if n >= q.limit {
		q.mu.Unlock()
		return false
	}
	if q.head > 0 && len(q.items) == cap(q.items) {
		copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, it)
	// a busy wire starts the writer when it is given back.
	q.kickLocked()
	q.mu.Unlock()
	return true
}

// idleQueueCap is the most room for waiting messages an idle connection
// keeps from its last burst (each is about 100 bytes).
const idleQueueCap = 8

// take takes the oldest waiting message for the writer, which has the
// wire until done; false when none waits or the wire is busy, and the
// writer then returns.
func (q *sendQueue) take() (outItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.busy {
		q.writing = false
		return outItem{}, false
	}
	if q.head == len(q.items) {
		q.writing = false
		if cap(q.items) > idleQueueCap {
			q.items = nil // a burst is over: give its memory back
		}
		q.items, q.head = q.items[:0], 0
		return outItem{}, false
	}
	it := q.items[q.head]
	q.items[q.head] = outItem{}
	q.head++
	q.busy = true
	return it, true
}

// done gives the wire back after the writer wrote what it took.
func (q *sendQueue) done() {
	q.mu.Lock()
	q.busy = false
	q.mu.Unlock()
}

// reserve gives c's reading goroutine the wire for a direct write: true
// when direct writes are allowed, nothing waits and nobody writes.
func (q *sendQueue) reserve(c *conn) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !c.directOK || q.busy || q.head != len(q.items) {
		return false
	}
	q.busy = true
	return true
}

// release gives the wire back after a direct write, starting the writer
// for what was queued meanwhile. It reports whether reading moved to
// another goroutine during the write; if so, the client read again, and
// the goroutine now reading may write directly again once the queue is
// empty, rather than wake a writer for every answer from then on.
func (q *sendQueue) release(c *conn) (moved bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.busy, c.inDirect = false, false
	q.kickLocked()
	moved = c.moved
	if moved {
		c.moved, c.directOK = false, true
	}
	return moved
}

// len is how many messages wait.
func (q *sendQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

// enqueue queues an outgoing message without blocking. A full queue means
// the client reads too slowly: it is closed.
func (c *conn) enqueue(it outItem) {
	select {
	case <-c.ctx.Done():
		return
	default:
	}
	if !c.out.push(it) {
		c.tooSlow()
	}
}

// tooSlow closes a connection whose client has fallen too far behind.
func (c *conn) tooSlow() {
	c.fail(websocket.StatusPolicyViolation, "too far behind: read your messages", true)
}

// gracefulCloseTimeout bounds how long a closing connection may take to
// send what was queued for it.
const gracefulCloseTimeout = 10 * time.Second

// fail closes the connection at once, without blocking: safe under the
// Bus's lock.
func (c *conn) fail(code websocket.StatusCode, reason string, warn bool) {
	c.closeMu.Lock()
	if c.hard {
		c.closeMu.Unlock()
		return
	}
	c.hard, c.closing = true, true
	c.closeMu.Unlock()
	if warn {
		c.log.Warn("closing connection", "client", c.clientID, "reason", reason, "queued", c.out.len())
	}
	// abort first: once cancelled, serve may close the wire with 1000
	// before the code is set.
	c.w.abort(code, reason)
	c.cancel()
}

// closeAfterQueue closes the connection once what is queued is sent: the
// client gets every answer, then a close frame with code and reason.
func (c *conn) closeAfterQueue(code websocket.StatusCode, reason string) {
	c.closeMu.Lock()
	if c.closing {
		c.closeMu.Unlock()
		return
	}
	c.closing, c.graceful = true, true
	c.closeMu.Unlock()
	if !c.out.push(outItem{closeCode: code, reason: reason}) {
		c.fail(code, reason, false)
	}
}

// reply sends the result of request id. Called by the reading goroutine.
func (c *conn) reply(id []byte, result any) {
	e := getEncoder()
	if err := e.result(id, result); err != nil {
		e.free()
		c.log.Error("result did not marshal", "err", err)
		c.replyError(id, &wireError{Code: CodeInternalError, Message: internalMessage})
		return
	}
	c.send(e)
}

// replyError sends an error response for request id. Called by the
// reading goroutine.
func (c *conn) replyError(id []byte, we *wireError) {
	c.code = we.Code
	e := getEncoder()
	if err := e.value(errorResponse{JSONRPC: jsonrpcVersion, ID: id, Error: we}); err != nil {
		c.log.Error("error response did not marshal", "err", err)
		e.buf.Reset()
		_ = e.value(errorResponse{JSONRPC: jsonrpcVersion, ID: id, Error: &wireError{Code: CodeInternalError, Message: internalMessage}})
	}
	c.send(e)
}

// replyHostError answers request id with the JSON-RPC error for a host
// error, logging an internal one once.
func (c *conn) replyHostError(id []byte, method string, err error) {
	e, internal := errorFor(method, err)
	if internal {
		c.log.Error("internal error", "method", method, "client", c.clientID, "err", err)
	}
	if id != nil {
		c.replyError(id, e)
	}
}

// errorResponse is an error response.
type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *wireError      `json:"error"`
}

// wsWire is a WebSocket. Its reads and writes are not given the
// connection's context: watching a context costs the library an
// AfterFunc on every call. The socket is closed when that context ends
// instead (ServeHTTP arranges it), which ends a blocked read or write.
type wsWire struct{ ws *websocket.Conn }

func (w *wsWire) read(context.Context) ([]byte, error) {
	typ, r, err := w.ws.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	data, err := readFrameData(r)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, errBinary
	}
	return data, nil
}

// frameBufs are buffers a frame is read into, to be copied out at its
// size: websocket.Conn.Read (io.ReadAll) reads each frame into a new
// buffer of 512 bytes or more. One is taken once a frame has begun, so
// an idle connection holds none.
var frameBufs = sync.Pool{New: func() any {
	b := make([]byte, 4096)
	return &b
}}

// readFrameData reads r to its end into a pooled buffer and returns a
// copy of what it read, of its own.
func readFrameData(r io.Reader) ([]byte, error) {
	bp := frameBufs.Get().(*[]byte)
	buf, n := *bp, 0
	var err error
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		var m int
		m, err = r.Read(buf[n:])
		n += m
		if err != nil {
			break
		}
	}
	data := bytes.Clone(buf[:n])
	if cap(buf) <= maxPooledBuffer {
		*bp = buf[:cap(buf)]
		frameBufs.Put(bp)
	}
	if err == io.EOF {
		return data, nil
	}
	return nil, err
}

func (w *wsWire) write(_ context.Context, data []byte) error {
	return w.ws.Write(context.Background(), websocket.MessageText, data)
}

func (w *wsWire) close(code websocket.StatusCode, reason string) { _ = w.ws.Close(code, reason) }

func (w *wsWire) closeNow(websocket.StatusCode, string) { _ = w.ws.CloseNow() }

// abort does nothing more: the cancelled context closes the socket, and
// serve calls closeNow when it tidies up.
func (w *wsWire) abort(websocket.StatusCode, string) {}

// pipeWire is an in-memory connection: frames pass through unbuffered
// channels, so a client that does not Recv holds the server's writer up
// as a socket would.
type pipeWire struct {
	limit int64
	in    chan []byte // client → server
	out   chan []byte // server → client
	done  chan struct{}
	once  sync.Once
	err   error // what the client sees once done is closed
}

func newPipeWire(limit int64) *pipeWire {
	return &pipeWire{limit: limit, in: make(chan []byte), out: make(chan []byte), done: make(chan struct{})}
}

func (p *pipeWire) closeWith(code websocket.StatusCode, reason string) {
	p.once.Do(func() {
		p.err = websocket.CloseError{Code: code, Reason: reason}
		close(p.done)
	})
}

func (p *pipeWire) read(ctx context.Context) ([]byte, error) {
	select {
	case data := <-p.in:
		if int64(len(data)) > p.limit {
			reason := fmt.Sprintf("read limited at %d bytes", p.limit)
			p.closeWith(websocket.StatusMessageTooBig, reason)
			return nil, fmt.Errorf("%w: %s", websocket.ErrMessageTooBig, reason)
		}
		return data, nil
	case <-p.done:
		return nil, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipeWire) write(ctx context.Context, data []byte) error {
	select {
	case p.out <- data:
		return nil
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipeWire) close(code websocket.StatusCode, reason string) { p.closeWith(code, reason) }

func (p *pipeWire) closeNow(code websocket.StatusCode, reason string) {
	p.closeWith(code, reason)
}

func (p *pipeWire) abort(code websocket.StatusCode, reason string) { p.closeWith(code, reason) }

// Conn is the client's end of a Pipe: one JSON-RPC message per Send and
// per Recv, as one text frame each on a WebSocket. Send and Recv may be
// used from two goroutines at once.
type Conn struct{ w *pipeWire }

// Send sends one message to the server. It blocks until the server reads
// it, ctx is done, or the connection ends; after the end it returns the
// websocket.CloseError the connection ended with.
func (c *Conn) Send(ctx context.Context, msg []byte) error {
	select {
	case <-c.w.done:
		return c.w.err
	default:
	}
	select {
	case c.w.in <- msg:
		return nil
	case <-c.w.done:
		return c.w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Recv returns the next message from the server. Once the connection has
// ended it returns the websocket.CloseError it ended with
// (websocket.CloseStatus reads its code).
func (c *Conn) Recv(ctx context.Context) ([]byte, error) {
	select {
	case data := <-c.w.out:
		return data, nil
	case <-c.w.done:
		return nil, c.w.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends the connection with status 1000. It is idempotent.
func (c *Conn) Close() error {
	c.w.closeWith(websocket.StatusNormalClosure, "client closed")
	return nil
}
