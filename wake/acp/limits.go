package acp

import (
	"fmt"
	"sync"
	"time"
)

// Default limits of a turn.
const (
	// DefaultTurnIdle is the longest a turn may go with no word from the
	// agent (no session/update and no request of its) before it is
	// stopped.
	DefaultTurnIdle = 2 * time.Minute
	// DefaultTurnTimeout is the longest a turn may run.
	DefaultTurnTimeout = 30 * time.Minute
)

// The names of the limits, as the agents file spells them.
const (
	StartTimeoutField = "startTimeout"
	TurnIdleField     = "turnIdle"
	TurnTimeoutField  = "turnTimeout"
)

// ParseLimit reads a limit of the agents file: a Go duration such as "90s"
// or "2m", more than zero; "" is zero (the default). field names the limit
// in the error.
func ParseLimit(field, value string) (time.Duration, error) {
	if value == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q is not a duration of more than zero such as \"90s\" or \"2m\"", field, value)
	}
	return d, nil
}

// limit is a limit that stopped a turn.
type limit struct {
	field string
	d     time.Duration
}

// words says what the limit saw.
func (l limit) words() string {
	if l.field == TurnIdleField {
		return fmt.Sprintf("it sent nothing for %s (the agent's %s), so the turn was stopped", l.d, l.field)
	}
	return fmt.Sprintf("the turn ran for %s (the agent's %s), so it was stopped", l.d, l.field)
}

// hint says what to do about the limit. An agent silent past turnIdle
// is most often one retrying a model API it cannot reach, without a word.
func (l limit) hint(agent string) string {
	if l.field == TurnIdleField {
		return fmt.Sprintf("If %s cannot reach its model's API it retries in silence: check this machine's network, or a proxy (pass HTTPS_PROXY in %[1]s's env in the agents file). Then send the message again, or raise turnIdle for %[1]s in the agents file if it needs longer.", agent)
	}
	return fmt.Sprintf("Send the message again, or raise %s for %s in the agents file if it needs longer.", l.field, agent)
}

// watch bounds one turn: it reports on hit when the agent says nothing for
// idle, not counting the time the agent waits on the person (between hold
// and release), or when the turn runs for total.
type watch struct {
	idle, total time.Duration
	hit         chan limit // one limit, at most

	mu      sync.Mutex
	held    int
	stopped bool
	idleT   *time.Timer
	totalT  *time.Timer
}

// newWatch starts a watch.
func newWatch(idle, total time.Duration) *watch {
	w := &watch{idle: idle, total: total, hit: make(chan limit, 1)}
	w.idleT = time.AfterFunc(idle, func() { w.fire(limit{TurnIdleField, idle}) })
	w.totalT = time.AfterFunc(total, func() { w.fire(limit{TurnTimeoutField, total}) })
	return w
}

func (w *watch) fire(l limit) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || (l.field == TurnIdleField && w.held > 0) {
		return
	}
	w.stopped = true
	w.hit <- l
}

// touch says the agent said something: the idle clock starts again.
func (w *watch) touch() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped && w.held == 0 {
		w.idleT.Reset(w.idle)
	}
}

// hold stops the idle clock while the agent waits on us (a tool call, a
// permission): release starts it again.
func (w *watch) hold() func() {
	w.mu.Lock()
	w.held++
	w.idleT.Stop()
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.held--; w.held == 0 && !w.stopped {
				w.idleT.Reset(w.idle)
			}
		})
	}
}

// stop stops the clocks.
func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.idleT.Stop()
	w.totalT.Stop()
}

// Limits are the limits a Harness's agent runs under, defaults filled in.
type Limits struct {
	StartTimeout, TurnIdle, TurnTimeout time.Duration
}

// Limits returns the limits in force.
func (h *Harness) Limits() Limits {
	return Limits{StartTimeout: h.cfg.StartTimeout, TurnIdle: h.cfg.TurnIdle, TurnTimeout: h.cfg.TurnTimeout}
}
