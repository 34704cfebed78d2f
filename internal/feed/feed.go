// Package feed fans values out to any number of subscribers, in order,
// without ever blocking the publisher or dropping a value: each subscriber
// has an unbounded queue drained by a goroutine of its own.
package feed

import (
	"context"
	"sync"
)

// Feed is a fan-out of values of type T. The zero value is not usable; call
// New.
type Feed[T any] struct {
	mu     sync.Mutex
	subs   map[*sub[T]]struct{}
	closed bool
}

type sub[T any] struct {
	mu     sync.Mutex
	queue  []T
	wake   chan struct{} // capacity 1: a value was queued
	done   chan struct{} // closed to stop the pump
	closed bool
}

// New returns an empty feed.
func New[T any]() *Feed[T] {
	return &Feed[T]{subs: make(map[*sub[T]]struct{})}
}

// Publish queues v for every current subscriber and returns at once.
func (f *Feed[T]) Publish(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		s.mu.Lock()
		s.queue = append(s.queue, v)
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Subscribe returns a channel of the values published after the call. It is
// closed when ctx is done or the feed is closed; values still queued then
// are dropped. On a closed feed the channel is closed at once.
func (f *Feed[T]) Subscribe(ctx context.Context) <-chan T {
	out := make(chan T)
	s := &sub[T]{wake: make(chan struct{}, 1), done: make(chan struct{})}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		close(out)
		return out
	}
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	go func() {
		defer close(out)
		defer f.remove(s)
		for {
			s.mu.Lock()
			batch := s.queue
			s.queue = nil
			s.mu.Unlock()
			for _, v := range batch {
				select {
				case out <- v:
				case <-ctx.Done():
					return
				case <-s.done:
					return
				}
			}
			select {
			case <-s.wake:
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		}
	}()
	return out
}

func (f *Feed[T]) remove(s *sub[T]) {
	f.mu.Lock()
	delete(f.subs, s)
	f.mu.Unlock()
}

// Len returns the number of subscribers.
func (f *Feed[T]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// Close closes every subscriber's channel and refuses new ones. It is
// idempotent.
func (f *Feed[T]) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.closed = true
	for s := range f.subs {
		s.mu.Lock()
		if !s.closed {
			s.closed = true
			close(s.done)
		}
		s.mu.Unlock()
	}
}
