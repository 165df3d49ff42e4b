//go:build !race

package storage

// raceDetector is true when the tests run under -race.
const raceDetector = false
