package episodic_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/episodic"
)

// linkPair is one labelled case for the algorithmic scorer: an earlier
// thread (its turns, user and assistant), a new thread's first message
// after gap, and whether a person would say the message continues it.
type linkPair struct {
	name    string
	earlier []string
	message string
	gap     time.Duration
	// older: the earlier thread is not the most recently active one (a
	// back-reference over days, with other threads since).
	older   bool
	related bool
}

// scoreDay is a day's gap.
const scoreDay = 24 * time.Hour

// linkCorpus is written independently of the scorer's lexicon and cues:
// everyday assistant conversations, none of them the seed's weather and
// flight examples. Related pairs are follow-ups with cue words, follow-ups
// without cues that share content, terse follow-ups leaning on the earlier
// thread, and back-references over long gaps; unrelated pairs are topic
// shifts, the same kind of request about something else, and new requests
// that happen to share a common word (or open with a cue).
var linkCorpus = []linkPair{
	// ---- related ----
	{name: "cue: also + them", related: true, gap: 40 * time.Minute,
		earlier: []string{"Can you recommend a good Italian restaurant near Union Square?", "Try Lupa or Via Carota; both are about ten minutes away."},
		message: "Also, do any of them take reservations for 8 people?"},
	{name: "cue: what about + it", related: true, gap: 45 * time.Minute,
		earlier: []string{"How do I reset my router password?", "Hold the reset button for 10 seconds, then log in at 192.168.1.1 with the default password on the sticker."},
		message: "What about the admin login for it?"},
	{name: "shared content: birthday party", related: true, gap: 50 * time.Minute,
		earlier: []string{"My daughter's birthday party is on Saturday, I need ideas for a theme.", "Popular themes for 7-year-olds: unicorns, dinosaurs, a science lab, or a pirate treasure hunt."},
		message: "How many kids should I invite to the birthday party?"},
	{name: "shared content: memory leak", related: true, gap: 2 * time.Hour,
		earlier: []string{"I'm trying to find a memory leak in our Go server.", "Start with pprof: take two heap profiles a few minutes apart and compare them."},
		message: "The leak only shows up when the server is under heavy load."},
	{name: "back-reference after days: kitchen renovation", related: true, gap: 5 * scoreDay, older: true,
		earlier: []string{"Help me plan a budget for the kitchen renovation.", "Plan for cabinets (about 30%), labour (20%), appliances (15%) and a 10% contingency."},
		message: "Going back to the kitchen renovation, the contractor quoted $18,000."},
	{name: "dangling that + recipe", related: true, gap: 35 * time.Minute,
		earlier: []string{"What's a good recipe for banana bread?", "Mash 3 ripe bananas, mix with 1/3 cup melted butter, 3/4 cup sugar, an egg, and 1.5 cups flour; bake at 350°F for an hour."},
		message: "Can I use honey instead of sugar in that recipe?"},
	{name: "no shared word: move that reservation", related: true, gap: time.Hour,
		earlier: []string{"Book a table for two at Nopa on Friday at 7.", "Done: a table for two at Nopa, Friday 7:00 pm."},
		message: "Can you move that to 8pm instead?"},
	{name: "same topic follow-up: strep throat", related: true, gap: 40 * time.Minute,
		earlier: []string{"What are the symptoms of strep throat?", "Sudden sore throat, pain when swallowing, fever, and swollen lymph nodes."},
		message: "Should I see a doctor if the fever and sore throat last more than two days?"},
	{name: "cue: and how do I say", related: true, gap: 45 * time.Minute,
		earlier: []string{"How do you say 'good morning' in Japanese?", "Ohayō gozaimasu (おはようございます)."},
		message: "And how do I say good night?"},
	{name: "entity + pronoun: the Celtics", related: true, gap: time.Hour,
		earlier: []string{"When is the next Lakers game?", "Thursday against the Celtics at 7:30 pm."},
		message: "Who won the last time they played the Celtics?"},
	{name: "shared content: compound interest", related: true, gap: 2 * time.Hour,
		earlier: []string{"Explain how compound interest works.", "Interest is added to the principal, so each period earns interest on the interest already earned."},
		message: "So if I invest $5,000 at 6% compound interest for 10 years, what do I end up with?"},
	{name: "follow-up in the same situation: cancelled flight", related: true, gap: 50 * time.Minute,
		earlier: []string{"My flight to Denver got cancelled, what are my options?", "Ask the airline to rebook you on the next flight, or request a full refund."},
		message: "United says they can rebook me tomorrow morning, should I take it?"},
	{name: "shared content: Spanish exercises", related: true, gap: 3 * time.Hour,
		earlier: []string{"I'm learning Spanish, can you give me some verb conjugation exercises?", "Conjugate hablar, comer and vivir in the present tense for yo, tú and nosotros."},
		message: "Can you give me more Spanish exercises, this time with irregular verbs?"},
	{name: "shared content: email to the landlord", related: true, gap: time.Hour,
		earlier: []string{"Draft an email to my landlord about the broken heater.", "Dear Mr. Alvarez, the heater in unit 4B has not worked since Monday..."},
		message: "Make the email to my landlord a bit more polite."},
	{name: "back-reference: packing list", related: true, gap: scoreDay, older: true,
		earlier: []string{"What should I pack for a week of hiking in Patagonia?", "Layers, a waterproof shell, trekking poles, a warm sleeping bag and sunscreen."},
		message: "Remember the Patagonia packing list? Add a water filter to it."},
	{name: "cue: what about (eggs)", related: true, gap: 40 * time.Minute,
		earlier: []string{"How long should I boil eggs for soft yolks?", "Six and a half minutes from boiling, then straight into ice water."},
		message: "What about hard-boiled ones?"},
	{name: "shared content: quarterly report", related: true, gap: 3 * time.Hour,
		earlier: []string{"Our team's quarterly report is due Friday; help me outline it.", "Suggested outline: summary, key metrics, wins, risks, next quarter's goals."},
		message: "For the quarterly report, which metrics should go in the first section?"},
	{name: "shared content: limping cat", related: true, gap: time.Hour,
		earlier: []string{"Find me a vet near me that's open on Sundays, my cat is limping.", "Bayview Animal Clinic is open Sundays 9 to 5, about 2 miles away."},
		message: "The cat is still limping, should I go to an emergency vet?"},
	{name: "dangling which one: phone cameras", related: true, gap: 45 * time.Minute,
		earlier: []string{"Compare the cameras of the iPhone 16 and the Pixel 9.", "The Pixel is better in low light; the iPhone records better video."},
		message: "Which one has better battery life?"},
	{name: "shared entity: Dune", related: true, gap: 2 * time.Hour,
		earlier: []string{"What's the plot of the first Dune book?", "Paul Atreides and his family take over the desert planet Arrakis, the only source of the spice."},
		message: "Is the second Dune book as good as the first?"},
	{name: "shared content after a day: workout plan", related: true, gap: scoreDay,
		earlier: []string{"Set up a weekly workout plan for me, 3 days a week.", "Monday: strength. Wednesday: intervals. Friday: strength and core."},
		message: "Can we swap the Wednesday workout for swimming?"},
	{name: "cue: oh, and (networking)", related: true, gap: 35 * time.Minute,
		earlier: []string{"Explain the difference between TCP and UDP.", "TCP is connection-oriented and reliable; UDP sends datagrams without delivery guarantees."},
		message: "Oh, and where does QUIC fit in?"},
	{name: "there + shared content: tipping", related: true, gap: 50 * time.Minute,
		earlier: []string{"How much should I tip a taxi driver in Mexico City?", "Taxi drivers there don't expect a tip; rounding up is plenty."},
		message: "Is a tip expected at restaurants there too?"},
	{name: "shared content: dog breeds for apartments", related: true, gap: 4 * time.Hour,
		earlier: []string{"I want to adopt a dog, which breeds are good for apartments?", "Cavalier King Charles spaniels, greyhounds and pugs adapt well to apartments."},
		message: "Are French bulldogs good for apartments too?"},
	{name: "back-reference: wedding toast", related: true, gap: 2 * scoreDay, older: true,
		earlier: []string{"Help me write a toast for my brother's wedding.", "Open with a story, maybe the one about his first car, then thank the couple's parents."},
		message: "You suggested a joke about his first car for the wedding toast, can you make it shorter?"},
	{name: "cue: and + other museum", related: true, gap: 40 * time.Minute,
		earlier: []string{"What time does the Louvre open on Mondays?", "The Louvre opens at 9 am on Mondays; it is closed on Tuesdays."},
		message: "And the Musée d'Orsay?"},
	{name: "cue: and + a number alone", related: true, gap: 35 * time.Minute,
		earlier: []string{"Convert 350 Fahrenheit to Celsius.", "350°F is about 177°C."},
		message: "And 425?"},
	{name: "shared content: sourdough starter", related: true, gap: time.Hour,
		earlier: []string{"My sourdough starter smells like acetone, is it dead?", "No, it's hungry: feed it twice a day for a couple of days."},
		message: "I fed the starter twice today and it's bubbling again."},
	{name: "shared person: call with Priya", related: true, gap: 45 * time.Minute,
		earlier: []string{"Schedule a call with Priya next Tuesday about the Q3 roadmap.", "Booked: call with Priya, Tuesday 2:00 pm, \"Q3 roadmap\"."},
		message: "Add Marcus to the call with Priya as well."},
	{name: "back-reference: as we discussed (mortgage)", related: true, gap: 3 * scoreDay, older: true,
		earlier: []string{"Should I choose a fixed or a variable rate mortgage?", "With rates expected to fall, a variable rate may cost less, but a fixed rate gives certainty."},
		message: "As we discussed, I'm leaning towards the fixed rate mortgage. How long should I lock it for?"},

	// ---- unrelated ----
	{name: "topic shift: banana bread → passport", gap: 45 * time.Minute,
		earlier: []string{"What's a good recipe for banana bread?", "Mash 3 ripe bananas, mix with butter, sugar, an egg and flour; bake at 350°F for an hour."},
		message: "How do I renew my passport?"},
	{name: "topic shift: interest → sci-fi novel", gap: time.Hour,
		earlier: []string{"Explain how compound interest works.", "Interest is added to the principal, so each period earns interest on the interest already earned."},
		message: "Recommend a sci-fi novel for a long train ride."},
	{name: "common word time: game → pharmacy", gap: 50 * time.Minute,
		earlier: []string{"What time is the Lakers game tonight?", "Tip-off is at 7:30 pm."},
		message: "What time does the pharmacy on Main Street close?"},
	{name: "same request, other city: hotels", gap: 2 * time.Hour,
		earlier: []string{"Find me a hotel in Lisbon for next weekend.", "Memmo Alfama has rooms from €180 a night."},
		message: "Find me a hotel in Chicago for a conference in March."},
	{name: "topic shift after a day: party → capital", gap: scoreDay,
		earlier: []string{"My daughter's birthday party is on Saturday, I need ideas for a theme.", "Unicorns, dinosaurs, a science lab, or a pirate treasure hunt."},
		message: "What's the capital of Australia?"},
	{name: "topic shift: router → haiku", gap: 40 * time.Minute,
		earlier: []string{"How do I reset my router password?", "Hold the reset button for 10 seconds, then log in with the default password."},
		message: "Write a haiku about autumn leaves."},
	{name: "common words help me: cover letter → faucet", gap: 3 * time.Hour,
		earlier: []string{"Can you help me write a cover letter for a marketing job?", "Sure: open with the role, then two achievements that match the posting."},
		message: "Can you help me fix a leaky faucet?"},
	{name: "topic shift: strep throat → World Cup", gap: 45 * time.Minute,
		earlier: []string{"What are the symptoms of strep throat?", "Sudden sore throat, pain when swallowing, fever, and swollen lymph nodes."},
		message: "Who won the World Cup in 2018?"},
	{name: "topic shift: conversion → Fed news", gap: 2 * time.Hour,
		earlier: []string{"Convert 350 Fahrenheit to Celsius.", "350°F is about 177°C."},
		message: "Summarize the news about the Fed's rate decision."},
	{name: "same request, other person: emails", gap: time.Hour,
		earlier: []string{"Draft an email to my landlord about the broken heater.", "Dear Mr. Alvarez, the heater in unit 4B has not worked since Monday..."},
		message: "Draft an email to my professor asking for an extension on the essay."},
	{name: "topic shift after a day: Lakers → podcasts", gap: scoreDay,
		earlier: []string{"When is the next Lakers game?", "Thursday against the Celtics at 7:30 pm."},
		message: "Any good podcasts about ancient Rome?"},
	{name: "common words what's the best: packing → cast iron", gap: 35 * time.Minute,
		earlier: []string{"What's the best way to pack for a week of hiking in Patagonia?", "Layers, a waterproof shell, trekking poles and a warm sleeping bag."},
		message: "What's the best way to clean a cast iron pan?"},
	{name: "common word difference: TCP/UDP → baking soda", gap: time.Hour,
		earlier: []string{"Explain the difference between TCP and UDP.", "TCP is connection-oriented and reliable; UDP sends datagrams without guarantees."},
		message: "What's the difference between baking soda and baking powder?"},
	{name: "common words give me: Spanish → workout", gap: 2 * time.Hour,
		earlier: []string{"I'm learning Spanish, can you give me some verb conjugation exercises?", "Conjugate hablar, comer and vivir in the present tense."},
		message: "Give me a 20 minute bodyweight workout."},
	{name: "topic shift: table booking → gift", gap: 45 * time.Minute,
		earlier: []string{"Book a table for two at Nopa on Friday at 7.", "Done: a table for two at Nopa, Friday 7:00 pm."},
		message: "What's a good gift for my dad? He likes fishing."},
	{name: "topic shift after a day: phones → red wine stain", gap: scoreDay,
		earlier: []string{"Compare the cameras of the iPhone 16 and the Pixel 9.", "The Pixel is better in low light; the iPhone records better video."},
		message: "How do I get red wine out of a carpet?"},
	{name: "pronoun it, new subject: sourdough → rain", gap: 3 * time.Hour,
		earlier: []string{"My sourdough starter smells like acetone, is it dead?", "No, it's hungry: feed it twice a day."},
		message: "Is it going to rain in Seattle tomorrow?"},
	{name: "topic shift: bike tire → stretching", gap: 2 * time.Hour,
		earlier: []string{"How do I fix a flat bike tire?", "Remove the wheel, lever the tire off, find the puncture and patch or replace the tube."},
		message: "What's a good stretching routine after running?"},
	{name: "common word plan, days later", gap: 5 * scoreDay, older: true,
		earlier: []string{"Help me plan my week: team meetings Monday, dentist Wednesday.", "Block Monday morning for meetings and leave Wednesday afternoon free."},
		message: "Plan a 3-day itinerary for Rome."},
	{name: "topic shift: mountain → reminder", gap: 40 * time.Minute,
		earlier: []string{"What's the tallest mountain in Africa?", "Kilimanjaro, at 5,895 m."},
		message: "Set a reminder to call mom at 6pm."},
	{name: "common words what can I: laptop fan → chickpeas", gap: 50 * time.Minute,
		earlier: []string{"My laptop fan is really loud, what can I do?", "Clean the vents with compressed air and check which process is using the CPU."},
		message: "What can I cook with chickpeas and spinach?"},
	{name: "cue opening, new subject: novel → printer ink", gap: 35 * time.Minute,
		earlier: []string{"Who wrote Pride and Prejudice?", "Jane Austen, in 1813."},
		message: "Oh, and can you order more printer ink?"},
	{name: "topic shift: package → museum hours", gap: 2 * time.Hour,
		earlier: []string{"Where is my Amazon package? The order number is 112-5512.", "It is out for delivery and should arrive by 8 pm."},
		message: "What are the opening hours of the Natural History Museum?"},
	{name: "common word score: match → GRE", gap: scoreDay,
		earlier: []string{"What's the score of the Arsenal match?", "Arsenal lead 2-1 in the 70th minute."},
		message: "What score do I need on the GRE for a top program?"},
	{name: "same request, other thing: recommend", gap: 45 * time.Minute,
		earlier: []string{"Recommend a good running shoe for flat feet.", "The Brooks Adrenaline and the ASICS Kayano both give stability."},
		message: "Recommend a good book on stoicism."},
	{name: "same verb, other service: cancel", gap: time.Hour,
		earlier: []string{"How do I cancel my Netflix subscription?", "Go to Account, then Cancel Membership."},
		message: "How do I cancel a meeting invite in Outlook?"},
	{name: "shared weekday only: invoice → farmers market", gap: 2 * scoreDay, older: true,
		earlier: []string{"Send the invoice to Acme Corp by Friday.", "Scheduled: invoice #2031 to Acme Corp, Friday."},
		message: "Is the farmers market open on Friday?"},
	{name: "topic shift: population → cold brew", gap: 4 * time.Hour,
		earlier: []string{"What's the population of Canada?", "About 40 million people."},
		message: "How do I make cold brew coffee?"},
	{name: "common word name: puppy → bakery", gap: time.Hour,
		earlier: []string{"Help me name my new puppy, she's a golden retriever.", "How about Maple, Honey or Sunny?"},
		message: "What's a good name for a bakery?"},
	{name: "topic shift: exchange rate → bedtime story", gap: 50 * time.Minute,
		earlier: []string{"What's the exchange rate from euros to dollars?", "1 euro is about 1.08 US dollars today."},
		message: "Write a short bedtime story about a dragon."},
}

