package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// benchDo posts body over the socket b.N times.
func benchDo(b *testing.B, c *http.Client, body string) {
	b.Helper()
	for b.Loop() {
		resp, err := c.Post("http://engram"+wire.PathDo, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// The round trip of engine.info over the Unix socket (issue 15: p50 ≤ 150 µs).
func BenchmarkEngineInfoOverTheSocket(b *testing.B) {
	e, _ := openEngine(b)
	b.Run("in-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Do(context.Background(), conn.Request{Action: "engine.info"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("socket", func(b *testing.B) {
		_, c := unixServer(b, server.New(e, server.Options{}))
		benchDo(b, c, `{"action": "engine.info"}`)
	})
}

// cortex.get over the socket and in process: the difference is the
// protocol's overhead (issue 15: ≤ 200 µs).
func BenchmarkCortexGet(b *testing.B) {
	e, _ := openEngine(b)
	if _, err := e.Do(context.Background(), conn.Request{Action: "cortex.create",
		Args: json.RawMessage(`{"type": "goal", "id": "g1", "fields": {"title": "Ship"}}`)}); err != nil {
		b.Fatal(err)
	}
	b.Run("in-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Do(context.Background(), conn.Request{Action: "cortex.get", Args: json.RawMessage(`{"id": "g1"}`)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("socket", func(b *testing.B) {
		_, c := unixServer(b, server.New(e, server.Options{}))
		benchDo(b, c, `{"action": "cortex.get", "args": {"id": "g1"}}`)
	})
}
