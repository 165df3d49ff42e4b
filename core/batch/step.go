// Package batch is engram's headless face: it reads a script of steps (JSON
// Lines or YAML, see docs/batch.md), runs each through the engine in order, and
// writes one JSON result line per step as soon as it finishes.
package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
)

// Step is one action of a script.
type Step struct {
	ID          string          `json:"id,omitempty"`
	Action      string          `json:"action"`
	Args        json.RawMessage `json:"args,omitempty"`
	As          string          `json:"as,omitempty"`
	Turn        string          `json:"turn,omitempty"`
	At          *time.Time      `json:"at,omitempty"`
	ExpectError errs.Kind       `json:"expect_error,omitempty"`
	// IdempotencyKey makes the step safe to run again (conn.Request).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Client is the agent client (an MCP session) the step is made for
	// (conn.Request.Client): for scripts that replay an agent's calls.
	Client *conn.ClientCall `json:"client,omitempty"`
}

var stepFields = []string{"id", "action", "args", "as", "turn", "at", "expect_error", "idempotency_key", "client"}

// DecodeStep decodes one step from a JSON object, strictly: unknown fields,
// fields of the wrong type, a missing action, an `at` that is not RFC 3339
// and an unknown expect_error kind are errors that name the field. When the
// object could be read at all, the returned step carries whatever fields were
// valid (id, action, expect_error) even alongside an error, so that the
// result line can echo them.
func DecodeStep(data []byte) (Step, error) {
	var st Step
	data = bytes.TrimSpace(data)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		if len(data) > 0 && data[0] != '{' && json.Valid(data) {
			return st, errs.New(errs.Parse, "a step must be a JSON object like {\"action\": \"engine.info\"}")
		}
		return st, errs.New(errs.Parse, "not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if fields == nil {
		return st, errs.New(errs.Parse, "a step must be a JSON object like {\"action\": \"engine.info\"}")
	}
	// Read the echo fields first, so that even an invalid step reports them.
	var firstErr error
	str := func(name string, dst *string) {
		raw, ok := fields[name]
		if !ok || bytes.Equal(raw, []byte("null")) {
			return
		}
		if err := json.Unmarshal(raw, dst); err != nil && firstErr == nil {
			firstErr = errs.New(errs.Validation, "step field %q must be a string, not %s", name, action.JSONKind(raw)).With("field", name)
		}
	}
	str("id", &st.ID)
	str("action", &st.Action)
	var expect, at string
	str("expect_error", &expect)
	str("as", &st.As)
	str("turn", &st.Turn)
	str("idempotency_key", &st.IdempotencyKey)
	str("at", &at)
	if expect != "" {
		kind, ok := errs.ParseKind(expect)
		if !ok {
			kinds := make([]string, 0, len(errs.Kinds()))
			for _, k := range errs.Kinds() {
				kinds = append(kinds, string(k))
			}
			return st, errs.New(errs.Validation, "expect_error: unknown error kind %q; the kinds are %s", expect, strings.Join(kinds, ", ")).
				With("field", "expect_error")
		}
		st.ExpectError = kind
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(stepFields, name) {
			msg := fmt.Sprintf("unknown step field %q", name)
			if near := action.Nearest(name, stepFields); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			return st, errs.New(errs.Validation, "%s; a step has %s", msg, strings.Join(stepFields, ", ")).With("field", name)
		}
	}
	if firstErr != nil {
		return st, firstErr
	}
	if st.Action == "" {
		return st, errs.New(errs.Validation, "step field \"action\" is required, e.g. {\"action\": \"engine.info\"}").With("field", "action")
	}
	if at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return st, errs.New(errs.Validation, "at: %q is not an RFC 3339 time; write it like \"2025-11-05T10:00:00.010Z\"", at).With("field", "at")
		}
		st.At = &t
	}
	if raw, ok := fields["client"]; ok && !bytes.Equal(raw, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var c conn.ClientCall
		if raw[0] != '{' {
			return st, errs.New(errs.Validation, "client must be a JSON object like {\"session\": \"s1\", \"via\": \"mcp\", \"tool\": \"recall\", \"call\": \"1\"}, not %s", action.JSONKind(raw)).With("field", "client")
		}
		if err := dec.Decode(&c); err != nil {
			return st, errs.New(errs.Validation, "client: %s; it has session, via, name, version, transport, pid, tool and call", strings.TrimPrefix(err.Error(), "json: ")).With("field", "client")
		}
		st.Client = &c
	}
	if raw, ok := fields["args"]; ok && !bytes.Equal(raw, []byte("null")) {
		if raw[0] != '{' {
			return st, errs.New(errs.Validation, "args must be a JSON object, not %s", action.JSONKind(raw)).With("field", "args")
		}
		st.Args = raw
	}
	return st, nil
}
