// Package checktest runs one check of a conformance suite against an
// implementation that should fail it, and answers what the check said:
// the way a suite proves that a check can fail.
package checktest

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// failures is a testing.TB that records failures instead of failing its
// test; Fatal ends the check's goroutine as it would end a test's.
type failures struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *failures) Error(args ...any)                 { f.Errorf("%s", fmt.Sprint(args...)) }
func (f *failures) Fatalf(format string, args ...any) { f.Errorf(format, args...); runtime.Goexit() }
func (f *failures) Fatal(args ...any)                 { f.Error(args...); runtime.Goexit() }
func (f *failures) FailNow()                          { f.Errorf("FailNow"); runtime.Goexit() }
func (f *failures) Fail()                             { f.Errorf("Fail") }
func (f *failures) Skip(args ...any)                  { f.Errorf("skipped: %s", fmt.Sprint(args...)); runtime.Goexit() }
func (f *failures) Skipf(format string, args ...any)  { f.Skip(fmt.Sprintf(format, args...)) }
func (f *failures) SkipNow()                          { f.Skip() }

func (f *failures) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.msgs) > 0
}

// Failures runs check as a test would, in a goroutine of its own, and
// answers the failures it reported (none when it passed). Cleanups the
// check registers run with t's. A skip counts as a failure: a check that
// proves nothing must not pass for one that holds.
func Failures(t *testing.T, check func(testing.TB)) []string {
	t.Helper()
	f := &failures{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msgs
}