// linkHeldOut was written after score.go was tuned on linkCorpus, and not
// tuned on: it measures how the tuning generalizes.
var linkHeldOut = []linkPair{
	// ---- related ----
	{name: "held-out: cue what about + other size", related: true, gap: 40 * time.Minute,
		earlier: []string{"How much is a large pepperoni pizza at Tony's?", "A large pepperoni is $18.50."},
		message: "What about a medium?"},
	{name: "held-out: shared content, tax return", related: true, gap: 3 * time.Hour,
		earlier: []string{"Which documents do I need for my tax return?", "Your W-2, 1099 forms, mortgage interest statement and last year's return."},
		message: "Can I still file my tax return electronically after the deadline?"},
	{name: "held-out: back-reference, the spreadsheet", related: true, gap: 4 * scoreDay, older: true,
		earlier: []string{"Build me a spreadsheet formula that sums sales by region.", "Use =SUMIF(B:B, \"West\", C:C) for each region."},
		message: "Last time you gave me a SUMIF formula for sales by region; how do I add a second condition?"},
	{name: "held-out: pronoun + shared name", related: true, gap: time.Hour,
		earlier: []string{"Tell me about the Golden Gate Bridge.", "It opened in 1937 and spans 1.7 miles across the strait."},
		message: "Can you walk across the Golden Gate Bridge?"},
	{name: "held-out: and + time", related: true, gap: 35 * time.Minute,
		earlier: []string{"Is the Apple Store on Fifth Avenue open today?", "Yes, it's open 24 hours."},
		message: "And on Sunday?"},
	{name: "held-out: shared content, thesis chapter", related: true, gap: 6 * time.Hour,
		earlier: []string{"Help me structure the literature review chapter of my thesis.", "Group the studies by method, then by finding, and end with the gap your thesis fills."},
		message: "How long should the literature review chapter be?"},
	{name: "held-out: also + it", related: true, gap: 45 * time.Minute,
		earlier: []string{"My car makes a grinding noise when I brake.", "That usually means worn brake pads; have them checked soon."},
		message: "Also, is it safe to drive it to work tomorrow?"},
	{name: "held-out: shared content, vacation days", related: true, gap: 2 * time.Hour,
		earlier: []string{"How many vacation days do I have left this year?", "You have 12 vacation days left."},
		message: "Can I carry unused vacation days over to next year?"},
	{name: "held-out: remember + shared content", related: true, gap: 10 * scoreDay, older: true,
		earlier: []string{"Give me a beginner plan for running a 5k.", "Week 1: alternate 1 minute running and 2 minutes walking, three times a week."},
		message: "Remember the 5k running plan? I finished week 3, what's next?"},
	{name: "held-out: shared names, the Smiths' visit", related: true, gap: time.Hour,
		earlier: []string{"The Smiths are visiting on Saturday; suggest a dinner menu.", "Roast chicken, a green salad and a lemon tart."},
		message: "Jenny Smith is vegetarian, can you change the dinner menu?"},
	{name: "held-out: how about + other option", related: true, gap: 50 * time.Minute,
		earlier: []string{"Is Spotify Premium worth it for a family of four?", "The Family plan is $19.99 a month for up to six accounts."},
		message: "How about YouTube Music?"},
	{name: "held-out: shared content, garden", related: true, gap: scoreDay,
		earlier: []string{"When should I plant tomatoes in my garden?", "After the last frost, when nights stay above 50°F."},
		message: "Do tomatoes in the garden need full sun?"},
	{name: "held-out: you mentioned", related: true, gap: 2 * scoreDay, older: true,
		earlier: []string{"What can I do about my back pain when sitting all day?", "Try a lumbar cushion, stand up every 30 minutes and do cat-cow stretches."},
		message: "You mentioned cat-cow stretches for back pain, how many should I do?"},
	{name: "held-out: shared content, lease", related: true, gap: 3 * time.Hour,
		earlier: []string{"Can my landlord raise the rent in the middle of a lease?", "Not usually: a fixed-term lease locks the rent until it ends."},
		message: "What if my lease is month-to-month?"},
	{name: "held-out: same situation, no shared word", related: true, gap: 40 * time.Minute,
		earlier: []string{"My toddler has a rash on her arms after the beach.", "It may be heat rash; keep her cool and watch for fever."},
		message: "She also has little red bumps on her back now."},
	{name: "held-out: shared content, certificate", related: true, gap: time.Hour,
		earlier: []string{"Our TLS certificate expires next week, how do I renew it with certbot?", "Run certbot renew, then reload nginx."},
		message: "Certbot renew failed with a rate limit error."},
	{name: "held-out: oh and + dangling it", related: true, gap: 35 * time.Minute,
		earlier: []string{"How do I make a cappuccino without a machine?", "Froth hot milk in a jar by shaking it, then pour over strong coffee."},
		message: "Oh, and can I do it with oat milk?"},
	{name: "held-out: shared content, job interview", related: true, gap: 5 * time.Hour,
		earlier: []string{"I have a job interview at Stripe on Thursday, help me prepare.", "Expect a system design round and questions about payments."},
		message: "What questions should I ask the interviewer at Stripe?"},
	{name: "held-out: shared content, knitting", related: true, gap: 2 * time.Hour,
		earlier: []string{"How do I cast on for a knitted scarf?", "Use the long-tail cast on with about 40 stitches."},
		message: "My scarf stitches are too tight, what am I doing wrong?"},
	{name: "held-out: and + other person", related: true, gap: 45 * time.Minute,
		earlier: []string{"What's Maria's phone number?", "Maria Lopez: 555-0142."},
		message: "And David's?"},

	// ---- unrelated ----
	{name: "held-out: shift, pizza → visa", gap: 2 * time.Hour,
		earlier: []string{"How much is a large pepperoni pizza at Tony's?", "A large pepperoni is $18.50."},
		message: "Do I need a visa to visit Vietnam?"},
	{name: "held-out: common word need, tax → birthday cake", gap: 3 * time.Hour,
		earlier: []string{"Which documents do I need for my tax return?", "Your W-2, 1099 forms and last year's return."},
		message: "What do I need to bake a chocolate birthday cake?"},
	{name: "held-out: same request, other thing: formula", gap: scoreDay,
		earlier: []string{"Build me a spreadsheet formula that sums sales by region.", "Use =SUMIF for each region."},
		message: "What's the formula for the area of a circle?"},
	{name: "held-out: shift, bridge → lunch", gap: time.Hour,
		earlier: []string{"Tell me about the Golden Gate Bridge.", "It opened in 1937 and spans 1.7 miles."},
		message: "What should I pack for my kids' school lunch?"},
	{name: "held-out: same request, other store", gap: 3 * time.Hour,
		earlier: []string{"Is the Apple Store on Fifth Avenue open today?", "Yes, it's open 24 hours."},
		message: "Is the Home Depot on Route 9 open today?"},
	{name: "held-out: shift, thesis → car insurance", gap: 6 * time.Hour,
		earlier: []string{"Help me structure the literature review chapter of my thesis.", "Group the studies by method, then by finding."},
		message: "Compare car insurance quotes from Geico and Progressive."},
	{name: "held-out: shift with it, brakes → movie", gap: 2 * time.Hour,
		earlier: []string{"My car makes a grinding noise when I brake.", "That usually means worn brake pads."},
		message: "Is it worth watching Oppenheimer in IMAX?"},
	{name: "held-out: common word days, vacation → shipping", gap: 2 * time.Hour,
		earlier: []string{"How many vacation days do I have left this year?", "You have 12 vacation days left."},
		message: "How many days does shipping to Canada take?"},
	{name: "held-out: shift after days, 5k → mortgage", gap: 10 * scoreDay, older: true,
		earlier: []string{"Give me a beginner plan for running a 5k.", "Week 1: alternate running and walking."},
		message: "What documents does a mortgage pre-approval need?"},
	{name: "held-out: shift, dinner menu → printer", gap: time.Hour,
		earlier: []string{"The Smiths are visiting on Saturday; suggest a dinner menu.", "Roast chicken, a green salad and a lemon tart."},
		message: "Why does my printer keep jamming?"},
	{name: "held-out: cue opening, new request", gap: 50 * time.Minute,
		earlier: []string{"Is Spotify Premium worth it for a family of four?", "The Family plan is $19.99 a month."},
		message: "Also, remind me to water the plants at 6pm."},
	{name: "held-out: shift after a day, garden → laptop", gap: scoreDay,
		earlier: []string{"When should I plant tomatoes in my garden?", "After the last frost."},
		message: "Which laptop is best for video editing under $1,500?"},
	{name: "held-out: common word pain, back → password", gap: 2 * scoreDay, older: true,
		earlier: []string{"What can I do about my back pain when sitting all day?", "Try a lumbar cushion and stand up every 30 minutes."},
		message: "Changing my password every month is a pain, is there a better way?"},
	{name: "held-out: shift, lease → chess", gap: 3 * time.Hour,
		earlier: []string{"Can my landlord raise the rent in the middle of a lease?", "Not usually."},
		message: "Teach me a good chess opening for beginners."},
	{name: "held-out: shift, rash → moving", gap: 4 * time.Hour,
		earlier: []string{"My toddler has a rash on her arms after the beach.", "It may be heat rash; keep her cool."},
		message: "How much does it cost to hire movers for a two-bedroom apartment?"},
	{name: "held-out: same word renew, certificate → library book", gap: scoreDay,
		earlier: []string{"Our TLS certificate expires next week, how do I renew it with certbot?", "Run certbot renew, then reload nginx."},
		message: "Can I renew a library book online?"},
	{name: "held-out: common word milk, cappuccino → grocery list", gap: 5 * time.Hour,
		earlier: []string{"How do I make a cappuccino without a machine?", "Froth hot milk in a jar, then pour over strong coffee."},
		message: "Add eggs, bread and milk to my grocery list."},
	{name: "held-out: same request, other company", gap: 2 * scoreDay, older: true,
		earlier: []string{"I have a job interview at Stripe on Thursday, help me prepare.", "Expect a system design round."},
		message: "I have a job interview at Netflix next month, what do they ask?"},
	{name: "held-out: shift, knitting → solar panels", gap: 2 * time.Hour,
		earlier: []string{"How do I cast on for a knitted scarf?", "Use the long-tail cast on."},
		message: "Are solar panels worth it in Oregon?"},
	{name: "held-out: shift, phone number → song", gap: 45 * time.Minute,
		earlier: []string{"What's Maria's phone number?", "Maria Lopez: 555-0142."},
		message: "What's the name of the song that goes 'here comes the sun'?"},
}

