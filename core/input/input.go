// Package input is the one way engram reads a file a person names (a plan
// file, a cassette, a batch script) and the one place the limits on what it
// accepts are declared. A file input is a regular file (never a device, a
// FIFO or a directory), no larger than its cap; YAML in it may not use
// aliases (a few hundred bytes of nested aliases expand to gigabytes); and
// no error quotes the file's contents, only its name, a line and a column,
// so that naming a secret file never prints the secret.
//
// It imports nothing of engram, so that libraries (llm) can use it too.
// docs/batch.md ("Limits") lists every limit.
package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Limits. They are generous for their use and small enough that a hostile
// input cannot take the machine's memory. YAML is parsed whole into a
// syntax tree that takes up to about 200 times the file's size (1.5 GB for
// 8 MiB of short list items), so YAML inputs are kept small; JSON Lines
// scripts stream instead.
const (
	// MaxDocument is the largest plan file, in bytes (1 MiB, as the args of
	// the plan.create it stands for).
	MaxDocument = 1 << 20
	// MaxCassette is the largest cassette, in bytes (4 MiB: recorded
	// embeddings take room).
	MaxCassette = 4 << 20
	// MaxScript is the largest YAML batch script, in bytes (4 MiB); a JSONL
	// script is read a line at a time and has no total limit.
	MaxScript = 4 << 20
	// MaxLine is the longest line of a JSONL batch script, in bytes (2 MiB:
	// a step's args are at most MaxArgs, plus the step around them).
	MaxLine = 2 << 20
	// MaxArgs is the largest JSON arguments of one action, in bytes (1 MiB).
	MaxArgs = 1 << 20
	// MaxDepth is the deepest nesting of objects and arrays accepted in any
	// JSON value (args, a plan's state, metadata): 64 levels.
	MaxDepth = 64
)

// Error is a file that cannot be used as input. Its message names the file
// and why, never what is in it.
type Error struct {
	Path   string
	Reason string
	// Line and Column locate a syntax problem (0 when there is none).
	Line, Column int
	err          error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d, column %d: %s", e.Path, e.Line, e.Column, e.Reason)
	}
	return e.Path + ": " + e.Reason
}

// Unwrap gives the underlying cause (an *fs.PathError), when there is one.
func (e *Error) Unwrap() error { return e.err }

// Open opens path for reading if it is a regular file (or a symbolic link
// to one). A FIFO is refused before it is opened, so that opening it never
// blocks; the opened file is checked again, in case the path changed.
func Open(path string) (*os.File, error) {
	if path == "" {
		return nil, &Error{Path: `""`, Reason: "no file named"}
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, &Error{Path: path, Reason: osReason(err), err: err}
	}
	if err := regular(path, info); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Path: path, Reason: osReason(err), err: err}
	}
	if info, err = f.Stat(); err == nil {
		err = regular(path, info)
	}
	if err != nil {
		_ = f.Close() // opened read-only: nothing to lose
		return nil, err
	}
	return f, nil
}

// ReadFile reads the regular file path whole, refusing one larger than limit
// bytes (checked before reading, and again while reading, since a file can
// grow).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	if info, err := f.Stat(); err == nil && info.Size() > limit {
		return nil, tooBig(path, info.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &Error{Path: path, Reason: osReason(err), err: err}
	}
	if int64(len(data)) > limit {
		return nil, tooBig(path, int64(len(data)), limit)
	}
	return data, nil
}

func tooBig(path string, size, limit int64) error {
	return &Error{Path: path, Reason: fmt.Sprintf("is %s; the limit is %s", Size(size), Size(limit))}
}

// regular refuses anything but a regular file, saying what it is instead.
func regular(path string, info fs.FileInfo) error {
	m := info.Mode()
	what := ""
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a device"
	default:
		what = "not a regular file"
	}
	return &Error{Path: path, Reason: "is " + what + "; give a regular file"}
}

// osReason says why a file could not be opened or read, without repeating
// the path (the Error says it once).
func osReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return err.Error()
}

// Size is n bytes for people: "8 MiB", "1.5 KiB", "600 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64), ".0") + " MiB"
	case n >= 1<<10:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64), ".0") + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// CheckYAML parses data (from the file path) and refuses what engram never
// reads: syntax errors (reported by line and column, not by quoting the
// text), aliases, and more than one document. It returns the parsed file.
func CheckYAML(path string, data []byte) (*ast.File, error) {
	// The parser takes for ever on flow collections nested very deep
	// ([[[[…), before any check of the parsed tree could run.
	if err := CheckFlowDepth(path, data); err != nil {
		return nil, err
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, YAMLError(path, err)
	}
	if aliases := ast.FilterFile(ast.AliasType, file); len(aliases) > 0 {
		return nil, at(path, aliases[0].GetToken(), "YAML aliases (*name) are not allowed (they can expand a small file into gigabytes); write the value out")
	}
	if len(file.Docs) > 1 {
		return nil, &Error{Path: path, Reason: "holds more than one YAML document; give one"}
	}
	return file, nil
}

