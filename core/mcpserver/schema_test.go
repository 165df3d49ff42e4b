package mcpserver

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listTools returns every tool the server offers.
func listTools(t *testing.T, cs *mcp.ClientSession) []*mcp.Tool {
	t.Helper()
	var tools []*mcp.Tool
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool)
	}
	return tools
}

// undescribed returns the paths of the properties of schema (a JSON
// schema, as JSON) that have no description, at any depth.
func undescribed(schema any, path string) []string {
	var out []string
	m, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	if props, ok := m["properties"].(map[string]any); ok {
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			p, _ := props[name].(map[string]any)
			if d, _ := p["description"].(string); d == "" {
				out = append(out, path+"."+name)
			}
			out = append(out, undescribed(p, path+"."+name)...)
		}
	}
	if items, ok := m["items"]; ok {
		out = append(out, undescribed(items, path+"[]")...)
	}
	for _, key := range []string{"$defs", "definitions"} {
		if defs, ok := m[key].(map[string]any); ok {
			for name, d := range defs {
				out = append(out, undescribed(d, path+"#"+name)...)
			}
		}
	}
	return out
}

// asJSON turns a schema of any Go type into plain JSON values.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEveryToolFieldHasADescription(t *testing.T) {
	cs := connect(t, New(newEngine(t), Options{}))
	for _, tool := range listTools(t, cs) {
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", tool.Name)
		}
		for _, where := range []struct {
			name   string
			schema any
		}{{"input", tool.InputSchema}, {"output", tool.OutputSchema}} {
			for _, path := range undescribed(asJSON(t, where.schema), "") {
				t.Errorf("%s: %s field %s has no description", tool.Name, where.name, path)
			}
		}
	}
}

func TestAReadOnlyServerOffersOnlyReadOnlyTools(t *testing.T) {
	e := newEngine(t)
	all := listTools(t, connect(t, New(e, Options{})))
	readOnly := listTools(t, connect(t, New(e, Options{ReadOnly: true})))
	want := []string{}
	for _, tool := range all {
		if tool.Annotations != nil && tool.Annotations.ReadOnlyHint {
			want = append(want, tool.Name)
		}
	}
	got := []string{}
	for _, tool := range readOnly {
		got = append(got, tool.Name)
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("the read-only server offers %s, which is not read-only", tool.Name)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("read-only server's tools = %v; want the read-only ones of %d: %v", got, len(all), want)
	}
}