// linkMetrics is how the scorer did on a set of pairs at the default
// threshold.
type linkMetrics struct {
	related, unrelated, tp, fp, tn, fn int
	accuracy, precision, recall        float64
}

func scoreCorpus(t *testing.T, pairs []linkPair) linkMetrics {
	t.Helper()
	now := t0
	var m linkMetrics
	for _, p := range pairs {
		if p.related {
			m.related++
		} else {
			m.unrelated++
		}
		score, sig := episodic.Score(p.message, episodic.CandidateText{
			Text: strings.Join(p.earlier, "\n"), LastActive: now.Add(-p.gap), MostRecent: !p.older,
		}, now)
		link := score >= episodic.DefaultThreshold
		switch {
		case link && p.related:
			m.tp++
		case link:
			m.fp++
		case p.related:
			m.fn++
		default:
			m.tn++
		}
		if link != p.related {
			t.Logf("MISS %-58s related=%v score=%.2f keywords=%v entities=%v topics=%v cues=%v clash=%v/%v",
				p.name, p.related, score, sig.Keywords, sig.Entities, sig.Topics, sig.Cues, sig.EntityClash, sig.TopicClash)
		}
	}
	m.accuracy = float64(m.tp+m.tn) / float64(max(len(pairs), 1))
	m.precision = float64(m.tp) / float64(max(m.tp+m.fp, 1))
	m.recall = float64(m.tp) / float64(max(m.tp+m.fn, 1))
	t.Logf("%d pairs (%d related, %d unrelated): accuracy %.3f, precision %.3f, recall %.3f (tp %d, fp %d, tn %d, fn %d)",
		len(pairs), m.related, m.unrelated, m.accuracy, m.precision, m.recall, m.tp, m.fp, m.tn, m.fn)
	return m
}

