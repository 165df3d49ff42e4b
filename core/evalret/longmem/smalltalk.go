package longmem

import (
	"math/rand/v2"
	"strings"
)

// said is one turn of small talk.
type said struct{ speaker, text string }

// smallTalk draws the chatter between the facts: short exchanges from
// templates whose slots are drawn too. Many share words with the
// questions (someone else's trip, sister, job, dog, knee, wedding,
// class), as a real conversation does.
type smallTalk struct {
	rng      *rand.Rand
	speakers []string
	// used counts each exchange drawn, so that the rarest is preferred
	// and no line comes back often.
	used []int
}

func newSmallTalk(rng *rand.Rand, speakers []string) *smallTalk {
	return &smallTalk{rng: rng, speakers: speakers, used: make([]int, len(exchanges))}
}

// slots are the words small talk's {slots} are drawn from.
var slots = map[string][]string{
	"food":     {"a lentil curry", "banana bread", "shakshuka", "a lasagna", "dumplings from scratch", "a tomato tart", "chili", "pad thai"},
	"adj":      {"surprisingly good", "a bit burnt", "way too salty", "better than the restaurant", "edible, barely"},
	"show":     {"that baking competition", "the new detective series", "a documentary about octopuses", "the space drama everyone talks about", "an old sitcom"},
	"weather":  {"grey and drizzly", "weirdly warm", "windy", "freezing", "sticky and humid"},
	"relative": {"sister", "brother", "cousin", "mom", "aunt", "dad"},
	"kid":      {"nephew", "niece", "godson", "neighbor's kid"},
	"animal":   {"dog", "cat", "parrot", "puppy", "rabbit"},
	"class":    {"cooking", "yoga", "photography", "watercolor", "salsa", "Spanish"},
	"job":      {"project manager", "barista", "museum guide", "data analyst", "nurse", "teacher"},
	"company":  {"a bank downtown", "the airport", "a startup near the station", "the library", "the hospital"},
	"place":    {"Denver", "Lisbon", "Toronto", "Chicago", "Bristol", "Portland", "Kyoto", "Boston", "Austin"},
	"book":     {"a thick fantasy novel", "a biography of a chess player", "a mystery set on a train", "a book about sleep"},
	"sport":    {"football", "basketball", "hockey", "tennis", "baseball"},
	"cuisine":  {"Ethiopian", "Korean", "Georgian", "Peruvian", "Vietnamese"},
	"thing":    {"blender", "lamp", "backpack", "kettle", "pair of headphones", "desk chair"},
	"chore":    {"did laundry", "cleaned the fridge", "fixed a shelf", "sorted old photos", "repotted plants"},
	"month":    {"March", "May", "June", "September", "December"},
}

