//go:build race

package embed

// raceDetector is true under -race, which slows these tests about tenfold:
// the comparisons with the brute force then use fewer vectors and queries
// (the same claims).
const raceDetector = true
