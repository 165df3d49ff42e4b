package action

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/engram-console/engram/core/errs"
)

// decodeStrict decodes raw into v (a pointer to an args struct). Stricter than
// encoding/json: field names must match exactly (not case-insensitively), an
// unknown field is a ValidationError naming it and the known ones, a value of
// the wrong type names the field and the type expected, and required fields
// must be present and not null.
func decodeStrict(raw json.RawMessage, v any, fields []Field) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return errs.New(errs.Parse, "args are not valid JSON at byte %d: %v", syn.Offset, err)
		}
		return errs.New(errs.Validation, "args must be a JSON object, not %s", jsonKind(raw))
	}
	known := make(map[string]Field, len(fields))
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		known[f.Name] = f
		names = append(names, f.Name)
	}
	for name := range top {
		if _, ok := known[name]; !ok {
			return unknownField(name, names)
		}
	}
	for _, f := range fields {
		if val, ok := top[f.Name]; f.Required && (!ok || bytes.Equal(bytes.TrimSpace(val), []byte("null"))) {
			return errs.New(errs.Validation, "args.%s is required (%s)%s", f.Name, f.Type, helpSuffix(f.Help)).
				With("field", f.Name)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, names)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errs.New(errs.Parse, "args: unexpected data after the JSON object")
	}
	return nil
}

func helpSuffix(help string) string {
	if help == "" {
		return ""
	}
	return ": " + help
}

func unknownField(name string, names []string) error {
	msg := fmt.Sprintf("args: unknown field %q", name)
	if near := Nearest(name, names); near != "" && editDistance(name, near) <= len(name)/2+1 {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	if len(names) == 0 {
		msg += "; this action takes no arguments"
	} else {
		msg += "; the fields are " + strings.Join(names, ", ")
	}
	return errs.New(errs.Validation, "%s", msg).With("field", name)
}

func decodeError(err error, names []string) error {
	var typeErr *json.UnmarshalTypeError
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "(value)"
		}
		return errs.New(errs.Validation, "args.%s: expected %s, got %s", field, typeName(typeErr.Type), typeErr.Value).
			With("field", field)
	case errors.As(err, &syn):
		return errs.New(errs.Parse, "args are not valid JSON at byte %d: %v", syn.Offset, err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// A nested struct's unknown field; encoding/json names only the field.
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errs.New(errs.Validation, "args: unknown field %q in a nested object", name).With("field", name)
	}
	// Errors from a field type's own UnmarshalJSON (e.g. a time) carry their
	// own explanation.
	return errs.New(errs.Validation, "args: %v", err)
}

func jsonKind(raw []byte) string {
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// describeFields lists the JSON fields of an args struct.
func describeFields(t reflect.Type) []Field {
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, Field{
			Name:     name,
			Type:     typeName(sf.Type),
			Required: sf.Tag.Get("arg") == "required",
			Help:     sf.Tag.Get("help"),
		})
	}
	return out
}

var (
	timeType       = reflect.TypeFor[time.Time]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

// typeName says a Go type in JSON's words.
func typeName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "string (RFC 3339 time)"
	case t == rawMessageType:
		return "any JSON value"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array of " + typeName(t.Elem())
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Interface:
		return "any JSON value"
	}
	return t.String()
}