// exchanges are the small talk templates: "x:" lines are the first
// speaker's, "y:" the other's; {X} and {Y} are their names.
var exchanges = [][]string{
	{"x:How was your weekend, {Y}?", "y:Quiet. I mostly {chore} and watched {show}."},
	{"x:I made {food} last night and it came out {adj}.", "y:Send me the recipe, I've been living on toast all week."},
	{"x:The weather here has been {weather} all week.", "y:Same here. I keep forgetting my umbrella."},
	{"x:My {relative} keeps sending me videos of a {animal} that plays the piano.", "y:Honestly that's the best part of the internet."},
	{"x:Did you finish {show}?", "y:Two episodes left. Don't spoil it!"},
	{"x:My coworker just got back from a work trip to {place} and won't stop talking about it.", "y:Work trips are the worst, you see nothing but the hotel."},
	{"x:We finally moved the couch to the other wall and the living room feels twice as big.", "y:Moving furniture is the most underrated form of therapy."},
	{"x:The neighbors' {animal} was loud all night again.", "y:Earplugs, {X}. Trust me."},
	{"x:There's a birthday party for my {kid} this weekend, with a bouncy castle.", "y:Brave. Bring coffee."},
	{"x:My knee always aches when it rains.", "y:You sound like my grandfather, {X}."},
	{"x:I'm thinking of taking a {class} class at the library.", "y:Do it! Those are always fun.", "x:Maybe. If I can find the time."},
	{"x:The city is repaving our street, so it's jackhammers from seven in the morning.", "y:Oof. Work from a café?"},
	{"x:I saw a job posting for a {job} at {company} and almost applied for fun.", "y:Ha, the grass is always greener."},
	{"x:Any good books lately?", "y:I'm halfway through {book}. It's slow but good."},
	{"x:I need a vacation. Even a weekend somewhere with no phone signal.", "y:We should plan one at some point."},
	{"x:Did you watch the {sport} game?", "y:Only the last ten minutes. What a finish."},
	{"x:I tried that new {cuisine} place near the station.", "y:Was it worth the line?", "x:Honestly, yes. Get the soup."},
	{"x:My phone screen cracked again.", "y:Get a case, {X}!"},
	{"x:We had a power cut for three hours last night.", "y:Did you at least have candles?"},
	{"x:My {relative} is moving apartments again, third time in two years.", "y:Some people just like boxes."},
	{"x:I spent the whole morning on hold with the bank.", "y:The hold music haunts my dreams."},
	{"x:Wedding season is starting, there are three invitations on my fridge.", "y:That's a lot of gifts to buy."},
	{"x:I'm trying to drink more water. Day three.", "y:Proud of you."},
	{"x:Traffic was awful today, there was an accident on the highway.", "y:Glad you're ok."},
	{"x:I found an old photo of us from college.", "y:Oh no. Burn it."},
	{"x:I ordered a new {thing} online and it's already broken.", "y:Send it back, that's what returns are for."},
	{"x:Sorry I went quiet, this week was a lot.", "y:No worries at all."},
	{"x:My {relative} got a {animal} and now every conversation is about the {animal}.", "y:As it should be."},
	{"x:I signed up for a gym in January and went twice.", "y:The classic."},
	{"x:Do you remember the name of that restaurant we went to in {month}?", "y:The one with the tiny tables? No idea."},
	{"x:My {relative} is flying in next month and wants to see everything in one weekend.", "y:Make a list and hide half of it."},
	{"x:I think my office is haunted. The printer starts by itself.", "y:Or IT is messing with you."},
	{"x:The bakery on the corner closed. I'm in mourning.", "y:Nooo. The cinnamon buns!"},
	{"x:Our landlord finally fixed the heating.", "y:Only took him what, four months?"},
	{"x:I've been sleeping terribly lately.", "y:Too much screen time before bed, {X}. Same here."},
	{"x:My {relative} wants everyone to do a family trip to {place} at some point.", "y:That sounds fun. Or chaotic."},
	{"x:Remind me to call the dentist tomorrow.", "y:Noted. I'll nag you."},
	{"x:Is it weird that I like airport food?", "y:Yes. Very."},
	{"x:I started another jigsaw puzzle, a thousand pieces this time.", "y:You have the patience of a saint."},
	{"x:Work has been slow this week, which is nice for a change.", "y:Enjoy it while it lasts."},
	{"x:Did you ever hear back about that parking ticket?", "y:Still waiting. I'm choosing not to think about it."},
	{"x:I went to the farmers market and bought way too many peaches.", "y:Peach pie. Obviously."},
	{"x:I finally cleaned out my closet and found a jacket I forgot I owned.", "y:Free new jacket!"},
	{"x:My {relative} had knee surgery last month and is already back at the gym.", "y:Tough family you have."},
	{"x:The team at work is planning a trip to an escape room.", "y:You'll solve it in ten minutes."},
	{"x:My {relative} just started a new job and already hates the commute.", "y:An hour each way? I'd quit too."},
	{"x:Our building's elevator is broken again.", "y:Stairs are free cardio, {X}."},
	{"x:I burned my hand on the oven tray yesterday.", "y:Ouch! Run it under cold water, not ice."},
	{"x:Did you book anything for the long weekend?", "y:Not yet. Probably just the couch."},
	{"x:The {cuisine} bakery downtown does a breakfast sandwich now.", "y:I'm going tomorrow. Don't stop me."},
	{"x:I keep getting ads for {thing}s since I mentioned one once.", "y:Your phone is listening. Everyone's is."},
	{"x:My {relative} is getting married in {month} and wants me to give a speech.", "y:Keep it short and mention one embarrassing story. Just one."},
	{"x:I walked past our old school today. It's a gym now.", "y:Of course it is."},
	{"x:We finally watched {show}.", "y:And? Worth the hype?", "x:The ending, yes. The middle, no."},
	{"x:The hospital near me is building a new wing and the cranes are everywhere.", "y:At least it's not jackhammers."},
}

