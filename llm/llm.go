// Package llm is engram's layer over language models. Every subsystem works
// without one (the offline provider); a configured model adds generation and
// embeddings to their algorithmic paths.
package llm

// Info names a provider and the model it uses.
type Info struct {
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
}

// Provider is a source of model answers.
type Provider interface {
	// Info names the provider and model.
	Info() Info
}

// Offline is the default provider: no model at all.
type Offline struct{}

// Info says "offline".
func (Offline) Info() Info { return Info{Provider: "offline"} }