// TestScorerGeneralizes scores both corpora at the default threshold and
// requires 85% accuracy on each; it logs every misclassified pair with its
// score and signals.
func TestScorerGeneralizes(t *testing.T) {
	for _, set := range []struct {
		name  string
		pairs []linkPair
		min   int // of each label
	}{{"corpus", linkCorpus, 25}, {"held-out", linkHeldOut, 20}} {
		t.Run(set.name, func(t *testing.T) {
			m := scoreCorpus(t, set.pairs)
			if m.related < set.min || m.unrelated < set.min {
				t.Fatalf("%d related and %d unrelated pairs; want at least %d of each", m.related, m.unrelated, set.min)
			}
			if m.accuracy < 0.85 {
				t.Errorf("accuracy %.3f < 0.85", m.accuracy)
			}
		})
	}
}

// TestScorerSeedOutcomes: the seed's algorithmic outcomes.
func TestScorerSeedOutcomes(t *testing.T) {
	at := func(hhmm string) time.Time {
		d, _ := time.Parse("15:04", hhmm)
		return time.Date(t0.Year(), t0.Month(), t0.Day(), d.Hour(), d.Minute(), 0, 0, time.UTC)
	}
	cases := []struct {
		name     string
		message  string
		earlier  string
		last     time.Time
		now      time.Time
		older    bool
		min, max float64 // the score must be in [min, max)
	}{
		{"3.1 temporal follow-up", "Oh, and what is it on Thursday?", "What's the weather in New York?\nWhat about next week?",
			at("10:15"), at("10:45"), false, 0.7, 1.01},
		{"3.2 unrelated request", "Book me a flight to Tokyo", "What's the weather in New York?",
			at("10:00"), at("10:30"), false, 0, 0.7},
		{"3.2e the algorithm misses it", "What's the best time to visit?", "I'm planning a trip to Paris",
			at("10:00"), at("10:45"), false, 0, 0.7},
		{"3.6 both cities, New York", "What about weather in both cities?", "Weather in New York",
			at("10:00"), at("10:45"), true, 0.7, 1.01},
		{"3.6 both cities, Boston", "What about weather in both cities?", "Weather in Boston",
			at("10:10"), at("10:45"), false, 0.7, 1.01},
		{"7.3 a week-old thread", "Remember when we talked about New York weather?", "Weather in New York",
			at("10:00").Add(-7 * scoreDay), at("10:00"), false, 0.7, 1.01},
		{"3.2d the algorithm links another city", "What about the weather in Boston?", "What's the weather in New York?",
			at("10:00"), at("10:45"), false, 0.7, 1.01},
	}
	for _, c := range cases {
		score, sig := episodic.Score(c.message, episodic.CandidateText{Text: c.earlier, LastActive: c.last, MostRecent: !c.older}, c.now)
		if score < c.min || score >= c.max {
			t.Errorf("%s: Score(%q | %q) = %.2f, want in [%.2f, %.2f); signals %+v", c.name, c.message, c.earlier, score, c.min, c.max, sig)
		}
	}
	// 3.1's signals: the keywords and entities the seed names.
	_, sig := episodic.Score("Oh, and what is it on Thursday?", episodic.CandidateText{Text: "What's the weather in New York?\nWhat about next week?", LastActive: at("10:15"), MostRecent: true}, at("10:45"))
	if len(sig.Cues) == 0 || sig.GapMinutes != 30 || !sig.MostRecent {
		t.Errorf("3.1 signals %+v: want a cue, a 30 min gap, most recent", sig)
	}
}

