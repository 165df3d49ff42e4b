package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/remote"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// countingEngine is an engine that counts the engine.info reports made
// with the counts, which read every key of the store.
type countingEngine struct {
	*core.Engine
	counted atomic.Int32
}

func (e *countingEngine) Info(ctx context.Context) (conn.Info, error) {
	e.counted.Add(1)
	return e.Engine.Info(ctx)
}

func (e *countingEngine) InfoWith(ctx context.Context, args conn.InfoArgs) (conn.Info, error) {
	if args.Counts == nil || *args.Counts {
		e.counted.Add(1)
	}
	return e.Engine.InfoWith(ctx, args)
}

// Attaching to an owner does not have it count its store: the client
// needs the owner's pid, clock and actions, and the counts read every
// item, mutation and trace entry (seconds, and most of the store paged
// into the owner's memory, at a million items). Info, which reports
// them, still counts.
func TestAttachingDoesNotMakeTheOwnerCount(t *testing.T) {
	e, _ := openEngine(t)
	owner := &countingEngine{Engine: e}
	sock, _ := unixServer(t, server.New(owner, server.Options{}))
	c, err := remote.Dial(context.Background(), remote.Options{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if n := owner.counted.Load(); n != 0 {
		t.Fatalf("attaching made the owner count its store %d times", n)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Counts == nil || owner.counted.Load() != 1 {
		t.Fatalf("Info: counts %v after %d counts, want them, counted once", info.Counts, owner.counted.Load())
	}
}

// /v1/info?actions=false leaves the action list out (a client that
// attached knows it: it is most of the answer) and nothing else.
func TestInfoWithoutActionsLeavesOnlyTheListOut(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{})
	var full, lean wire.InfoResponse
	for _, x := range []struct {
		query string
		into  *wire.InfoResponse
	}{{"", &full}, {"?actions=false", &lean}} {
		a := send(t, ts.Client(), http.MethodGet, ts.URL+wire.PathInfo+x.query, "")
		if a.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", x.query, a.Status, a.Body)
		}
		if err := json.Unmarshal(a.Body, x.into); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(a.Body), `"action_list"`) != (x.query == "") {
			t.Errorf("info%s: action_list present %v", x.query, !(x.query == ""))
		}
	}
	if len(full.ActionList) == 0 || full.Actions != len(full.ActionList) {
		t.Fatalf("the full info lists %d of %d actions", len(full.ActionList), full.Actions)
	}
	full.ActionList, full.Counts, lean.Counts = nil, nil, nil
	if fmt.Sprint(full) != fmt.Sprint(lean) {
		t.Errorf("without actions %+v, with them %+v", lean, full)
	}
}

// The counts are the operator's alone over the socket too: a client that
// names another agent is not told them, whatever the owner's --agent.
func TestSocketInfoCountsAreTheOperatorsAlone(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{})
	for query, want := range map[string]bool{"": true, "?agent=local": true, "?agent=bob": false} {
		a := send(t, ts.Client(), http.MethodGet, ts.URL+wire.PathInfo+query, "")
		if got := strings.Contains(string(a.Body), `"counts"`); got != want {
			t.Errorf("info%s: counts %v, want %v", query, got, want)
		}
	}
}
