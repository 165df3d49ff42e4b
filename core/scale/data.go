package scale

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/memory"
)

// itemWords are the words of item titles and descriptions.
var itemWords = []string{"login", "migration", "security", "review", "deploy", "billing", "search", "cache", "latency", "report",
	"onboarding", "backup", "audit", "alerting", "pricing", "mobile", "export", "import", "quota", "roadmap"}

// Items are n cortex items with the distribution of the cortex
// benchmarks' data set (core/cortex/stress_test.go itemSpecs, drawn in the
// same order from the same generator, so seed 7 gives the benchmarks'
// items): the three types, five statuses and four priorities uniformly,
// progress 0-100, a quarter blocking, four in five with a due date in the
// 60 days after Start, 0-3 of twenty tags and "security" on one in six,
// owner agent_a (agent_b one in ten); ids item_000000, item_000001...
func Items(n int, seed uint64) []cortex.BulkItem { return NewItems(seed).Next(n) }

// ItemSource draws Items a chunk at a time (a million at once would take
// gigabytes).
type ItemSource struct {
	rng *rand.Rand
	i   int
}

// NewItems returns the source of Items(n, seed) for any n.
func NewItems(seed uint64) *ItemSource { return &ItemSource{rng: rand.New(rand.NewPCG(seed, 1))} }

// Next returns the next n items.
func (src *ItemSource) Next(n int) []cortex.BulkItem {
	rng := src.rng
	items := make([]cortex.BulkItem, n)
	for j := range items {
		i := src.i
		src.i++
		fields := map[string]any{
			"title":       fmt.Sprintf("%s %s item %d", itemWords[rng.IntN(20)], itemWords[rng.IntN(20)], i),
			"description": fmt.Sprintf("about %s and %s", itemWords[rng.IntN(20)], itemWords[rng.IntN(20)]),
			"priority":    cortex.Priorities[rng.IntN(4)],
			"status":      cortex.Statuses[rng.IntN(5)],
			"progress":    rng.IntN(101),
			"blocking":    rng.IntN(4) == 0,
		}
		if rng.IntN(5) > 0 {
			fields["due_at"] = Start.Add(time.Duration(rng.IntN(24*60)) * time.Hour).Format(time.RFC3339)
		}
		var tags []string
		for range rng.IntN(4) {
			tags = append(tags, fmt.Sprintf("tag%02d", rng.IntN(20)))
		}
		if rng.IntN(6) == 0 {
			tags = append(tags, "security")
		}
		fields["tags"] = tags
		owner := "agent_a"
		if rng.IntN(10) == 0 {
			owner = "agent_b"
		}
		raw := make(map[string]json.RawMessage, len(fields))
		for k, v := range fields {
			raw[k], _ = json.Marshal(v) // strings, numbers, booleans and string lists always marshal
		}
		items[j] = cortex.BulkItem{Type: cortex.Types[rng.IntN(3)], ID: fmt.Sprintf("item_%06d", i), Owner: owner, Fields: raw}
	}
	return items
}

