package retrieval

import (
	"slices"
	"testing"
)

func TestAnalyzerStemsLowerCasesAndDropsStopWords(t *testing.T) {
	a := NewAnalyzer()
	got := a.Terms("The dogs were running to the parks")
	want := []string{"dog", "run", "park"}
	if !slices.Equal(got, want) {
		t.Fatalf("Terms = %v, want %v", got, want)
	}
}

func TestAnalyzerKeepsNamesWhole(t *testing.T) {
	a := NewAnalyzer("James")
	a.Learn("We went with Pepper to the beach.")
	// "James" would stem to "jame"; a learnt name opening a sentence
	// stays whole, and a possessive is the name.
	got := a.Terms("James walked. Pepper's bowl. Finished with Kenji's help")
	want := []string{"james", "walk", "pepper", "bowl", "finish", "kenji", "help"}
	if !slices.Equal(got, want) {
		t.Fatalf("Terms = %v, want %v", got, want)
	}
	if !a.IsName("pepper") || a.IsName("finish") {
		t.Fatalf("IsName: pepper %v, finish %v", a.IsName("pepper"), a.IsName("finish"))
	}
}

func TestASpeakersNameIsANameWhereverItStands(t *testing.T) {
	a := NewAnalyzer("Dr. Amadi", "user")
	got := a.Terms("Amadis are rare. Amadi said so, and the user agreed")
	want := []string{"amadi", "rare", "amadi", "said", "user", "agre"}
	if !slices.Equal(got, want) || a.IsName("user") {
		t.Fatalf("Terms = %v, want %v (user is no name: %v)", got, want, a.IsName("user"))
	}
}

func TestAnalyzerKeepsNumbersAsWritten(t *testing.T) {
	got := NewAnalyzer().Terms("finished in 1:58, room 4B")
	want := []string{"finish", "1", "58", "room", "4b"}
	if !slices.Equal(got, want) {
		t.Fatalf("Terms = %v, want %v", got, want)
	}
}

func TestAnalyzerDropsChatContractions(t *testing.T) {
	if got := NewAnalyzer().Terms("I'm sure it's fine, don't worry"); !slices.Equal(got, []string{"sure", "fine", "worri"}) {
		t.Fatalf("Terms = %v", got)
	}
}
