package storage

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKeySplitKeyRoundTrip(t *testing.T) {
	cases := [][]string{
		{"goal_123"},
		{"a/b"},
		{"%"},
		{"%2F"},
		{"%25"},
		{"%/"},
		{"/%"},
		{"%%2F%252F"},
		{"/"},
		{"//"},
		{"space", "field", "value", "id"},
		{"a/b", "c%d", "", "e/f%2Fg"},
		{"", ""},
		{"ünïcødé/ключ", "🙂%"},
	}
	for _, parts := range cases {
		key := Key(PrefixIndex, parts...)
		if !bytes.HasPrefix(key, []byte(PrefixIndex)) {
			t.Errorf("Key(%q) = %q, which lacks the prefix", parts, key)
		}
		// The escaped parts contain no "/": the key has exactly one separator between parts.
		if got, want := strings.Count(string(key[len(PrefixIndex):]), "/"), len(parts)-1; got != want {
			t.Errorf("Key(%q) = %q has %d separators, want %d", parts, key, got, want)
		}
		if got := SplitKey(PrefixIndex, key); !slices.Equal(got, parts) {
			t.Errorf("SplitKey(Key(%q)) = %q", parts, got)
		}
		if got := LastPart(key); got != parts[len(parts)-1] {
			t.Errorf("LastPart(Key(%q)) = %q, want %q", parts, got, parts[len(parts)-1])
		}
	}
}

func TestKeyWithoutPartsIsThePrefix(t *testing.T) {
	if got := string(Key(PrefixTrace)); got != PrefixTrace {
		t.Errorf("Key(PrefixTrace) = %q, want %q", got, PrefixTrace)
	}
	if got := SplitKey(PrefixTrace, Key(PrefixTrace)); got != nil {
		t.Errorf("SplitKey of a bare prefix = %q, want nil", got)
	}
	if got := string(PrefixKey(PrefixTrace)); got != PrefixTrace {
		t.Errorf("PrefixKey(PrefixTrace) = %q, want %q", got, PrefixTrace)
	}
}

func TestPrefixKeySelectsExactlyOnePart(t *testing.T) {
	p := PrefixKey(PrefixIndex, "trace", "turn", "t1")
	if want := "idx/trace/turn/t1/"; string(p) != want {
		t.Fatalf("PrefixKey = %q, want %q", p, want)
	}
	if !bytes.HasPrefix(IndexKey("trace", "turn", "t1", "0001"), p) {
		t.Errorf("the index key of turn t1 does not start with its prefix key %q", p)
	}
	for _, other := range []string{"t10", "t1/x", "t", "t1%"} {
		if k := IndexKey("trace", "turn", other, "0001"); bytes.HasPrefix(k, p) {
			t.Errorf("the index key %q of turn %q matches turn t1's prefix %q", k, other, p)
		}
	}
}

func TestIndexKeyIsKeyUnderIdx(t *testing.T) {
	got := IndexKey("trace", "kind", "turn.start", "00000000000000ff")
	want := Key(PrefixIndex, "trace", "kind", "turn.start", "00000000000000ff")
	if !bytes.Equal(got, want) || string(got) != "idx/trace/kind/turn.start/00000000000000ff" {
		t.Errorf("IndexKey = %q, want %q", got, want)
	}
}

func TestUint64SortsNumerically(t *testing.T) {
	nums := []uint64{0, 1, 9, 10, 15, 16, 255, 256, 1 << 32, 1<<63 - 1, 1 << 63, math.MaxUint64}
	assertSortsLike(t, nums, Uint64)
	for _, n := range nums {
		s := Uint64(n)
		if len(s) != 16 {
			t.Errorf("Uint64(%d) = %q, want 16 digits", n, s)
		}
		back, err := ParseUint64(s)
		if err != nil || back != n {
			t.Errorf("ParseUint64(%q) = %d, %v; want %d", s, back, err, n)
		}
	}
}