// pick draws one of a slot's words.
func (s *smallTalk) pick(slot string) string {
	words := slots[slot]
	return words[s.rng.IntN(len(words))]
}

// pair draws the two speakers of an exchange.
func (s *smallTalk) pair() (x, y string) {
	i := s.rng.IntN(len(s.speakers))
	j := (i + 1 + s.rng.IntN(len(s.speakers)-1)) % len(s.speakers)
	return s.speakers[i], s.speakers[j]
}

// fill replaces the slots of a template line; a slot named twice in one
// exchange gets the same word.
func (s *smallTalk) fill(line string, x, y string, chosen map[string]string) string {
	line = strings.ReplaceAll(strings.ReplaceAll(line, "{X}", x), "{Y}", y)
	for {
		i := strings.IndexByte(line, '{')
		if i < 0 {
			return line
		}
		j := strings.IndexByte(line[i:], '}') + i
		name := line[i+1 : j]
		w, ok := chosen[name]
		if !ok {
			w = s.pick(name)
			chosen[name] = w
		}
		line = line[:i] + w + line[j+1:]
	}
}

// exchange draws an exchange among those used least so far.
func (s *smallTalk) exchange() []said {
	least := s.used[0]
	for _, u := range s.used {
		least = min(least, u)
	}
	var fresh []int
	for i, u := range s.used {
		if u == least {
			fresh = append(fresh, i)
		}
	}
	k := fresh[s.rng.IntN(len(fresh))]
	s.used[k]++
	x, y := s.pair()
	chosen := map[string]string{}
	var out []said
	for _, line := range exchanges[k] {
		who, text, _ := strings.Cut(line, ":")
		speaker := x
		if who == "y" {
			speaker = y
		}
		out = append(out, said{speaker, s.fill(text, x, y, chosen)})
	}
	return out
}

var greetings = [][]string{
	{"x:Hey {Y}! Got a minute?", "y:Always. What's up?"},
	{"x:Morning! How's everything?", "y:Good, busy. You?"},
	{"x:Hiii. Long time no talk.", "y:I know! Catch me up."},
	{"x:Are you around tonight?", "y:For a bit, yes."},
}

var goodbyes = [][]string{
	{"x:Ok, I have to run. Talk soon!", "y:Bye {X}!"},
	{"x:Anyway, dinner's ready. Later!", "y:Enjoy!"},
	{"x:I'm falling asleep, night!", "y:Night night."},
}

// greeting opens a session.
func (s *smallTalk) greeting(i int) []said {
	return s.lines(greetings[i%len(greetings)])
}

// goodbye closes a session.
func (s *smallTalk) goodbye() []said {
	return s.lines(goodbyes[s.rng.IntN(len(goodbyes))])
}

func (s *smallTalk) lines(tmpl []string) []said {
	x, y := s.pair()
	var out []said
	for _, line := range tmpl {
		who, text, _ := strings.Cut(line, ":")
		speaker := x
		if who == "y" {
			speaker = y
		}
		out = append(out, said{speaker, s.fill(text, x, y, map[string]string{})})
	}
	return out
}