// FuzzScore: the scorer never panics, stays in [0, 1], and is deterministic.
func FuzzScore(f *testing.F) {
	for _, p := range append(slices.Clone(linkCorpus), linkHeldOut...) {
		f.Add(p.message, strings.Join(p.earlier, "\n"), int64(p.gap/time.Minute), !p.older)
	}
	f.Add("", "", int64(0), true)
	f.Add("Oh, and what is it on Thursday?", "What's the weather in New York?", int64(-30), false)
	f.Add("both both both", "\x00\xff", int64(math.MaxInt32), true)
	f.Add("Remember when we talked about  ?", "🚀 東京 Zoë", int64(1<<40), false)
	f.Fuzz(func(t *testing.T, message, earlier string, gapMinutes int64, mostRecent bool) {
		now := t0
		gap := time.Duration(gapMinutes%(1<<30)) * time.Minute // keep clear of Duration overflow
		cand := episodic.CandidateText{Text: earlier, LastActive: now.Add(-gap), MostRecent: mostRecent}
		s1, sig1 := episodic.Score(message, cand, now)
		s2, sig2 := episodic.Score(message, cand, now)
		if math.IsNaN(s1) || s1 < 0 || s1 > 1 {
			t.Fatalf("Score(%q | %q, gap %v) = %v, out of [0, 1]", message, earlier, gap, s1)
		}
		if s1 != s2 || fmt.Sprintf("%+v", sig1) != fmt.Sprintf("%+v", sig2) {
			t.Fatalf("Score is not deterministic: %v %+v then %v %+v", s1, sig1, s2, sig2)
		}
		if sig1.GapMinutes < 0 || sig1.Recency < 0 || sig1.Recency > 1 {
			t.Fatalf("signals out of range: %+v", sig1)
		}
	})
}
