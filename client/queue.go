package client

import (
	"context"
	"iter"
	"sync"
)

// queue holds what the reader goroutine hands a consumer, without ever
// blocking the reader: items wait in order until Next takes them. Once
// ended, Next returns the items left, then the error it ended with.
type queue[T any] struct {
	mu    sync.Mutex
	items []T
	err   error
	more  chan struct{} // signalled when an item arrives or the queue ends
}

func newQueue[T any]() *queue[T] { return &queue[T]{more: make(chan struct{}, 1)} }

func (q *queue[T]) signal() {
	select {
	case q.more <- struct{}{}:
	default:
	}
}

// push adds an item; after end it is dropped.
func (q *queue[T]) push(v T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return
	}
	q.items = append(q.items, v)
	q.signal()
}

// end ends the queue with err, once.
func (q *queue[T]) end(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.err = err
		q.signal()
	}
}

// next returns the next item, waiting for it.
func (q *queue[T]) next(ctx context.Context) (T, error) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			v := q.items[0]
			var zero T
			q.items[0] = zero
			q.items = q.items[1:]
			q.mu.Unlock()
			return v, nil
		}
		err := q.err
		q.mu.Unlock()
		if err != nil {
			var zero T
			return zero, err
		}
		select {
		case <-q.more:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}

// all ranges over the items until the queue ends (the iteration ends
// without an error when it ended with errDone) or ctx is done.
func (q *queue[T]) all(ctx context.Context, errDone error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			v, err := q.next(ctx)
			if err == errDone && errDone != nil {
				return
			}
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}
