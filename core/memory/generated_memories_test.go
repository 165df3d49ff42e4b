package memory_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/engram-console/engram/core/memory"
)

// corpus makes realistic, varied short memories: a person, a place, a
// thing, a day, an amount in one of many sentence shapes, with 1-3 of
// about 20 tags, one of several agents, an importance and a timestamp
// spread over a year.
type corpus struct {
	rng *rand.Rand
}

func newCorpus(seed uint64) *corpus { return &corpus{rng: rand.New(rand.NewPCG(seed, 7))} }

var (
	cPeople = []string{"Maria", "Tom", "Aisha", "Jonas", "Li", "Sofia", "Pedro", "Grace", "Sam", "Helga", "Nora", "Marcus",
		"Ines", "Ravi", "Yuki", "Omar", "Elena", "Kofi", "Anna", "Diego", "Priya", "Lukas", "Chloe", "Mateo", "Fatima",
		"Oscar", "Hana", "Ivan", "Zoe", "Bruno"}
	cPlaces = []string{"Lisbon", "Berlin", "Nairobi", "Osaka", "Toronto", "Madrid", "Oslo", "Lima", "Porto", "Dublin",
		"Prague", "Seoul", "Austin", "Cairo", "Denver", "Vienna", "Milan", "Quito", "Perth", "Hanoi"}
	cThings = []string{"flight", "hotel", "invoice", "budget", "contract", "dentist", "passport", "insurance", "laptop",
		"server", "database", "report", "presentation", "birthday", "dinner", "gym", "car", "rent", "tax", "visa",
		"ticket", "meeting", "interview", "workshop", "deadline", "refund", "subscription", "vaccine", "wedding",
		"conference", "backup", "release", "migration", "roadmap", "newsletter", "garden", "kitchen", "bicycle",
		"piano", "recipe", "allergy", "prescription", "mortgage", "salary", "bonus", "lease", "parcel", "printer",
		"router", "camera", "guitar", "marathon", "concert", "museum", "library", "course", "exam", "thesis",
		"podcast", "vacation", "groceries", "laundry", "plumber", "electrician", "babysitter", "school", "teacher",
		"doctor", "pharmacy", "bank", "loan", "pension", "charity", "donation", "volunteer", "election", "jury"}
	cAdjectives = []string{"urgent", "quarterly", "annual", "weekly", "new", "old", "cheap", "expensive", "late", "early",
		"broken", "delayed", "approved", "rejected", "shared", "private", "final", "draft", "overdue", "cancelled"}
	cDays      = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "tomorrow", "next week", "March", "June", "December"}
	cTemplates = []string{
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
	cTags   = []string{"work", "travel", "family", "health", "finance", "meeting", "food", "fitness", "shopping", "home", "car", "school", "music", "books", "urgent", "idea", "todo", "client", "hobby", "legal"}
	cAgents = []string{"agent_a", "agent_b", "agent_c", "agent_d", "agent_e", "agent_f"}
	cTypes  = []string{"fact", "event", "preference", "task", "observation"}
)

func pick[T any](rng *rand.Rand, list []T) T { return list[rng.IntN(len(list))] }

// text is one memory's text.
func (c *corpus) text() string {
	r := c.rng
	return fmt.Sprintf(pick(r, cTemplates), pick(r, cPeople), pick(r, cPlaces), pick(r, cThings), pick(r, cAdjectives),
		pick(r, cDays), 20+r.IntN(5000), pick(r, cThings))
}

// item is the i-th memory of a data set.
func (c *corpus) item(i int) memory.Item {
	r := c.rng
	tags := []string{pick(r, cTags)}
	for range r.IntN(3) {
		if t := pick(r, cTags); !strings.Contains(strings.Join(tags, ","), t) {
			tags = append(tags, t)
		}
	}
	return memory.Item{
		Type: pick(r, cTypes), Text: c.text(), AgentID: pick(r, cAgents), Tags: tags,
		Importance: float64(r.IntN(101)) / 100, Timestamp: t0.Add(-365 * 24 * time.Hour).Add(time.Duration(i) * 5 * time.Minute),
	}
}

// benchPrompts are 2-3 word prompts over the corpus's vocabulary.
var benchPrompts = []string{"Lisbon flight", "dentist appointment Friday", "Maria invoice", "urgent server migration",
	"passport renewal", "hotel in Osaka", "quarterly budget report", "Tom birthday dinner", "overdue tax refund",
	"allergic peanuts", "Berlin conference ticket", "car insurance"}
