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
	// and no line comes back often; asideUsed does the same for asides.
	used, asideUsed []int
}

func newSmallTalk(rng *rand.Rand, speakers []string) *smallTalk {
	return &smallTalk{rng: rng, speakers: speakers, used: make([]int, len(exchanges)), asideUsed: make([]int, len(asides))}
}

// asideCounts is how many asides a turn of small talk goes on with,
// drawn uniformly from the list: about one on average, so that small
// talk is as long as the news it surrounds (about 17 words a turn).
var asideCounts = []int{0, 0, 0, 0, 1, 1, 1, 1, 1, 2}

// elaborate goes on with a line: a few asides, the least used first,
// never one twice in an exchange (taken notes the ones it has).
func (s *smallTalk) elaborate(line, x, y string, chosen map[string]string, taken map[int]bool) string {
	n := asideCounts[s.rng.IntN(len(asideCounts))]
	for range n {
		least := -1
		for i, u := range s.asideUsed {
			if !taken[i] && (least < 0 || u < least) {
				least = u
			}
		}
		var fresh []int
		for i, u := range s.asideUsed {
			if !taken[i] && u == least {
				fresh = append(fresh, i)
			}
		}
		k := fresh[s.rng.IntN(len(fresh))]
		s.asideUsed[k]++
		taken[k] = true
		line += " " + s.fill(asides[k], x, y, chosen)
	}
	return line
}

// slots are the words small talk's {slots} are drawn from. The friends,
// relatives, pets, shops and places named are other people's: a real
// conversation names as many things in passing as it does in its news.
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
	"place":    {"Denver", "Lisbon", "Toronto", "Chicago", "Bristol", "Portland", "Kyoto", "Boston", "Austin", "Madrid", "Berlin", "Vancouver", "Edinburgh", "Nashville", "Montreal", "Phoenix"},
	"book":     {"a thick fantasy novel", "a biography of a chess player", "a mystery set on a train", "a book about sleep"},
	"sport":    {"football", "basketball", "hockey", "tennis", "baseball"},
	"cuisine":  {"Ethiopian", "Korean", "Georgian", "Peruvian", "Vietnamese"},
	"thing":    {"blender", "lamp", "backpack", "kettle", "pair of headphones", "desk chair"},
	"chore":    {"did laundry", "cleaned the fridge", "fixed a shelf", "sorted old photos", "repotted plants"},
	"month":    {"March", "May", "June", "September", "December"},
	"friend":   {"Sofia", "Raj", "Beth", "Noah", "Ines", "Tariq", "Megan", "Luca", "Owen", "Carla", "Felix", "Zoe", "Mateo", "Greta", "Abby", "Kwame"},
	"friend2":  {"Harriet", "Diego", "Nadia", "Simon", "Lucy", "Omar", "Freya", "Victor", "Paula", "Ibrahim"},
	"pet":      {"Rufus", "Luna", "Mango", "Toby", "Pickles", "Ziggy", "Olive", "Bruno", "Waffles"},
	"shop":     {"Trader Joe's", "the Green Bean café", "Rosa's Deli", "IKEA", "Costco", "Blue Door Books", "Marlowe's Bakery", "Corner Hardware", "Target", "Whole Foods"},
	"street":   {"Elm Street", "Maple Avenue", "Harbor Road", "Oak Lane", "Mill Street", "Station Road"},
	"park":     {"Riverside Park", "Lincoln Park", "the Botanic Gardens", "Fairview Park", "Cedar Hill"},
	"country":  {"Portugal", "Mexico", "Japan", "Greece", "Scotland", "Canada", "Italy", "Vietnam"},
}

