package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/input"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// runYAML runs a YAML script: a mapping whose `steps` is a list of step
// objects (with optional `name` and `description`). A step that cannot be
// read is reported, with its line, like a malformed JSON line, and the run
// goes on. A file that is not such a script (not YAML, or not a `steps:`
// list) runs nothing: it is one ParseError result, and ErrUnreadable
// (exit status 2; issue 14, bug 10: it used to pass for a failed step).
func (r *Runner) runYAML(ctx context.Context, in io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(in, input.MaxScript+1))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	if len(data) > input.MaxScript {
		return fmt.Errorf("%w: a YAML script may be at most %s; split it, or write it as JSON Lines (read a line at a time)", ErrUnreadable, input.Size(input.MaxScript))
	}
	steps, err := yamlSteps(data)
	if err != nil {
		e, line := errs.As(err), yamlLine(err)
		r.runStep(ctx, line, Step{}, e)
		return fmt.Errorf("%w: line %d: %s", ErrUnreadable, line, e.Message)
	}
	for _, node := range steps {
		if ctx.Err() != nil {
			return r.stopped(ctx)
		}
		line := node.GetToken().Position.Line
		var v any
		var st Step
		err := yaml.NodeToValue(node, &v)
		if err == nil {
			var js []byte
			if js, err = json.Marshal(v); err == nil {
				st, err = DecodeStep(js)
			} else {
				err = errs.New(errs.Parse, "a value of this step has no JSON form (NaN or infinity?)")
			}
		} else {
			err = errs.New(errs.Parse, "%s", yamlMessage(err))
		}
		if !r.runStep(ctx, line, st, err) {
			return r.stopped(ctx)
		}
	}
	return nil
}

// yamlSteps parses a script and returns its step nodes.
func yamlSteps(data []byte) ([]ast.Node, error) {
	if err := input.CheckFlowDepth("the script", data); err != nil {
		return nil, errs.New(errs.Parse, "not valid YAML: %s", err.Error())
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, errs.New(errs.Parse, "not valid YAML: %s%w", yamlMessage(err), lineCarrier{err})
	}
	if len(file.Docs) == 0 || (len(file.Docs) == 1 && file.Docs[0].Body == nil) {
		return nil, nil // an empty script, as an empty JSONL file: nothing to run
	}
	if len(file.Docs) != 1 {
		return nil, errs.New(errs.Parse, "a YAML script is one document: a mapping with a `steps:` list")
	}
	// Aliases can expand a few lines into billions of nodes; a script
	// has no need of them.
	if aliases := ast.FilterFile(ast.AliasType, file); len(aliases) > 0 {
		return nil, errs.New(errs.Parse, "YAML aliases (*name) are not allowed in scripts; write the step out%w", lineCarrier{tokenErr{aliases[0]}})
	}
	body, ok := file.Docs[0].Body.(*ast.MappingNode)
	if !ok {
		return nil, errs.New(errs.Parse, "%s", notAScript(file.Docs[0].Body))
	}
	var steps *ast.SequenceNode
	for _, mv := range body.Values {
		switch key := mv.Key.GetToken().Value; key {
		case "steps":
			seq, ok := mv.Value.(*ast.SequenceNode)
			if !ok {
				return nil, errs.New(errs.Parse, "`steps:` must be a list of steps%w", lineCarrier{tokenErr{mv.Value}})
			}
			steps = seq
		case "name", "description":
		default:
			return nil, errs.New(errs.Parse, "unknown top-level key %s; a YAML script has steps (and optionally name, description)%w", input.Redact(strconv.Quote(key)), lineCarrier{tokenErr{mv.Key}})
		}
	}
	if steps == nil {
		return nil, errs.New(errs.Parse, "a YAML script needs a `steps:` list")
	}
	return steps.Values, nil
}

// notAScript says why a YAML document that is no mapping is no script, in
// the script's words: "not a Sequence" was the YAML library's.
func notAScript(body ast.Node) string {
	const want = "the script must be a list of steps under `steps:`"
	switch body.Type() {
	case ast.SequenceType:
		return want + "; this is a bare list: put a line `steps:` above it"
	case ast.StringType, ast.LiteralType:
		return want + ", not text"
	}
	return want + ", not a single value"
}

// lineCarrier wraps an error for its position without adding to the message.
type lineCarrier struct{ err error }

func (l lineCarrier) Error() string { return "" }
func (l lineCarrier) Unwrap() error { return l.err }

type tokenErr struct{ node ast.Node }

func (t tokenErr) Error() string { return "" }

func yamlLine(err error) int {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		return ye.GetToken().Position.Line
	}
	var te tokenErr
	if errors.As(err, &te) {
		return te.node.GetToken().Position.Line
	}
	return 1
}

// yamlMessage is the YAML library's message, without the source text it
// may quote (input.Redact keeps quoted names that look like field names).
func yamlMessage(err error) string {
	var ye yaml.Error
	if errors.As(err, &ye) {
		return input.Redact(ye.GetMessage())
	}
	return input.Redact(err.Error())
}
