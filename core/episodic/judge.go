package episodic

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
)

// The model's half of linking: asked whether a new message continues an
// earlier thread, given that thread's summary. Its prompt has a fixed core
// and versioned guidance that tuning can add to (seed 3.5).

const judgeSystem = `You decide whether a new message in a conversation continues an earlier conversation thread.
Answer with JSON only: {"related": true|false, "confidence": 0.0-1.0, "reasoning": "one sentence", "key_signals": ["..."]}.
confidence is how sure you are of your answer (related or not).`

// judgeSchema constrains servers that support schemas.
var judgeSchema = json.RawMessage(`{"type":"object","required":["related","confidence"],"properties":{"related":{"type":"boolean"},"confidence":{"type":"number","minimum":0,"maximum":1},"reasoning":{"type":"string"},"key_signals":{"type":"array","items":{"type":"string"}}}}`)

// PromptVersion is one version of the judge's guidance.
type PromptVersion struct {
	Version  int      `json:"version"`
	Guidance []string `json:"guidance"`
	Reason   string   `json:"reason"`
	// CreatedAt is when tuning made it (none for the initial prompt).
	CreatedAt *time.Time `json:"created_at,omitempty"`
}

// Guidance tuning can add, keyed by the disagreement pattern that calls for it.
const (
	guidanceTemporal = "Look for temporal continuity (e.g., 'Oh, and...', 'What about...'): a short follow-up that leans on the earlier thread for its subject continues it."
	guidanceDistinct = "The same kind of question about a different place, person or subject is a new topic unless the message refers back to the earlier one."
)

// judgeRequest builds the model's request.
func judgeRequest(p PromptVersion, summary, message string, gap time.Duration) llm.Request {
	system := judgeSystem
	if len(p.Guidance) > 0 {
		system += "\nGuidance:\n- " + strings.Join(p.Guidance, "\n- ")
	}
	user := fmt.Sprintf("Earlier thread (last active %s before the new message):\n%s\n\nNew message:\n%s\n\nAre these semantically related?", gapText(gap), summary, message)
	req := llm.Prompt(system, user)
	req.JSON, req.Schema = true, judgeSchema
	zero := 0.0
	req.Temperature = &zero
	return req
}

// judge asks the model; a failure is recorded in the assessment, never
// returned: linking goes on without the model.
func judge(ctx context.Context, model llm.Provider, p PromptVersion, summary, message string, gap time.Duration) Assessment {
	a := Assessment{PromptVersion: p.Version}
	if !llm.Available(model) {
		a.Note = "no language model configured (start engram with --llm ollama or --llm openai): the algorithmic decision stands"
		return a
	}
	resp, err := model.Complete(ctx, judgeRequest(p, summary, message, gap))
	if err != nil {
		if ctx.Err() != nil {
			a.Error = "the model did not answer before the linking deadline; the algorithmic decision stands"
		} else {
			a.Error = kit.FromLLM(err).Error()
		}
		return a
	}
	var answer struct {
		Related    *bool    `json:"related"`
		Confidence *float64 `json:"confidence"`
		Reasoning  string   `json:"reasoning"`
		KeySignals []string `json:"key_signals"`
	}
	raw := llm.Truncate(resp.Text, 200)
	if err := json.Unmarshal([]byte(strings.TrimSpace(resp.Text)), &answer); err != nil {
		a.Error = fmt.Sprintf("the model's answer is not the JSON asked for (%v); its answer: %q", err, raw)
		return a
	}
	if answer.Related == nil || answer.Confidence == nil || *answer.Confidence < 0 || *answer.Confidence > 1 {
		a.Error = fmt.Sprintf("the model's answer needs related (true or false) and confidence (0 to 1); its answer: %q", raw)
		return a
	}
	a.Available, a.Related, a.Confidence = true, *answer.Related, *answer.Confidence
	a.Reasoning, a.KeySignals = answer.Reasoning, answer.KeySignals
	return a
}

// Combine is the decision the two halves make together at threshold: the
// algorithmic score, and the model's assessment (Available false if none).
func Combine(algorithmic float64, a Assessment, threshold float64) Decision {
	d := Decision{Algorithmic: algorithmic, Assessment: a}
	decide(&d, threshold)
	return d
}

// decide combines the two halves. Agreement decides with HIGH confidence;
// disagreement goes to the more confident half, UNCERTAIN. The algorithmic
// half's confidence in its own answer is max(score, 1 − score): how far the
// score is from even (0.72 and 0.68 are as sure as they read, seed 3.2d and
// 3.2e; 0.1 is a confident no).
func decide(d *Decision, threshold float64) {
	d.Threshold = threshold
	algLink := d.Algorithmic >= threshold
	if !d.Assessment.Available {
		d.Confidence, d.DecidedBy = ConfidenceAlgorithm, "algorithmic"
		d.Decision = linkWord(algLink)
		return
	}
	p := d.Assessment.Confidence
	if !d.Assessment.Related {
		p = 1 - p
	}
	p = round2(p)
	d.LLM = &p
	agree := algLink == d.Assessment.Related
	d.Agreement = &agree
	switch {
	case agree:
		d.Confidence, d.DecidedBy, d.Decision = ConfidenceHigh, "both", linkWord(algLink)
	default:
		d.Disagreement, d.Confidence = true, ConfidenceUncertain
		algConfidence := max(d.Algorithmic, 1-d.Algorithmic)
		if algConfidence >= d.Assessment.Confidence {
			d.DecidedBy, d.Decision = "algorithmic", linkWord(algLink)
		} else {
			d.DecidedBy, d.Decision = "llm", linkWord(d.Assessment.Related)
		}
	}
}

func linkWord(link bool) string {
	if link {
		return Link
	}
	return DontLink
}

// gapText writes a gap the way a person would say it: "45 min", "3 h", "7 days".
func gapText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "moments"
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	}
}
