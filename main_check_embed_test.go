package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/storage"
)

// Issue 18: engram check knows the embedding keys. A cached vector that
// does not read and a text waiting for the vector of an utterance that
// does not exist are each printed as a problem, like the other
// subsystems' problems, and the status is 3; check --repair drops them.
func TestCheckNamesDamagedEmbeddingKeys(t *testing.T) {
	env, home := hermeticEnv(t)
	data := filepath.Join(home, "a")
	script := `{"id": "w", "action": "history.write", "args": {"speaker": "user", "text": "Maria booked Lisbon."}}` + "\n"
	if out := runIn(t, env, script, "--batch", "-", "--data", data); out.code != 0 {
		t.Fatalf("creating: %d %s", out.code, out.stderr)
	}
	if out := runIn(t, env, "", "check", "--data", data); out.code != 0 {
		t.Fatalf("check before any damage: %d %q %q", out.code, out.stdout, out.stderr)
	}
	s, err := storage.Open(storage.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	cached := embed.CacheKey("some-model", "some text")
	err = s.Update(t.Context(), func(tx *storage.Tx) error {
		if err := tx.Set(cached, []byte("not a vector")); err != nil {
			return err
		}
		// Conversation default exists (the script wrote to it); its
		// utterance 99 does not.
		marker := storage.Key(storage.PrefixHistory, "embq", "default", storage.Uint64(99))
		return tx.SetJSON(marker, embed.Marker{Text: "gone",
			Item:   storage.Key(storage.PrefixHistory, "utt", "default", storage.Uint64(99)),
			Vector: storage.Key(storage.PrefixHistory, "vec", "default", storage.Uint64(99))})
	})
	if err := errors.Join(err, s.Close()); err != nil {
		t.Fatal(err)
	}
	out := runIn(t, env, "", "check", "--data", data)
	for _, want := range []string{
		"problem: conversation default: pending embedding",
		"names utterance 99, which does not exist",
		"problem: embeddings: cached vector \"" + string(cached) + "\" is unreadable",
		"2 problem(s)",
	} {
		if !strings.Contains(out.stdout+out.stderr, want) {
			t.Errorf("check does not say %q", want)
		}
	}
	if out.code != exitDamaged {
		t.Errorf("check exited %d, want %d:\n%s%s", out.code, exitDamaged, out.stdout, out.stderr)
	}

	// --repair drops both (they hold nothing to lose), saying so, and the
	// store checks healthy.
	out = runIn(t, env, "", "check", "--repair", "--data", data)
	for _, want := range []string{
		"repaired: dropped the cached vector \"" + string(cached) + "\"",
		"repaired: dropped the pending embedding",
		"is gone",
		"healthy",
	} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("check --repair does not say %q", want)
		}
	}
	if out.code != 0 {
		t.Errorf("check --repair exited %d:\n%s%s", out.code, out.stdout, out.stderr)
	}
	if out := runIn(t, env, "", "check", "--data", data); out.code != 0 || strings.Contains(out.stdout, "repaired") {
		t.Errorf("check after the repair: %d %q %q", out.code, out.stdout, out.stderr)
	}
}
