package main

import (
	"flag"
	"runtime"
	"strconv"
)

// waitMore lets three tests per CPU run at once, unless -test.parallel
// says how many. The tests of this package mostly wait, on servers and
// browsers starting, agents sleeping and leases running out: at one test
// per CPU, the default, two cores sat about a third idle
// (docs/PERFORMANCE.md, "Where the suite's time goes"). Under the race detector, which
// keeps the cores busy, the default stands. The tests that hold a server
// to a time stay serial: they run before the parallel ones, alone.
func waitMore() {
	if raceEnabled {
		return
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(3*runtime.GOMAXPROCS(0)))
	}
}
