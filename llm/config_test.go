package llm_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  llm.Config
		flag string // the flag the error must name
	}{
		{"unknown provider", llm.Config{Provider: "gpt"}, "--llm"},
		{"replay without cassette", llm.Config{Provider: "replay"}, "--cassette"},
		{"cassette without replay", llm.Config{Provider: "ollama", Cassette: "c.yaml"}, "--cassette"},
		{"cassette with offline", llm.Config{Cassette: "c.yaml"}, "--cassette"},
		{"record with offline", llm.Config{Provider: "offline", Record: "c.yaml"}, "--record"},
		{"record with default", llm.Config{Record: "c.yaml"}, "--record"},
		{"record with replay", llm.Config{Provider: "replay", Cassette: "a.yaml", Record: "b.yaml"}, "--record"},
		{"llm-url with offline", llm.Config{URL: "http://x"}, "--llm-url"},
		{"llm-url with replay", llm.Config{Provider: "replay", Cassette: "a.yaml", URL: "http://x"}, "--llm-url"},
		{"negative retries", llm.Config{Provider: "ollama", Retries: -1}, "--llm-retries"},
		{"negative timeout", llm.Config{Provider: "ollama", Timeout: -time.Second}, "--llm-timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if err == nil {
				t.Fatalf("%+v is valid", c.cfg)
			}
			if !strings.Contains(err.Error(), c.flag) {
				t.Errorf("%q does not name %s", err, c.flag)
			}
			if _, err := llm.New(c.cfg); err == nil {
				t.Error("New accepts what Validate rejects")
			}
		})
	}
	for _, ok := range []llm.Config{
		{},
		{Provider: "offline"},
		{Provider: "ollama", Model: "llama3.2", URL: "http://x:1", Timeout: time.Second, Retries: 0, Record: "r.yaml"},
		{Provider: "openai", URL: "http://x/v1", Retries: 5},
		{Provider: "replay", Cassette: "c.yaml"},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	if err := (llm.Config{Provider: "gpt"}).Validate(); !strings.Contains(err.Error(), "offline, ollama, openai, replay") {
		t.Errorf("%q should list the providers", err)
	}
}

func TestOffline(t *testing.T) {
	for _, p := range []llm.Provider{llm.Offline{}, mustNew(t, llm.Config{}), mustNew(t, llm.Config{Provider: "offline"})} {
		if llm.Available(p) {
			t.Errorf("%T is available", p)
		}
		if info := p.Info(); info.Provider != "offline" {
			t.Errorf("info %+v", info)
		}
		_, err := p.Complete(context.Background(), llm.Prompt("", "x"))
		checkNoModel(t, err, "chat")
		_, err = p.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"x"}})
		checkNoModel(t, err, "embed")
	}
	if llm.Available(nil) {
		t.Error("nil is available")
	}
	for _, p := range []llm.Provider{llmtest.New(), mustNew(t, llm.Config{Provider: "ollama"}), llm.CheckJSON(llmtest.New())} {
		if !llm.Available(p) {
			t.Errorf("%T is not available", p)
		}
	}
}

func checkNoModel(t *testing.T, err error, op string) {
	t.Helper()
	if !errors.Is(err, llm.ErrNoModel) {
		t.Fatalf("%v does not wrap ErrNoModel", err)
	}
	e := llmError(t, err)
	if e.Op != op || e.Transient || e.Provider != "offline" {
		t.Errorf("%+v", e)
	}
	if !strings.Contains(err.Error(), "--llm ollama") || !strings.Contains(err.Error(), "--llm openai") {
		t.Errorf("%q should name the flag that enables a model", err)
	}
}

func mustNew(t *testing.T, c llm.Config) llm.Provider {
	t.Helper()
	p, err := llm.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewReplayNeedsAReadableCassette(t *testing.T) {
	_, err := llm.New(llm.Config{Provider: "replay", Cassette: filepath.Join(t.TempDir(), "none.yaml")})
	if err == nil || !strings.Contains(err.Error(), "--cassette") || !strings.Contains(err.Error(), "none.yaml") {
		t.Errorf("%v: should name --cassette and the file", err)
	}
}

func TestNewRecordNeedsAWritablePath(t *testing.T) {
	_, err := llm.New(llm.Config{Provider: "ollama", Record: filepath.Join(t.TempDir(), "no", "such", "dir", "c.yaml")})
	if err == nil || !strings.Contains(err.Error(), "--record") {
		t.Errorf("%v: should name --record", err)
	}
}
