package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ExtractJSON returns the JSON value in a model's answer: the answer itself,
// or the inside of a ```json fenced block, which models like to add. Anything
// else is a *ParseError carrying the raw answer.
func ExtractJSON(answer string) (string, error) {
	text := strings.TrimSpace(answer)
	if strings.HasPrefix(text, "```") {
		if nl := strings.IndexByte(text, '\n'); nl >= 0 {
			text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text[nl+1:]), "```"))
		}
	}
	if text == "" {
		return "", &ParseError{Raw: answer, Reason: "the answer is empty"}
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return "", &ParseError{Raw: answer, Reason: jsonReason(err)}
	}
	return text, nil
}

// jsonReason says what is wrong with a JSON text in JSON's words, never Go's.
func jsonReason(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("invalid JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	}
	return "invalid JSON"
}
