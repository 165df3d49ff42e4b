package llm_test

import (
	"strings"
	"testing"

	"github.com/engram-console/engram/llm"
)

// Issue 13, item 3: a cassette is read through core/input: a billion-laughs
// file is refused before its aliases expand, a device is refused by name,
// and errors never quote the file.
func TestCassettesAreReadSafely(t *testing.T) {
	laughs := "version: 1\na: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n" +
		"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\ninteractions: [*i]\n"
	for name, c := range map[string]struct{ path, want string }{
		"alias bomb": {writeCassette(t, laughs), "line 3, column 8: YAML aliases (*name) are not allowed"},
		"/dev/zero":  {"/dev/zero", "/dev/zero: is a character device"},
		"directory":  {t.TempDir(), "is a directory"},
	} {
		_, err := llm.LoadCassette(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	const secret = "sk-S3CR3TKEY"
	for _, text := range []string{secret + "\n", "version: 1\ninteractions: " + secret + "\n", "version: [" + secret + "\n"} {
		if _, err := llm.LoadCassette(writeCassette(t, text)); err == nil || strings.Contains(err.Error(), "S3CR3T") {
			t.Errorf("the error quotes the file (or there is none): %v", err)
		}
	}
}

func TestCassetteErrorsDoNotQuoteUnknownKeys(t *testing.T) {
	_, err := llm.LoadCassette(writeCassette(t, "version: 1\nroot:$6$S3CR3T:19000: 1\ninteractions: []\n"))
	if err == nil || strings.Contains(err.Error(), "S3CR3T") {
		t.Errorf("the error quotes the file (or there is none): %v", err)
	}
}
