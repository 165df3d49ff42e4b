package remote

import (
	"context"
	"net/http"
	"testing"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/wire"
)

// A request already sent when another caller closes the connection (a
// move to the next owner under way) may have committed: when the owner
// then dies, it is not one that "did not run".
func TestARequestInFlightWhenClosedMayHaveRun(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	arrived, die := make(chan struct{}), make(chan struct{})
	f.setDo(func(w http.ResponseWriter, r *http.Request, req wire.DoRequest) {
		close(arrived)
		<-die // it commits, then the owner dies before answering
		hj, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_ = hj.Close()
	})
	go func() {
		<-arrived
		_ = c.Close()
		close(die)
	}()
	_, err := c.Do(context.Background(), conn.Request{Action: "cortex.create"})
	wantKind(t, err, errs.Unavailable)
	if DidNotRun(err) {
		t.Fatalf("a request the owner received says it did not run: %v", err)
	}
}
