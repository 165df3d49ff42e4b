package core

import (
	"context"
	"errors"
	"testing"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// A keyed request of a joinable action (one commit: cortex.create and
// the like, which clients resend after a failover) commits its write and
// its answer together, so that an owner killed in between cannot leave
// the retry a ConflictError ("its result was lost").
func TestAKeyedJoinableWriteCommitsWithItsAnswer(t *testing.T) {
	written := storage.Key(storage.PrefixMeta, "joined-test")
	record := storage.Key(storage.PrefixIdempotency, "alice", "k1")
	var seen []string
	probe := func(env *kit.Env) error {
		ref := action.NewRef[action.None, action.None]("test.write")
		ref.Register(env.Actions, action.Spec{Summary: "writes a key", Joinable: true}, func(ctx context.Context, _ action.Call, _ action.None) (action.None, error) {
			if err := env.Update(ctx, func(tx *kit.Txn) error { return tx.Set(written, []byte("x")) }); err != nil {
				return action.None{}, err
			}
			// What another reader sees once the action's work is done.
			err := env.Store.View(func(tx *storage.Tx) error {
				for _, k := range [][]byte{written, record} {
					if _, err := tx.Get(k); err == nil {
						seen = append(seen, string(k))
					} else if !errors.Is(err, storage.ErrNotFound) {
						return err
					}
				}
				return nil
			})
			return action.None{}, err
		})
		return nil
	}
	opts := Options{InMemory: true, Clock: clock.NewFixed(t0), IDSeed: "test"}
	opts.Subsystems = append(DefaultSubsystems(opts), probe)
	e, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	if _, err := e.Do(context.Background(), conn.Request{Action: "test.write", Principal: "alice", IdempotencyKey: "k1"}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 0 {
		t.Errorf("before the answer was recorded, %v had committed; want nothing until the write and its answer commit together", seen)
	}
}
