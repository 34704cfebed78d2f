package feed

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/waittest"
)

func recv[T any](t *testing.T, ch <-chan T) (T, bool) {
	t.Helper()
	select {
	case v, ok := <-ch:
		return v, ok
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for a value")
		var zero T
		return zero, false
	}
}

func TestSubscriberGetsEveryValueInOrderEvenWhenSlow(t *testing.T) {
	t.Parallel()
	f := New[int]()
	ch := f.Subscribe(t.Context())
	for i := range 1000 {
		f.Publish(i)
	}
	for i := range 1000 {
		v, ok := recv(t, ch)
		if !ok || v != i {
			t.Fatalf("value %d: got %d, %v", i, v, ok)
		}
	}
}

func TestSubscriberSeesOnlyValuesPublishedAfterSubscribe(t *testing.T) {
	t.Parallel()
	f := New[int]()
	f.Publish(1)
	ch := f.Subscribe(t.Context())
	f.Publish(2)
	if v, _ := recv(t, ch); v != 2 {
		t.Fatalf("got %d, want 2", v)
	}
}

func TestCancelClosesChannelAndRemovesSubscriber(t *testing.T) {
	t.Parallel()
	f := New[int]()
	ctx, cancel := context.WithCancel(t.Context())
	ch := f.Subscribe(ctx)
	cancel()
	if _, ok := recv(t, ch); ok {
		t.Fatal("channel still open after cancel")
	}
	if !waittest.Within(5*time.Second, func() bool { return f.Len() == 0 }) {
		t.Fatal("subscriber not removed")
	}
}

func TestCloseClosesSubscribersAndLaterSubscribes(t *testing.T) {
	t.Parallel()
	f := New[int]()
	ch := f.Subscribe(t.Context())
	f.Close()
	f.Close()
	if _, ok := recv(t, ch); ok {
		t.Fatal("channel open after Close")
	}
	if _, ok := recv(t, f.Subscribe(t.Context())); ok {
		t.Fatal("subscribe after Close gave an open channel")
	}
}
