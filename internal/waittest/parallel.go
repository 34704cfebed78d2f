package waittest

import (
	"flag"
	"runtime"
	"strconv"
)

// Parallel lets perCPU tests per CPU run at once, unless -test.parallel
// says how many. A package's TestMain calls it before m.Run when its tests
// mostly wait (on servers, browsers and agents starting, on leases and
// timeouts running out): at one test per CPU, go test's default, the cores
// sit idle while they wait (docs/PERFORMANCE.md, "Where the suite's time
// goes"). Under the race detector, which keeps the cores busy, the default
// stands. Tests that do not call t.Parallel still run alone, before the
// parallel ones.
func Parallel(perCPU int) {
	if raceEnabled {
		return
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(perCPU*runtime.GOMAXPROCS(0)))
	}
}