// YAMLToJSON converts a YAML document (checked by CheckYAML) into JSON of at
// most MaxDepth levels of nesting.
func YAMLToJSON(path string, data []byte) ([]byte, error) {
	file, err := CheckYAML(path, data)
	if err != nil {
		return nil, err
	}
	var v any
	if len(file.Docs) == 1 && file.Docs[0].Body != nil {
		if err := yaml.NodeToValue(file.Docs[0].Body, &v); err != nil {
			return nil, YAMLError(path, err)
		}
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{Path: path, Reason: "holds a value with no JSON form (NaN or infinity?)"}
	}
	if where, err := CheckDepth(js, MaxDepth); err != nil {
		return nil, &Error{Path: path, Reason: fmt.Sprintf("%s is nested more than %d levels deep", where, MaxDepth), err: err}
	}
	return js, nil
}

// YAMLError turns a YAML library error into an Error that gives the line,
// the column and the library's message (Redacted: an unknown key is named
// only if it looks like a field name), never the source text around it.
func YAMLError(path string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		return at(path, ye.GetToken(), Redact(ye.GetMessage()))
	}
	return &Error{Path: path, Reason: "is not valid YAML"}
}

func at(path string, tk *token.Token, reason string) error {
	e := &Error{Path: path, Reason: reason}
	if tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
	}
	return e
}

// quoted is a double-quoted string in a message, escapes and all.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// plainName is what a quoted name in a message may look like and still be
// repeated: a field name or a typo of one, never a line of a secret file.
var plainName = regexp.MustCompile(`^"[A-Za-z_][A-Za-z0-9_.\-]{0,31}"$`)

// Redact replaces every double-quoted string in msg that does not look like
// a field name with "…": for messages about a file's contents (an unknown
// key, a value of the wrong kind) that would otherwise repeat them.
func Redact(msg string) string {
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		if plainName.MatchString(q) {
			return q
		}
		return `"…"`
	})
}

// ErrTooDeep is what CheckDepth returns (wrapped) for a value nested too deep.
var ErrTooDeep = errors.New("nested too deep")

// CheckDepth reports whether the JSON value raw nests objects and arrays
// more than limit levels deep. When it does, it returns the path of the
// first value too deep ("state.a.b[0]": dotted keys, [i] for array
// elements, "" for the value itself) and an error wrapping ErrTooDeep.
// Malformed JSON is left to the decoder, which reports it better.
func CheckDepth(raw []byte, limit int) (string, error) {
	depth, inString, escaped := 0, false, false
	for i, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > limit {
				return depthPath(raw[:i+1], limit), fmt.Errorf("%w: more than %d levels", ErrTooDeep, limit)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return "", nil
}

// depthPath walks the tokens of prefix (a JSON value cut just after the
// container that went too deep) and returns the path to that container.
func depthPath(prefix []byte, limit int) string {
	type level struct {
		array bool
		index int
		key   string
		want  bool // an object expecting a key next
	}
	var stack []level
	dec := json.NewDecoder(bytes.NewReader(prefix))
	dec.UseNumber()
	path := func() string {
		var b bytes.Buffer
		// The outermost level is the value itself; each level inside it
		// adds the key or index by which its parent holds it.
		for _, l := range stack[:len(stack)-1] {
			if l.array {
				fmt.Fprintf(&b, "[%d]", l.index-1)
			} else {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(l.key)
			}
		}
		return b.String()
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			if len(stack) > 0 {
				return path()
			}
			return ""
		}
		// A value (scalar or the start of a container) in the current level.
		isValue := true
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			if !top.array && top.want {
				if k, ok := tok.(string); ok {
					top.key, top.want = k, false
					continue
				}
			}
		}
		switch tok {
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			isValue = false
		}
		if isValue && len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.array {
				top.index++
			} else {
				top.want = true
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, level{want: true})
		case json.Delim('['):
			stack = append(stack, level{array: true})
		}
		if len(stack) > limit {
			return path()
		}
	}
}

// scalarStart reports whether a quote at data[i] opens a quoted scalar:
// YAML starts one only where a value starts (after a line's indentation,
// ": ", "- ", "[", "{" or ","), so the apostrophe of "don't" opens nothing.
func scalarStart(data []byte, i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch data[j] {
		case ' ', '\t':
			continue
		case '\n', '[', '{', ',', ':', '-', '?':
			return true
		default:
			return false
		}
	}
	return true
}

// CheckFlowDepth refuses YAML whose flow collections ([ and {) nest more
// than MaxDepth levels, before a parser sees it (the parser takes for ever
// on them). path names the file in the error.
func CheckFlowDepth(path string, data []byte) error {
	if line := flowTooDeep(data, MaxDepth); line > 0 {
		return &Error{Path: path, Reason: fmt.Sprintf("line %d: [ and { are nested more than %d levels deep", line, MaxDepth)}
	}
	return nil
}

// flowTooDeep returns the line on which YAML flow collections ([ and {)
// nest deeper than limit, or 0. It skips comments and quoted text, which
// it takes to end at the line's end: a quote inside a plain word ("don't")
// then hides nothing on the lines after it.
func flowTooDeep(data []byte, limit int) int {
	depth, line := 0, 1
	var quote byte
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n':
			line, quote = line+1, 0
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case (c == '"' || c == '\'') && scalarStart(data, i):
			quote = c
		case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t'):
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i-- // the newline is counted above
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return line
			}
		case c == ']' || c == '}':
			depth = max(depth-1, 0)
		}
	}
	return 0
}
