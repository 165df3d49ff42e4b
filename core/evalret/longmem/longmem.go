// Package longmem generates engram's own retrieval evaluation set,
// testdata/eval/engram-longmem.json: four long conversations between
// friends (one of them a group chat of three), each over fourteen sessions
// spread across more than a year, and questions about them in the four
// categories of docs/eval.md.
//
// Each conversation follows one person's year: a pet adopted, a trip with
// a sibling planned and then moved a month, a new pastime, a job applied
// for and taken in another city, the move, a new manager, the sibling's
// engagement, an injury, a new plan; and a friend's race. The facts are
// written by hand for each person; the small talk between them is drawn
// from a seeded generator and shares words with the questions on purpose
// (other people's trips, sisters, jobs, dogs and knees). It is as long as
// the news and names people, pets, shops and places as often (friends,
// relatives, streets, cities: asides told in passing), so that a ranker
// cannot find the news by its shape alone (TestSmallTalkLooksLikeTheNews
// holds it). The questions say
// things in other words than the turns that answer them, name people by
// their relation ("her sister"), ask about dates the turns never write
// (only their sessions' dates tell), need two or three sessions together,
// or ask for an inference from what was said. Nothing here was tuned to
// any retriever: the same questions are asked of every conversation.
//
// The set is deterministic: Generate always returns the same set, and a
// test holds the committed file equal to it (go test
// ./core/evalret/longmem -update rewrites the file).
package longmem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/engram-console/engram/core/evalret"
)

// Name is the set's name.
const Name = "engram-longmem"

// person is one conversation's cast, places and facts.
type person struct {
	conv string
	// a is the person whose year it is; b the friend; c a third friend
	// in a group chat ("" for two).
	a, b, c string
	start   time.Time
	seed    uint64
	// vars fill the {name} slots of the facts and the questions.
	vars map[string]string
	// facts are the texts of the beats, by label.
	facts map[string]string
}

// offsets are the days after the first session each session is on.
var offsets = []int{0, 21, 45, 72, 95, 120, 162, 186, 226, 262, 300, 333, 366, 402}

// beat is one fact turn: its label and who says it ("a", "b", or "c":
// the third friend when there is one, else b).
type beat struct{ label, role string }

// sessions are the beats of each session, in groups said together.
var sessions = [][][]beat{
	{{{"pet1", "a"}, {"pet1r", "b"}}, {{"sib1", "a"}}, {{"bev1", "b"}, {"bev1r", "a"}}},
	{{{"job1", "a"}}, {{"trip1", "a"}, {"trip1r", "b"}}},
	{{{"hob1", "a"}}, {{"bkid1", "c"}}, {{"hob1b", "a"}}},
	{{{"job2", "a"}}, {{"pet2", "a"}}},
	{{{"trip2", "a"}, {"trip2r", "b"}}, {{"bev2", "b"}}},
	{{{"job3", "a"}, {"job3r", "c"}, {"job3b", "a"}}},
	{{{"trip3", "a"}}, {{"trip3b", "a"}}},
	{{{"job4", "a"}}},
	{{{"move1", "a"}}, {{"move2", "a"}}, {{"bev4", "b"}}},
	{{{"job5", "a"}}, {{"hob2", "a"}}},
	{{{"sib2", "a"}, {"sib2r", "c"}}},
	{{{"inj1", "a"}, {"inj1r", "b"}}},
	{{{"pet3", "a"}}, {{"physio", "a"}}},
	{{{"reflect", "a"}}, {{"plan", "a"}}},
}

// replies are the friends' reactions, the same for everyone.
var replies = map[string]string{
	"pet1r":  "Stop it, {A}! Send pictures immediately.",
	"bev1r":  "That's not dumb, that's amazing. I'll be at the finish with a sign.",
	"trip1r": "So jealous. Eat everything and report back.",
	"trip2r": "Honestly the weather will be better then anyway.",
	"job3r":  "Whoa. Are you going to take it?",
	"sib2r":  "Tell {Sib} congratulations from me!",
	"inj1r":  "Ugh, {A}. Ice it and don't be a hero.",
}

// question is a question template: its category, its text, the beats
// that answer it, and its answer (templates too).
type question struct {
	category, text string
	evidence       []string
	answer         string
}

