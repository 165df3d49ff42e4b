//go:build race

package cortex

// raceDetector is true under -race, which slows Badger about fivefold:
// the largest stores of these tests are then smaller.
const raceDetector = true
