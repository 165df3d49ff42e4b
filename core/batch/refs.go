package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/engram-console/engram/core/errs"
)

// refPattern is a whole-string reference: ${STEP_ID.path.to.field}.
var refPattern = regexp.MustCompile(`^\$\{([^.{}]+)((?:\.[^.{}]+)*)\}$`)

// stepOutcome is what later steps may refer to.
type stepOutcome struct {
	line   int
	ok     bool
	result json.RawMessage
}

// resolveRefs replaces every string in args of the exact form
// ${STEP_ID.path} by that field of step STEP_ID's result (the JSON value, not
// its text). Args without references come back untouched.
func resolveRefs(args json.RawMessage, done map[string]stepOutcome) (json.RawMessage, error) {
	if !bytes.Contains(args, []byte("${")) {
		return args, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errs.New(errs.Parse, "args: %v", err)
	}
	v, err := substitute(v, "args", done)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func substitute(v any, where string, done map[string]stepOutcome) (any, error) {
	switch t := v.(type) {
	case string:
		m := refPattern.FindStringSubmatch(t)
		if m == nil {
			return t, nil
		}
		val, err := lookup(m[1], strings.TrimPrefix(m[2], "."), done)
		if err != nil {
			return nil, errs.New(errs.Validation, "%s: reference %s: %v", where, t, err).With("field", strings.TrimPrefix(where, "args."))
		}
		return val, nil
	case map[string]any:
		// In key order, so that the first bad reference reported is
		// always the same one.
		for _, k := range slices.Sorted(maps.Keys(t)) {
			x := t[k]
			nv, err := substitute(x, where+"."+k, done)
			if err != nil {
				return nil, err
			}
			t[k] = nv
		}
	case []any:
		for i, x := range t {
			nv, err := substitute(x, where+"["+strconv.Itoa(i)+"]", done)
			if err != nil {
				return nil, err
			}
			t[i] = nv
		}
	}
	return v, nil
}

func lookup(stepID, path string, done map[string]stepOutcome) (any, error) {
	out, ok := done[stepID]
	if !ok {
		return nil, fmt.Errorf("no earlier step has the id %q", stepID)
	}
	if !out.ok {
		return nil, fmt.Errorf("step %q (line %d) failed, so it has no result", stepID, out.line)
	}
	dec := json.NewDecoder(bytes.NewReader(out.result))
	dec.UseNumber()
	var cur any
	if err := dec.Decode(&cur); err != nil {
		return nil, err
	}
	if path == "" {
		return cur, nil
	}
	walked := stepID
	for _, part := range strings.Split(path, ".") {
		switch node := cur.(type) {
		case map[string]any:
			next, ok := node[part]
			if !ok {
				keys := make([]string, 0, len(node))
				for k := range node {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				return nil, fmt.Errorf("%s has no field %q (it has: %s)", walked, part, strings.Join(keys, ", "))
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(node) {
				return nil, fmt.Errorf("%s is a list of %d; %q is not an index into it", walked, len(node), part)
			}
			cur = node[i]
		default:
			return nil, fmt.Errorf("%s is not an object or a list, so it has no %q", walked, part)
		}
		walked += "." + part
	}
	return cur, nil
}