// questions are asked of every conversation.
var questions = []question{
	{evalret.SingleHop, "What kind of animal is {PetName}?", []string{"pet1"}, "{PetKind}"},
	{evalret.SingleHop, "Which city does {A}'s {sibrel} {Sib} live in?", []string{"sib1"}, "{SibCity}"},
	{evalret.SingleHop, "What does {Sib} do for a living?", []string{"sib1"}, "{SibJob}"},
	{evalret.SingleHop, "What new pastime did {A} take up?", []string{"hob1"}, "{Hobby}"},
	{evalret.SingleHop, "What did {A} say about {her} first attempt at {HobbyShort}?", []string{"hob1b"}, "{HobbyFirst}"},
	{evalret.SingleHop, "Why did {A} take {PetName} to the vet?", []string{"pet2"}, "{PetName} {PetAte}"},
	{evalret.SingleHop, "Which company offered {A} a new position?", []string{"job3"}, "{Company2}"},
	{evalret.SingleHop, "What is the name of {A}'s manager at {Company2}?", []string{"job5"}, "{Boss}"},
	{evalret.SingleHop, "Which neighborhood of {City2} did {A} move into?", []string{"move1"}, "{Hood}"},
	{evalret.SingleHop, "How did {A} hurt {her} {injpart}?", []string{"inj1"}, "{Injury}"},
	{evalret.SingleHop, "What nickname did {A} give {PetName}?", []string{"pet3"}, "{PetNick}"},
	{evalret.SingleHop, "What was {B}'s time in the {RaceShort}?", []string{"bev4"}, "{RaceTime}"},
	{evalret.SingleHop, "Who is {Sib} marrying?", []string{"sib2"}, "{Fiance}"},

	{evalret.MultiHop, "Which employer did {A} leave, and which one hired {him}?", []string{"job1", "job4"}, "left {Company1} for {Company2}"},
	{evalret.MultiHop, "Who went to {TripPlace} with {A}, and what did they do there?", []string{"trip1", "trip3"}, "{her} {sibrel} {Sib}; {TripDid}"},
	{evalret.MultiHop, "How did {PetName} react to the new home?", []string{"pet1", "move2"}, "{PetMove}"},
	{evalret.MultiHop, "What role did {A} apply for, and did {she} end up taking it?", []string{"job2", "job4"}, "{Job2} at {Company2}; yes"},
	{evalret.MultiHop, "What happened to the vacation {A} planned with {her} {sibrel}, and how did it go in the end?", []string{"trip1", "trip2", "trip3"}, "moved from {TripMonth1} to {TripMonth2}; {TripDid}"},
	{evalret.MultiHop, "Which city did {A} live in before relocating, and where did {she} end up?", []string{"job3b", "move1"}, "{City1}, then {City2}"},
	{evalret.MultiHop, "Did {A} keep up {HobbyShort} after moving to {City2}?", []string{"hob1", "hob2"}, "yes: {Hobby} in {City2} too"},
	{evalret.MultiHop, "What two big pieces of news did {Sib} share over the past year?", []string{"sib1", "sib2"}, "{SibJob}; engaged to {Fiance}"},
	{evalret.MultiHop, "How did {B}'s race go, from signing up to race day?", []string{"bev1", "bev4"}, "signed up for {Race}; finished in {RaceTime}"},
	{evalret.MultiHop, "Why did {A} have to stop exercising, and how is the recovery going?", []string{"inj1", "physio"}, "{Injury}; physio is working"},
	{evalret.MultiHop, "What was the drawback of the offer from {Company2}, and what did {A} do about it?", []string{"job3", "move1"}, "it was in {City2}; {she} moved there"},
	{evalret.MultiHop, "Who is coming on {A}'s next road trip, and what kind of animal is it?", []string{"plan", "pet1"}, "{PetName}, {PetKind}"},
	{evalret.MultiHop, "How did {A}'s workload compare between the old and the new employer?", []string{"job1", "job5"}, "long hours at {Company1}; {Boss} keeps it humane"},

	{evalret.Temporal, "When did {A} adopt {PetName}?", []string{"pet1"}, "{S1MonthYear}"},
	{evalret.Temporal, "For which month was the {TripPlace} trip with {Sib} first booked?", []string{"trip1"}, "{TripMonth1}"},
	{evalret.Temporal, "When did {A} and {Sib} finally go to {TripPlace}?", []string{"trip2", "trip3"}, "{TripMonth2}"},
	{evalret.Temporal, "What happened after {A} applied to {Company2}?", []string{"job3"}, "{Company2} offered {him} the job"},
	{evalret.Temporal, "When was {A}'s first day at {Company2}?", []string{"job4"}, "{StartDay}"},
	{evalret.Temporal, "When did {A} move to {City2}?", []string{"move1"}, "{S9MonthYear}"},
	{evalret.Temporal, "What did {A} arrange for the week before starting at the new company?", []string{"job4"}, "the move"},
	{evalret.Temporal, "What happened to {A} in {S12Month}?", []string{"inj1"}, "{Injury}"},
	{evalret.Temporal, "What news did {A}'s {sibrel} share in {S11Month}?", []string{"sib2"}, "engaged to {Fiance}"},
	{evalret.Temporal, "How long after adopting {PetName} did {A} have to rush to the vet?", []string{"pet1", "pet2"}, "{PetVetWeeks}"},
	{evalret.Temporal, "Which came first: {A}'s injury or {her} {sibrel}'s engagement?", []string{"sib2", "inj1"}, "the engagement"},
	{evalret.Temporal, "When was {B}'s {RaceShort}?", []string{"bev4"}, "{RaceMonthYear}"},
	{evalret.Temporal, "What was {A} up to in {S3Month}?", []string{"hob1"}, "starting {Hobby}"},

	{evalret.OpenDomain, "What might {A} like as a birthday present?", []string{"hob1", "hob2"}, "something for {Hobby}"},
	{evalret.OpenDomain, "Would {A} look for lodging that accepts animals on {her} next trip?", []string{"plan", "pet1"}, "yes, {PetName} comes along"},
	{evalret.OpenDomain, "Does {A} lead an active lifestyle?", []string{"inj1"}, "yes"},
	{evalret.OpenDomain, "Why might {A} have been stressed around {S9Month}?", []string{"job4", "move1"}, "a new job and a move to {City2}"},
	{evalret.OpenDomain, "What kind of weather does {A} seem to be tired of?", []string{"job3b"}, "{Weather1}"},
	{evalret.OpenDomain, "Is {A} likely to travel for {Sib}'s wedding?", []string{"sib2"}, "yes"},
	{evalret.OpenDomain, "What would be a thoughtful gift for {PetName}?", []string{"pet3"}, "something cosy or to play with"},
	{evalret.OpenDomain, "Does {A} seem happier at {Company2} than at {Company1}?", []string{"job1", "job5"}, "yes"},
	{evalret.OpenDomain, "What sort of experiences does {A} seem to enjoy while travelling?", []string{"trip3"}, "{TripDid}"},
	{evalret.OpenDomain, "Would {B} be a good person to ask for {bevtips} tips?", []string{"bev1", "bev4"}, "yes, {B} trained for and finished {Race}"},
	{evalret.OpenDomain, "What should {A} keep in mind when bringing {PetName} somewhere new?", []string{"move2"}, "{PetMove}"},
	{evalret.OpenDomain, "Is {Sib} likely to have a demanding schedule?", []string{"sib1", "trip2"}, "yes"},
	{evalret.OpenDomain, "What perks does {A}'s new place in {City2} have?", []string{"move1"}, "{HoodPerks}"},
}

