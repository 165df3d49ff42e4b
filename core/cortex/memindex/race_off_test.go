//go:build !race

package memindex

// raceDetector is true under -race (race_on_test.go).
const raceDetector = false
