//go:build race

package history_test

// raceDetector is true under -race, which slows these tests about tenfold:
// the randomised comparisons then try fewer cases (the same claims).
const raceDetector = true
