//go:build !race

package history_test

// raceDetector is true under -race (race_on_test.go).
const raceDetector = false