// Generate builds the set.
func Generate() *evalret.Set {
	set := &evalret.Set{Name: Name}
	n := 0
	for _, p := range people() {
		conv, turnOf := p.conversation()
		set.Conversations = append(set.Conversations, conv)
		r := strings.NewReplacer(p.pairs()...)
		for _, q := range questions {
			n++
			ev := make([]string, len(q.evidence))
			for i, label := range q.evidence {
				id, ok := turnOf[label]
				if !ok {
					panic("longmem: no beat " + label)
				}
				ev[i] = id
			}
			split := evalret.Dev
			if n%3 == 0 {
				split = evalret.Heldout
			}
			set.Questions = append(set.Questions, evalret.Question{
				ID: fmt.Sprintf("%s-q%d", p.conv, len(set.Questions)+1), Conversation: p.conv,
				Text: r.Replace(q.text), Category: q.category, Evidence: ev, Answer: r.Replace(q.answer), Split: split,
			})
		}
	}
	return set
}

// date is the first session's date plus the session's offset, at an hour
// that varies a little from session to session.
func (p *person) date(i int) time.Time {
	return p.start.AddDate(0, 0, offsets[i]).Add(time.Duration((i*37)%120) * time.Minute)
}

// pairs are the replacements of the {slots}: the person's vars, the
// names, and dates worked out from the sessions'.
func (p *person) pairs() []string {
	v := map[string]string{"A": p.a, "B": p.b}
	for k, x := range p.vars {
		v[k] = x
	}
	v["S1MonthYear"] = p.date(0).Format("January 2006")
	v["S3Month"] = p.date(2).Format("January")
	v["S9Month"] = p.date(8).Format("January")
	v["S9MonthYear"] = p.date(8).Format("January 2006")
	v["S11Month"] = p.date(10).Format("January")
	v["S12Month"] = p.date(11).Format("January")
	v["TripMonth1"] = p.date(4).AddDate(0, 0, 25).Format("January")
	v["TripMonth2"] = p.date(4).AddDate(0, 0, 55).Format("January")
	v["StartDay"] = p.date(7).AddDate(0, 0, 24).Format("January 2")
	v["RaceMonth"] = p.date(8).AddDate(0, 0, -7).Format("January")
	v["RaceMonthYear"] = p.date(8).AddDate(0, 0, -7).Format("January 2006")
	v["PetVetWeeks"] = fmt.Sprintf("about %d weeks", int(p.date(3).Sub(p.date(0)).Hours()/24/7))
	var out []string
	for k, x := range v {
		out = append(out, "{"+k+"}", x)
	}
	// A replacer tries its pairs in order: longer keys never share a
	// prefix with shorter ones here ({A} vs {A...} do not occur), so the
	// map's order does not matter; it is sorted anyway, for stability.
	sortPairs(out)
	return out
}

