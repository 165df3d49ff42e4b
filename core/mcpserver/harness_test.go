package mcpserver

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/planner"
)

// testTime is the engine clock of the tests.
var testTime = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// newEngine opens an in-memory engine with every subsystem, the planner too.
func newEngine(t testing.TB) *core.Engine {
	t.Helper()
	opts := core.Options{InMemory: true, Clock: clock.NewFixed(testTime), IDSeed: "mcp"}
	opts.Subsystems = append(core.DefaultSubsystems(opts), planner.Subsystem(planner.Options{}))
	e, err := core.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// connect serves s over in-memory transports and returns a connected
// client session named "test-agent" 1.0.
func connect(t testing.TB, s *Server) *mcp.ClientSession {
	t.Helper()
	return connectWith(t, s, nil)
}

// connectWith is connect with client options and receiving middleware.
func connectWith(t testing.TB, s *Server, opts *mcp.ClientOptions, mw ...mcp.Middleware) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0"}, opts)
	client.AddReceivingMiddleware(mw...)
	cs, err := client.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls a tool and decodes its structured content into out (when
// not nil). It fails the test on a protocol error; a tool error is
// returned in the result for the test to check.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	if out != nil && !res.IsError {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: structured content %s does not decode as %T: %v", name, raw, out, err)
		}
	}
	return res
}

// toolErr decodes a failed call's ToolError, failing the test if the call
// did not fail.
func toolErr(t *testing.T, res *mcp.CallToolResult) ToolError {
	t.Helper()
	if !res.IsError {
		t.Fatalf("the call succeeded; want a tool error (content %v)", res.StructuredContent)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var te ToolError
	if err := json.Unmarshal(raw, &te); err != nil {
		t.Fatalf("tool error content %s: %v", raw, err)
	}
	return te
}

// waitLimit bounds how long a test waits for something that should come
// at once: reaching it is a failure, never the test's pace.
const waitLimit = 10 * time.Second