func TestParseUint64RejectsWhatUint64NeverWrites(t *testing.T) {
	for _, s := range []string{"", "ff", "000000000000000g", "00000000000000001", "-000000000000001", "+000000000000001", "0x00000000000001", "0000000000000001x"} {
		if n, err := ParseUint64(s); err == nil {
			t.Errorf("ParseUint64(%q) = %d, want an error", s, n)
		}
	}
}

func TestInt64SortsNumerically(t *testing.T) {
	assertSortsLike(t, []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -256, -2, -1, 0, 1, 2, 255, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}, Int64)
}

func TestTimeSortsChronologically(t *testing.T) {
	base := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	times := []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1600, 6, 1, 0, 0, 0, 0, time.UTC), // before UnixNano's range
		time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(-1, 0),
		time.Unix(0, -1),
		time.Unix(0, 0),
		time.Unix(0, 1),
		base,
		base.Add(time.Nanosecond),
		base.Add(time.Hour),
		time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), // after it
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	for i := 1; i < len(times); i++ {
		if a, b := Time(times[i-1]), Time(times[i]); a >= b {
			t.Errorf("Time(%v) = %q does not sort before Time(%v) = %q", times[i-1], a, times[i], b)
		}
	}
	// The same instant in another zone is the same key.
	if Time(base) != Time(base.In(time.FixedZone("UTC+5", 5*3600))) {
		t.Errorf("Time depends on the zone of the same instant")
	}
}

// assertSortsLike checks that render preserves the order of every pair of nums.
func assertSortsLike[N cmp.Ordered](t *testing.T, nums []N, render func(N) string) {
	t.Helper()
	for _, a := range nums {
		for _, b := range nums {
			if got, want := strings.Compare(render(a), render(b)), cmp.Compare(a, b); got != want {
				t.Errorf("compare(render(%v), render(%v)) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	cases := []struct{ prefix, want []byte }{
		{nil, nil},
		{[]byte("p/"), []byte("p0")},
		{[]byte("a"), []byte("b")},
		{[]byte("a\xff"), []byte("b")},
		{[]byte("a\xfe\xff\xff"), []byte("a\xff")},
		{[]byte("\xff\xff"), nil},
	}
	for _, c := range cases {
		if got := PrefixEnd(c.prefix); !bytes.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
}

func FuzzKeyParts(f *testing.F) {
	f.Add("goal_123", "a/b", "%2F")
	f.Add("%25", "", "/%/")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		parts := []string{a, b, c}
		key := Key(PrefixIndex, parts...)
		if got := SplitKey(PrefixIndex, key); !slices.Equal(got, parts) {
			t.Fatalf("SplitKey(Key(%q)) = %q", parts, got)
		}
		if got := LastPart(key); got != c {
			t.Fatalf("LastPart(Key(%q)) = %q", parts, got)
		}
		// A prefix scan for a's keys never reaches those of another first part.
		p := PrefixKey(PrefixIndex, a)
		if !bytes.HasPrefix(key, p) {
			t.Fatalf("Key(%q) = %q lacks its own prefix key %q", parts, key, p)
		}
		if a != b && bytes.HasPrefix(Key(PrefixIndex, b, c), p) {
			t.Fatalf("Key(%q, %q) starts with the prefix key %q of %q", b, c, p, a)
		}
	})
}

func FuzzInt64SortsNumerically(f *testing.F) {
	f.Add(int64(-1), int64(0))
	f.Add(int64(math.MinInt64), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, a, b int64) {
		if got, want := strings.Compare(Int64(a), Int64(b)), cmp.Compare(a, b); got != want {
			t.Fatalf("compare(Int64(%d), Int64(%d)) = %d, want %d", a, b, got, want)
		}
	})
}

func TestParseTimeReversesTime(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 11, 29, 13, 4, 5, 123456789, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		got, err := ParseTime(Time(tm))
		if err != nil || !got.Equal(tm) {
			t.Errorf("ParseTime(Time(%s)) = %s, %v", tm, got, err)
		}
	}
	for _, bad := range []string{"", "zz", Time(time.Unix(0, 0))[:23], "00000000000000000000000g", "8000000000000000ffffffff"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}
