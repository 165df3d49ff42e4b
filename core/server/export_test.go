package server

import (
	"testing"
	"time"
)

// SetDropGrace shortens how long a dropped stream may take to write its
// last event, for the test's duration.
func SetDropGrace(t *testing.T, d time.Duration) {
	old := dropGrace
	dropGrace = d
	t.Cleanup(func() { dropGrace = old })
}
