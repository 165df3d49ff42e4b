package scale_test

import (
	"context"
	"testing"

	"github.com/engram-console/engram/core/scale"
)

func BenchmarkTmpBuildMemories(b *testing.B) {
	for b.Loop() {
		if _, err := scale.Build(context.Background(), scale.Options{Dir: b.TempDir(), Memories: 30000, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
