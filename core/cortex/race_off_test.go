//go:build !race

package cortex

// raceDetector is true under -race (race_on_test.go).
const raceDetector = false