// asides are sentences a turn of small talk may go on with: news of
// other people, their pets, trips, jobs and weddings, told in passing.
// Each names someone or somewhere, and many share words with the
// questions, as friends' chatter does.
var asides = []string{
	"{friend} says hi, by the way.",
	"I ran into {friend} at {shop} on Saturday and we talked for an hour by the frozen peas.",
	"{friend} just got back from {place} and would not stop showing me photos of the food.",
	"My {relative} {friend2} called from {place} last night, mostly to complain about the weather.",
	"We took {friend}'s {animal} {pet} to {park} this morning and {pet} rolled in something awful.",
	"{friend} is thinking of moving to {place} for a new role, which would be a big change.",
	"Apparently {friend} and {friend2} got engaged, and the wedding is going to be in {country}.",
	"{friend2} had to take {pet} to the vet again after {pet} ate a sock.",
	"{friend}'s new manager at the office sounds like a nightmare, meetings all day.",
	"I still owe {friend} a birthday present, any ideas?",
	"The new place on {street} does brunch now, {friend} swears by the pancakes.",
	"{friend} hurt a shoulder playing tennis and is stuck doing physio for weeks.",
	"My {relative} wants to book a trip to {country} in {month}, and of course I'm the one planning it.",
	"I picked up coffee at {shop} on the way home and it was somehow closed at four.",
	"{friend2} finally adopted a {animal} from the shelter on {street}, named it {pet}.",
	"{friend} is training for a race in {place} and talks about nothing but splits.",
	"The traffic on {street} was so bad I nearly turned around and went home.",
	"Did I tell you {friend} quit the job at {shop}? Just walked out on a Tuesday.",
	"{friend2} is renting a cabin near {place} for a week and invited half the office.",
	"My {relative} keeps asking when I'm visiting {place} again.",
	"{friend} lent me a book about {country} and I've read three pages in two months.",
	"Remember {friend2}? They opened a little bakery on {street}.",
	"We should all go to {park} when the weather turns, {friend} could bring {pet}.",
	"{friend} is taking a pottery class now too, everyone is.",
	"{friend2} got a new job at the hospital in {place} and starts next month.",
	"Honestly I'm tired of the rain here, {friend} keeps telling me to move to {place}.",
	"{friend}'s sister just had a baby, they named her {friend2}.",
	"I had dinner with {friend} and {friend2} on {street}, the Korean place.",
	"{friend} got lost on the way to {shop}, which is impressive, it's right by the station.",
	"I saw your old roommate {friend2} at {shop}, they said to say hello.",
	"My {relative} sent a postcard from {country}, it took five weeks to arrive.",
	"{friend} is redoing the kitchen and living on takeout from {shop}.",
	"The neighbors on {street} have a new {animal}, {pet}, who howls at the mail carrier.",
	"{friend2} moved into a new neighborhood across town, closer to {park}.",
	"{friend} wants us to run the fun run in {month}. I said maybe, which means no.",
	"Work sent {friend} to {place} for a conference and they came back with a cold.",
}

// exchanges are the small talk templates: "x:" lines are the first
// speaker's, "y:" the other's; {X} and {Y} are their names.
var exchanges = [][]string{
	{"x:How was your weekend, {Y}?", "y:Quiet. I mostly {chore} and watched {show}."},
	{"x:I made {food} last night and it came out {adj}.", "y:Send me the recipe, {X}, I've been living on toast all week."},
	{"x:The weather here has been {weather} all week.", "y:Same here in {place}. I keep forgetting my umbrella."},
	{"x:My {relative} keeps sending me videos of a {animal} that plays the piano.", "y:Honestly that's the best part of the internet, {X}."},
	{"x:Did you finish {show}?", "y:Two episodes left. Don't spoil it, {X}!"},
	{"x:My coworker {friend} just got back from a work trip to {place} and won't stop talking about it.", "y:Work trips are the worst, you see nothing but the hotel. {friend2} says the same."},
	{"x:We finally moved the couch to the other wall and the living room feels twice as big.", "y:Moving furniture is the most underrated form of therapy."},
	{"x:The neighbors' {animal} was loud all night again.", "y:Earplugs, {X}. Trust me, I lived next to {friend2}'s parrot for a year."},
	{"x:There's a birthday party for my {kid} {friend2} this weekend, with a bouncy castle.", "y:Brave. Bring coffee from {shop}."},
	{"x:My knee always aches when it rains.", "y:You sound like my grandfather, {X}."},
	{"x:I'm thinking of taking a {class} class at the library on {street}.", "y:Do it! Those are always fun. {friend} did one last year.", "x:Maybe. If I can find the time."},
	{"x:The city is repaving our street, so it's jackhammers from seven in the morning.", "y:Oof. Work from a café? The Green Bean has good wifi."},
	{"x:I saw a job posting for a {job} at {company} and almost applied for fun.", "y:Ha, the grass is always greener, {X}."},
	{"x:Any good books lately?", "y:I'm halfway through {book}. It's slow but good."},
	{"x:I need a vacation. Even a weekend somewhere with no phone signal.", "y:We should plan one at some point. {country}, maybe?"},
	{"x:Did you watch the {sport} game?", "y:Only the last ten minutes at {friend}'s. What a finish."},
	{"x:{friend} and I tried that new {cuisine} place near the station.", "y:Was it worth the line?", "x:Honestly, yes. Get the soup."},
	{"x:My phone screen cracked again, right outside {shop}.", "y:Get a case, {X}!"},
	{"x:We had a power cut for three hours last night.", "y:Did you at least have candles, {X}?"},
	{"x:My {relative} {friend2} is moving apartments again, third time in two years, this time to {place}.", "y:Some people just like boxes. {friend} is the same."},
	{"x:I spent the whole morning on hold with the bank about a charge from {shop}.", "y:The hold music haunts my dreams."},
	{"x:Wedding season is starting, there are three invitations on my fridge.", "y:That's a lot of gifts to buy. {shop} does gift cards, at least."},
	{"x:I'm trying to drink more water. Day three.", "y:Proud of you, {X}."},
	{"x:Traffic was awful today, there was an accident on {street}.", "y:Glad you're ok, {X}."},
	{"x:I found an old photo of us and {friend} from college.", "y:Oh no. Burn it."},
	{"x:I ordered a new {thing} online and it's already broken.", "y:Send it back, that's what returns are for."},
	{"x:Sorry I went quiet, this week was a lot.", "y:No worries at all, {X}."},
	{"x:My {relative} got a {animal} called {pet} and now every conversation is about {pet}.", "y:As it should be."},
	{"x:I signed up for a gym in January and went twice.", "y:The classic. {friend} did the same thing."},
	{"x:Do you remember the name of that restaurant we went to in {month} with {friend}?", "y:The one with the tiny tables? No idea."},
	{"x:My {relative} is flying in next month and wants to see everything in one weekend.", "y:Make a list and hide half of it, {X}."},
	{"x:I think my office is haunted. The printer starts by itself.", "y:Or Kevin from IT is messing with you."},
	{"x:Marlowe's, the bakery on the corner of {street}, closed. I'm in mourning.", "y:Nooo. The cinnamon buns!"},
	{"x:Our landlord finally fixed the heating.", "y:Only took him what, four months? Classic Mr. Lyle."},
	{"x:I've been sleeping terribly lately.", "y:Too much screen time before bed, {X}. Same here."},
	{"x:My {relative} wants everyone to do a family trip to {place} at some point.", "y:That sounds fun. Or chaotic."},
	{"x:Remind me to call Dr. Patel, the dentist, tomorrow.", "y:Noted. I'll nag you."},
	{"x:Is it weird that I like airport food?", "y:Yes. Very, {X}."},
	{"x:I started another jigsaw puzzle, a thousand pieces this time.", "y:You have the patience of a saint, {X}."},
	{"x:Work has been slow this week, which is nice for a change.", "y:Enjoy it while it lasts, {X}."},
	{"x:Did you ever hear back about that parking ticket?", "y:Still waiting. I'm choosing not to think about it."},
	{"x:I went to the farmers market on {street} and bought way too many peaches.", "y:Peach pie. Obviously."},
	{"x:I finally cleaned out my closet and found a jacket I forgot I owned.", "y:Free new jacket, {X}!"},
	{"x:My {relative} {friend2} had knee surgery last month and is already back at the gym.", "y:Tough family you have, {X}."},
	{"x:The team at work is planning a trip to an escape room, {friend}'s idea of course.", "y:You'll solve it in ten minutes."},
	{"x:My {relative} just started a new job and already hates the commute.", "y:An hour each way? I'd quit too."},
	{"x:Our building's elevator is broken again.", "y:Stairs are free cardio, {X}."},
	{"x:I burned my hand on the oven tray yesterday.", "y:Ouch! Run it under cold water, not ice."},
	{"x:Did you book anything for the long weekend?", "y:Not yet. Probably just the couch, or {friend}'s barbecue."},
	{"x:The {cuisine} bakery downtown does a breakfast sandwich now.", "y:I'm going tomorrow. Don't stop me."},
	{"x:I keep getting ads for {thing}s since I mentioned one once.", "y:Your phone is listening, {X}. Everyone's is."},
	{"x:My {relative} {friend2} is getting married in {month} in {country} and wants me to give a speech.", "y:Keep it short and mention one embarrassing story. Just one."},
	{"x:I walked past our old school today. It's a gym now.", "y:Of course it is. {friend} goes there now."},
	{"x:We finally watched {show}.", "y:And? Worth the hype?", "x:The ending, yes. The middle, no."},
	{"x:St. Mary's, the hospital near me, is building a new wing and the cranes are everywhere.", "y:At least it's not jackhammers, {X}."},
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
	return s.lines(exchanges[k], x, y)
}

