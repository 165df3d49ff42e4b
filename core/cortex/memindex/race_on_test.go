//go:build race

package memindex

// raceDetector is true under -race, which slows loading about tenfold:
// the heap benchmark then uses a smaller index.
const raceDetector = true
