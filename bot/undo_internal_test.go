package bot

import (
	"slices"
	"testing"
)

func TestAnUndoStackStopsWhatWasStartedLastFirstUnlessReleased(t *testing.T) {
	t.Parallel()
	var stopped []string
	stop := func(name string) func() { return func() { stopped = append(stopped, name) } }

	var failed undoStack
	failed.push(stop("watch"))
	failed.push(stop("index"))
	failed.push(stop("catalogue"))
	failed.run()
	if want := []string{"catalogue", "index", "watch"}; !slices.Equal(stopped, want) {
		t.Errorf("a failed start stopped %v, want %v", stopped, want)
	}
	failed.run()
	if len(stopped) != 3 {
		t.Errorf("a second run stopped again: %v", stopped)
	}

	stopped = nil
	var started undoStack
	started.push(stop("watch"))
	started.release()
	started.run()
	if len(stopped) != 0 {
		t.Errorf("a start that succeeded stopped %v", stopped)
	}
}
