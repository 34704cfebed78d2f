//go:build race

package waittest

// raceEnabled says the tests run under the race detector.
const raceEnabled = true
