package pgtest

import (
	"fmt"
	"testing"
)

// TestSchemasAreMadeAndDroppedOnAConnectionKept: a connection is a backend
// process to start and end, some 30 ms of CPU on a small machine; the
// tests' schemas are made and dropped on the connections the binary
// keeps, not on one a schema. Not parallel: it counts the connections
// the binary's admin pool makes, which the parallel tests share.
func TestSchemasAreMadeAndDroppedOnAConnectionKept(t *testing.T) {
	URL(t) // the cluster started and its admin connected
	before := the.admin.Stat().NewConnsCount()
	for i := range 10 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { URL(t) }) // made, then dropped as it ends
	}
	if n := the.admin.Stat().NewConnsCount() - before; n != 0 {
		t.Errorf("making and dropping 10 schemas one after another opened %d connections, want none", n)
	}
}
