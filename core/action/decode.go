package action

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/core/errs"
)

// DecodeStrict decodes raw into v (a pointer to an args struct). Stricter than
// encoding/json, at every depth: field names must match exactly (not
// case-insensitively), an unknown field is a ValidationError naming it and
// the known ones, a value of the wrong type names the field and the type
// expected, and required fields must be present and not null.
// DecodeStrict decodes a JSON object into v (a pointer to a struct) the way
// action args are decoded: exact field names at every depth, unknown fields
// and wrong types as ValidationErrors naming the field, required fields
// (tag arg:"required") present and not null. Subsystems use it for payloads
// that arrive inside other args (turn.end's updates).
func DecodeStrict(raw json.RawMessage, v any) error {
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
		return errs.New(errs.Validation, "args must be a JSON object, not %s", JSONKind(raw))
	}
	t := reflect.TypeOf(v).Elem()
	if err := checkShape(raw, t, ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errs.New(errs.Parse, "args: unexpected data after the JSON object")
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkShape walks the (syntactically valid) JSON value raw against the Go
// type t, enforcing what encoding/json does not: exact field names and
// required fields in nested objects too, unknown fields reported in document
// order (so the same input always gives the same error), and values a type's
// own UnmarshalJSON rejects (a time) reported with the field's path. Values of
// the wrong JSON kind are left to the decoder, which names field and type.
// path is the dotted path below "args" ("" at the top).
func checkShape(raw json.RawMessage, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if len(raw) == 0 || raw[0] == 'n' || t == rawMessageType {
		return nil // null fits every type; required fields are checked by their parent
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
			want := typeName(t)
			if got := jsonType(raw); strings.HasPrefix(want, "string") && got != "string" {
				return errs.New(errs.Validation, "%s: expected %s, got %s", argPath(path), want, got).
					With("field", fieldPath(path))
			}
			if t == timeType {
				return errs.New(errs.Validation, "%s: %s is not an RFC 3339 time; write it like \"2025-11-05T10:00:00Z\"", argPath(path), raw).
					With("field", fieldPath(path))
			}
			return errs.New(errs.Validation, "%s: invalid %s: %v", argPath(path), want, err).With("field", fieldPath(path))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		keys, vals, ok := objectMembers(raw)
		if !ok {
			return nil
		}
		fields := structFields(t)
		names := make([]string, len(fields))
		byName := make(map[string]int, len(fields))
		for i, f := range fields {
			names[i] = f.Name
			byName[f.Name] = i
		}
		for _, k := range keys {
			if _, known := byName[k]; !known {
				return unknownField(path, k, names)
			}
		}
		for _, f := range fields {
			if !f.Required {
				continue
			}
			i := slicesIndex(keys, f.Name)
			if i < 0 || bytes.Equal(vals[i], []byte("null")) {
				p := joinPath(path, f.Name)
				return errs.New(errs.Validation, "%s is required (%s)%s", argPath(p), f.Type, helpSuffix(f.Help)).
					With("field", p)
			}
		}
		for i, k := range keys {
			if err := checkShape(vals[i], fields[byName[k]].typ, joinPath(path, k)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil
		}
		keys, vals, ok := objectMembers(raw)
		if !ok {
			return nil
		}
		for i, k := range keys {
			if err := checkShape(vals[i], t.Elem(), joinPath(path, k)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is a base64 string
		}
		elems, ok := arrayElements(raw)
		if !ok {
			return nil
		}
		for i, el := range elems {
			if err := checkShape(el, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

func slicesIndex(keys []string, name string) int {
	// The last occurrence wins, as in encoding/json.
	for i := len(keys) - 1; i >= 0; i-- {
		if keys[i] == name {
			return i
		}
	}
	return -1
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// argPath is how messages name a field: "args.limit", or "args" for the whole.
func argPath(path string) string {
	if path == "" {
		return "args"
	}
	return "args." + path
}

// fieldPath is the "field" detail: the path, or "args" for the whole.
func fieldPath(path string) string {
	if path == "" {
		return "args"
	}
	return path
}

// objectMembers returns the keys and values of a JSON object in document
// order; ok is false when raw is not an object.
func objectMembers(raw json.RawMessage) (keys []string, vals []json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		key, isString := tok.(string)
		if !isString {
			return nil, nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		keys = append(keys, key)
		vals = append(vals, v)
	}
	return keys, vals, true
}

// arrayElements returns the elements of a JSON array; ok is false when raw is
// not an array.
func arrayElements(raw json.RawMessage) (elems []json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, false
	}
	for dec.More() {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		elems = append(elems, v)
	}
	return elems, true
}

func helpSuffix(help string) string {
	if help == "" {
		return ""
	}
	return ": " + help
}

// unknownField reports a field of the object at path that its struct lacks,
// suggesting the nearest known name (a case-insensitive match first).
func unknownField(path, name string, names []string) error {
	where := "args"
	if path != "" {
		where = "args." + path
	}
	msg := fmt.Sprintf("%s: unknown field %q", where, name)
	near := ""
	for _, n := range names {
		if strings.EqualFold(n, name) {
			near = n
			break
		}
	}
	if near == "" {
		if n := Nearest(name, names); n != "" && editDistance(name, n) <= len(name)/2+1 {
			near = n
		}
	}
	if near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	switch {
	case len(names) == 0 && path == "":
		msg += "; this action takes no arguments"
	case len(names) == 0:
		msg += "; this object has no fields"
	default:
		msg += "; the fields are " + strings.Join(names, ", ")
	}
	return errs.New(errs.Validation, "%s", msg).With("field", joinPath(path, name))
}

func decodeError(err error) error {
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
		// checkShape reports unknown fields first; this is a fallback.
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errs.New(errs.Validation, "args: unknown field %q in a nested object", name).With("field", name)
	}
	// Errors from a field type's own UnmarshalJSON carry their own explanation.
	return errs.New(errs.Validation, "args: %v", err)
}

// JSONKind names the kind of a JSON value in words ("an object", "a
// string", ...), for messages about values of the wrong kind.
func JSONKind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// jsonType names the JSON type of raw as encoding/json's errors do.
func jsonType(raw []byte) string {
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// structField is one JSON field of an args struct.
type structField struct {
	Field
	typ reflect.Type
}

var fieldCache sync.Map // reflect.Type → []structField

// structFields lists the JSON fields of a struct type as encoding/json sees
// them: json tags name them, "-" and unexported fields are skipped, and the
// fields of an untagged embedded struct are promoted (a shallower field of
// the same name wins).
func structFields(t reflect.Type) []structField {
	if cached, ok := fieldCache.Load(t); ok {
		return cached.([]structField)
	}
	type candidate struct {
		structField
		depth int
	}
	var all []candidate
	var walk func(t reflect.Type, depth int, seen map[reflect.Type]bool)
	walk = func(t reflect.Type, depth int, seen map[reflect.Type]bool) {
		if seen[t] {
			return
		}
		seen[t] = true
		defer delete(seen, t)
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					if !sf.IsExported() {
						continue // encoding/json cannot allocate it
					}
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, depth+1, seen)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			all = append(all, candidate{structField{Field{
				Name:     name,
				Type:     typeName(sf.Type),
				Required: sf.Tag.Get("arg") == "required",
				Help:     sf.Tag.Get("help"),
			}, sf.Type}, depth})
		}
	}
	walk(t, 0, map[reflect.Type]bool{})
	best := map[string]int{}
	for _, c := range all {
		if d, ok := best[c.Name]; !ok || c.depth < d {
			best[c.Name] = c.depth
		}
	}
	out := []structField{}
	for _, c := range all {
		if d, ok := best[c.Name]; ok && d == c.depth {
			out = append(out, c.structField)
			delete(best, c.Name)
		}
	}
	fieldCache.Store(t, out)
	return out
}

// describeFields lists the JSON fields of an args struct.
func describeFields(t reflect.Type) []Field {
	sfs := structFields(t)
	if len(sfs) == 0 {
		return nil
	}
	out := make([]Field, len(sfs))
	for i, f := range sfs {
		out[i] = f.Field
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
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return "string (base64)" // how encoding/json reads []byte
		}
		return "array of " + typeName(t.Elem())
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Interface:
		return "any JSON value"
	}
	return t.String()
}