func sortPairs(p []string) {
	for i := 2; i < len(p); i += 2 {
		for j := i; j >= 2 && p[j] < p[j-2]; j -= 2 {
			p[j], p[j-2] = p[j-2], p[j]
			p[j+1], p[j-1] = p[j-1], p[j+1]
		}
	}
}

// conversation writes the sessions: each a greeting, the session's beats
// with small talk between them, and a goodbye. turnOf maps a beat's label
// to its turn's id.
func (p *person) conversation() (evalret.Conversation, map[string]string) {
	rng := rand.New(rand.NewPCG(p.seed, 0x5eed))
	speakers := []string{p.a, p.b}
	if p.c != "" {
		speakers = append(speakers, p.c)
	}
	conv := evalret.Conversation{ID: p.conv, Speakers: speakers}
	r := strings.NewReplacer(p.pairs()...)
	turnOf := map[string]string{}
	small := newSmallTalk(rng, speakers)
	for si, groups := range sessions {
		ses := evalret.Session{ID: fmt.Sprintf("s%d", si+1), DateTime: p.date(si)}
		add := func(speaker, text string) string {
			id := fmt.Sprintf("%s-s%d-t%d", p.conv, si+1, len(ses.Turns)+1)
			ses.Turns = append(ses.Turns, evalret.Turn{ID: id, Speaker: speaker, Text: r.Replace(text)})
			return id
		}
		for _, t := range small.greeting(si) {
			add(t.speaker, t.text)
		}
		target := 20 + rng.IntN(7)
		beats := 0
		for _, g := range groups {
			beats += len(g)
		}
		fill := target - beats - 4
		for gi, g := range groups {
			// Small talk before each group: an even share of what is
			// left, give or take one exchange.
			share := fill / (len(groups) - gi + 1)
			for written := 0; written < share; {
				ex := small.exchange()
				for _, t := range ex {
					add(t.speaker, t.text)
				}
				written += len(ex)
				fill -= len(ex)
			}
			for _, b := range g {
				text, ok := p.facts[b.label]
				if !ok {
					text, ok = replies[b.label]
				}
				if !ok {
					panic("longmem: no text for " + b.label + " of " + p.conv)
				}
				speaker := p.b
				switch {
				case b.role == "a":
					speaker = p.a
				case b.role == "c" && p.c != "":
					speaker = p.c
				}
				turnOf[b.label] = add(speaker, text)
			}
		}
		for fill > 0 {
			ex := small.exchange()
			for _, t := range ex {
				add(t.speaker, t.text)
			}
			fill -= len(ex)
		}
		for _, t := range small.goodbye() {
			add(t.speaker, t.text)
		}
		conv.Sessions = append(conv.Sessions, ses)
	}
	return conv, turnOf
}

// JSON is the set as the committed file holds it: indented, ending in a
// newline.
func JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "Hart & Lowe", not "Hart \u0026 Lowe"
	enc.SetIndent("", "  ")
	if err := enc.Encode(Generate()); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
