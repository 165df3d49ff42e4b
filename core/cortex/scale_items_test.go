package cortex_test

import (
	"reflect"
	"testing"

	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/scale"
)

// engram scale builds the cortex benchmarks' items with a copy of their
// generator (core/scale cannot be imported by this package's own tests:
// it imports the cortex). The copy must draw exactly the same items, or
// a store it builds is not the data the benchmarks and their figures are
// about.
func TestScaleDrawsTheBenchmarksItems(t *testing.T) {
	want, err := cortex.ItemSpecs(3000, 7)
	if err != nil {
		t.Fatal(err)
	}
	got := scale.Items(3000, 7)
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("item %d: engram scale draws %+v, the benchmarks %+v", i, got[i], want[i])
		}
	}
}