var greetings = [][]string{
	{"x:Hey {Y}! Got a minute?", "y:Always, {X}. What's up?"},
	{"x:Morning! How's everything?", "y:Good, busy. You, {X}?"},
	{"x:Hiii. Long time no talk.", "y:I know! Catch me up."},
	{"x:Are you around tonight?", "y:For a bit, yes. {friend} is coming over at nine."},
}

var goodbyes = [][]string{
	{"x:Ok, I have to run. Talk soon!", "y:Bye {X}!"},
	{"x:Anyway, dinner's ready. Later, {Y}!", "y:Enjoy, {X}!"},
	{"x:I'm falling asleep, night!", "y:Night night, {X}."},
}

// greeting opens a session.
func (s *smallTalk) greeting(i int) []said {
	x, y := s.pair()
	return s.lines(greetings[i%len(greetings)], x, y)
}

// goodbye closes a session.
func (s *smallTalk) goodbye() []said {
	g := goodbyes[s.rng.IntN(len(goodbyes))]
	x, y := s.pair()
	return s.lines(g, x, y)
}

// lines fills an exchange's template lines, x and y its speakers, each
// line going on with asides; a slot named twice in the exchange gets the
// same word, so that its asides talk of the same friend.
func (s *smallTalk) lines(tmpl []string, x, y string) []said {
	chosen := map[string]string{}
	taken := map[int]bool{}
	var out []said
	for _, line := range tmpl {
		who, text, _ := strings.Cut(line, ":")
		speaker := x
		if who == "y" {
			speaker = y
		}
		out = append(out, said{speaker, s.elaborate(s.fill(text, x, y, chosen), x, y, chosen, taken)})
	}
	return out
}
