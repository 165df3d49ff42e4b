//go:build race

package storage

// raceDetector is true when the tests run under -race, which slows
// opening Badger about fivefold: the damage matrix then tries fewer flips.
const raceDetector = true
