package search

import (
	"math"
	"slices"
	"testing"
)

func TestVectorRoundTrip(t *testing.T) {
	for _, v := range [][]float32{
		nil,
		{},
		{1},
		{0.5, -0.25, 3.75e-9, -1e30, float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32, math.MaxFloat32},
	} {
		b := EncodeVector(v)
		if len(b) != 4*len(v) {
			t.Errorf("%v: %d bytes", v, len(b))
		}
		if got := DecodeVector(b); !slices.Equal(got, v) && !(len(got) == 0 && len(v) == 0) {
			t.Errorf("round trip %v → %v", v, got)
		}
	}
	// NaN survives bit for bit.
	if got := DecodeVector(EncodeVector([]float32{float32(math.NaN())})); len(got) != 1 || !math.IsNaN(float64(got[0])) {
		t.Errorf("NaN → %v", got)
	}
	// Little-endian, as stored: 1.0 is 00 00 80 3f.
	if b := EncodeVector([]float32{1}); !slices.Equal(b, []byte{0, 0, 0x80, 0x3f}) {
		t.Errorf("1.0 encodes as % x", b)
	}
	// A truncated value decodes the whole floats it has.
	if got := DecodeVector([]byte{0, 0, 0x80, 0x3f, 1, 2}); !slices.Equal(got, []float32{1}) {
		t.Errorf("truncated: %v", got)
	}
}

func TestCosine(t *testing.T) {
	for _, c := range []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 2, 3}, []float32{1, 2, 3}, 1},
		{[]float32{1, 2, 3}, []float32{2, 4, 6}, 1},
		{[]float32{1, 0}, []float32{0, 1}, 0},
		{[]float32{1, 2}, []float32{-1, -2}, -1},
		{[]float32{1, 1}, []float32{1, 0}, 1 / math.Sqrt2},
		{[]float32{1, 2}, []float32{1, 2, 3}, 0}, // lengths differ
		{nil, nil, 0},
		{[]float32{0, 0}, []float32{1, 1}, 0},             // a zero vector
		{[]float32{1e30, 1e30}, []float32{1e30, 1e30}, 1}, // no float32 overflow
	} {
		if got := Cosine(c.a, c.b); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Cosine(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Cosine(c.b, c.a); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Cosine(%v, %v) = %v, want %v (symmetric)", c.b, c.a, got, c.want)
		}
	}
	if SemanticThreshold <= 0 || SemanticThreshold >= 1 {
		t.Errorf("SemanticThreshold = %v", SemanticThreshold)
	}
}