// The vocabulary of utterances, thread messages and memories (the memory
// tests' corpus: core/memory/generated_memories_test.go, whose benchmark
// prompts it answers).
var (
	people = []string{"Maria", "Tom", "Aisha", "Jonas", "Li", "Sofia", "Pedro", "Grace", "Sam", "Helga", "Nora", "Marcus",
		"Ines", "Ravi", "Yuki", "Omar", "Elena", "Kofi", "Anna", "Diego", "Priya", "Lukas", "Chloe", "Mateo", "Fatima",
		"Oscar", "Hana", "Ivan", "Zoe", "Bruno"}
	places = []string{"Lisbon", "Berlin", "Nairobi", "Osaka", "Toronto", "Madrid", "Oslo", "Lima", "Porto", "Dublin",
		"Prague", "Seoul", "Austin", "Cairo", "Denver", "Vienna", "Milan", "Quito", "Perth", "Hanoi"}
	things = []string{"flight", "hotel", "invoice", "budget", "contract", "dentist", "passport", "insurance", "laptop",
		"server", "database", "report", "presentation", "birthday", "dinner", "gym", "car", "rent", "tax", "visa",
		"ticket", "meeting", "interview", "workshop", "deadline", "refund", "subscription", "vaccine", "wedding",
		"conference", "backup", "release", "migration", "roadmap", "newsletter", "garden", "kitchen", "bicycle",
		"piano", "recipe", "allergy", "prescription", "mortgage", "salary", "bonus", "lease", "parcel", "printer",
		"router", "camera", "guitar", "marathon", "concert", "museum", "library", "course", "exam", "thesis",
		"podcast", "vacation", "groceries", "laundry", "plumber", "electrician", "babysitter", "school", "teacher",
		"doctor", "pharmacy", "bank", "loan", "pension", "charity", "donation", "volunteer", "election", "jury"}
	adjectives = []string{"urgent", "quarterly", "annual", "weekly", "new", "old", "cheap", "expensive", "late", "early",
		"broken", "delayed", "approved", "rejected", "shared", "private", "final", "draft", "overdue", "cancelled"}
	days      = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "tomorrow", "next week", "March", "June", "December"}
	templates = []string{
		"%[1]s booked the %[4]s %[3]s to %[2]s for $%[6]d on %[5]s.",
		"Remind %[1]s about the %[4]s %[3]s before %[5]s.",
		"%[1]s prefers the %[3]s in %[2]s; the %[4]s one was a mistake.",
		"The %[3]s for %[2]s is %[4]s and costs $%[6]d.",
		"%[1]s said the %[3]s is %[4]s until %[5]s.",
		"Call %[1]s on %[5]s to confirm the %[3]s in %[2]s.",
		"Paid $%[6]d for the %[4]s %[3]s; the receipt is with %[1]s.",
		"%[1]s will move the %[3]s from %[2]s to %[5]s.",
		"Note: the %[4]s %[3]s review with %[1]s happens %[5]s.",
		"%[1]s is allergic to the %[3]s stuff in %[2]s.",
		"The %[3]s in %[2]s needs %[6]d more days, says %[1]s.",
		"Ask %[1]s whether the %[3]s %[7]s can wait until %[5]s.",
		"%[1]s recommended a %[4]s %[3]s near the %[7]s in %[2]s.",
		"Budget for the %[3]s: $%[6]d, approved by %[1]s on %[5]s.",
		"%[1]s lost the %[3]s receipt from %[2]s.",
		"Renew the %[3]s and the %[7]s with %[1]s by %[5]s.",
	}
	memoryTags   = []string{"work", "travel", "family", "health", "finance", "meeting", "food", "fitness", "shopping", "home", "car", "school", "music", "books", "urgent", "idea", "todo", "client", "hobby", "legal"}
	memoryAgents = []string{"agent_a", "agent_b", "agent_c", "agent_d", "agent_e", "agent_f"}
	memoryTypes  = []string{"fact", "event", "preference", "task", "observation"}
)

func pick[T any](rng *rand.Rand, list []T) T { return list[rng.IntN(len(list))] }

// sentence is one short, varied sentence: a person, a place, a thing, a
// day, an amount in one of sixteen shapes.
func sentence(r *rand.Rand) string {
	return fmt.Sprintf(pick(r, templates), pick(r, people), pick(r, places), pick(r, things), pick(r, adjectives),
		pick(r, days), 20+r.IntN(5000), pick(r, things))
}

// Memories generates memories: the memory tests' corpus.
type Memories struct{ rng *rand.Rand }

// NewMemories returns the generator of seed; the memory tests' corpus of
// seed s is NewMemories(s)'s.
func NewMemories(seed uint64) *Memories { return &Memories{rng: rand.New(rand.NewPCG(seed, 7))} }

// Text is one memory's text, as Item draws it.
func (g *Memories) Text() string { return sentence(g.rng) }

// Item is the i-th memory (call it for i = 0, 1, 2... in order): a
// sentence, one of six agents, one to three of twenty tags, importance
// 0-1 in hundredths, a time 5 minutes after the one before, starting a
// year before Start; the store draws its id.
func (g *Memories) Item(i int) memory.Item {
	r := g.rng
	tags := []string{pick(r, memoryTags)}
	for range r.IntN(3) {
		if t := pick(r, memoryTags); !strings.Contains(strings.Join(tags, ","), t) {
			tags = append(tags, t)
		}
	}
	return memory.Item{
		Type: pick(r, memoryTypes), Text: g.Text(), AgentID: pick(r, memoryAgents), Tags: tags,
		Importance: float64(r.IntN(101)) / 100, Timestamp: Start.Add(-365 * 24 * time.Hour).Add(time.Duration(i) * 5 * time.Minute),
	}
}
