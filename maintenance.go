package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/storage"
)

// Exit statuses for a data directory in trouble (docs/batch.md, README).
const (
	exitDamaged = 3 // a file of the data directory is damaged (refused at open, or found by engram check)
	exitFull    = 4 // the data directory's file system is full: engram refused to write
)

// storageExit is the exit status for an error opening or using the store:
// damaged and full directories have their own, anything else is exitUsage.
func storageExit(err error) int {
	switch {
	case errors.Is(err, storage.ErrDamaged):
		return exitDamaged
	case errors.Is(err, storage.ErrFull):
		return exitFull
	}
	return exitUsage
}

// maintenance lists the subcommands that look after a data directory.
var maintenance = map[string]struct {
	usage, help string
	args        int // positional arguments (a FILE)
	run         func(dir, file string, repair bool, stdout io.Writer) error
}{
	"check": {"engram check [--data DIR] [--repair]",
		"Verifies the data directory: every table's and every value's checksum, reading every key,\n" +
			"then every subsystem's records (each cortex item's hash-chained audit trail).\n" +
			"With --repair, a damaged write-ahead or value log is cut at the damage, and embedding keys that hold\n" +
			"nothing to lose (a cached vector that does not read, a text waiting for an item that is gone) are\n" +
			"dropped (what is dropped is printed).\n" +
			"Exit status: 0 healthy, 3 damaged, 4 the file system is full (checked read-only), 2 unusable.", 0, runCheck},
	"backup": {"engram backup [--data DIR] FILE",
		"Writes a consistent copy of the data directory to FILE (never over an existing one), ending in a\n" +
			"SHA-256 that engram restore verifies. The directory must not be open in another engram.\n" +
			"Exit status: 0 written, 3 damaged, 2 anything else (the message says what).", 1, runBackup},
	"restore": {"engram restore [--data DIR] FILE",
		"Restores a backup made by engram backup into DIR, which must not exist yet or be empty.\n" +
			"A damaged or cut backup is refused before anything is written.\n" +
			"Exit status: 0 restored, 3 the backup is damaged, 2 anything else.", 1, runRestore},
}

// runMaintenance runs `engram check|backup|restore ...`; ok is false when
// args name no subcommand.
func runMaintenance(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	cmd, found := maintenance[args[0]]
	if !found {
		return 0, false
	}
	fs := flag.NewFlagSet("engram "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	data := fs.String("data", "", "the data `DIR`ectory (default $ENGRAM_DATA, else $XDG_DATA_HOME/engram, else ~/.local/share/engram)")
	repair := false
	if args[0] == "check" {
		fs.BoolVar(&repair, "repair", false, "cut a damaged log at the damage and open the rest, and drop embedding keys that hold nothing to lose (what is dropped is printed)")
	}
	positional, code, done := parseSubcommand(fs, args[1:], "engram "+args[0], cmd.usage, cmd.help, stdout, stderr)
	if done {
		return code, true
	}
	if len(positional) != cmd.args {
		complain(stderr, "engram %s: want %d file argument(s), got %d\nUsage: %s\n", args[0], cmd.args, len(positional), cmd.usage)
		return exitUsage, true
	}
	dir := defaultPath(*data, "ENGRAM_DATA", "XDG_DATA_HOME", ".local/share", "engram")
	if dir == "" {
		complain(stderr, "engram %s: no data directory: set --data DIR (or HOME)\n", args[0])
		return exitUsage, true
	}
	file := ""
	if cmd.args > 0 {
		file = positional[0]
	}
	if err := cmd.run(dir, file, repair, stdout); err != nil {
		complain(stderr, "engram %s: %v\n", args[0], err)
		return storageExit(err), true
	}
	return exitOK, true
}

// openForReading opens dir for check and backup: normally, or read-only
// when its file system is full (reading writes nothing).
func openForReading(dir string, repair bool) (*storage.Store, error) {
	s, err := storage.Open(storage.Options{Dir: dir, AcceptTruncation: repair})
	if errors.Is(err, storage.ErrFull) && !repair {
		return storage.Open(storage.Options{Dir: dir, ReadOnly: true})
	}
	return s, err
}

func runCheck(dir, _ string, repair bool, stdout io.Writer) (err error) {
	if _, statErr := os.Stat(dir); statErr != nil {
		return fmt.Errorf("%s: %w", dir, statErr)
	}
	s, err := openForReading(dir, repair)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }() // Close is idempotent
	for _, w := range s.Warnings() {
		_, _ = fmt.Fprintf(stdout, "repaired: %s\n", w)
	}
	rep, err := s.Verify()
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "%s: %d keys and %d bytes of values read, every checksum verified\n", dir, rep.Keys, rep.Bytes); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	return checkRecords(dir, repair, stdout)
}

// checkRecords opens the engine on dir and runs every subsystem's checker
// (the cortex's audit chains...); each problem is printed, and any makes
// the directory damaged. With repair, the embedding keys that hold nothing
// to lose (a cached vector that does not read, a pending marker of an
// item that is gone) are dropped first, each printed as the cut logs are.
func checkRecords(dir string, repair bool, stdout io.Writer) (err error) {
	engine, err := core.Open(engineOptions(core.Options{DataDir: dir}))
	if errors.Is(err, storage.ErrFull) {
		_, err = fmt.Fprintf(stdout, "records not checked: %v\n", err)
		return err
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, engine.Close()) }()
	if repair {
		dropped, err := engine.Env().Embeddings().Repair(context.Background())
		for _, d := range dropped {
			if _, err := fmt.Fprintf(stdout, "repaired: dropped %s\n", d); err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
	}
	found, err := engine.Env().Check(context.Background())
	if err != nil {
		return err
	}
	n := 0
	for _, subsystem := range slices.Sorted(maps.Keys(found)) {
		for _, p := range found[subsystem] {
			n++
			if _, err := fmt.Fprintln(stdout, "problem:", p); err != nil {
				return err
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("%w: %d problem(s) in the stored records of %s (listed above)", storage.ErrDamaged, n, dir)
	}
	_, err = fmt.Fprintf(stdout, "%s: healthy: the records of %s verify\n", dir, strings.Join(slices.Sorted(maps.Keys(found)), ", "))
	return err
}

func runBackup(dir, file string, _ bool, stdout io.Writer) (err error) {
	if _, statErr := os.Stat(dir); statErr != nil {
		return fmt.Errorf("%s: %w", dir, statErr)
	}
	s, err := openForReading(dir, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	if err := s.BackupTo(file); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "backed up %s to %s\n", dir, file)
	return err
}

func runRestore(dir, file string, _ bool, stdout io.Writer) error {
	if err := storage.RestoreFrom(file, storage.Options{Dir: dir}); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "restored %s into %s\n", file, dir)
	return err
}

// parseSubcommand parses a subcommand's flags, which may come before or
// after its positional arguments, and returns those arguments. done says
// the command is over (-h was asked for, or the flags were wrong) with
// exit status code; name is how messages call it ("engram check").
func parseSubcommand(fs *flag.FlagSet, args []string, name, usage, help string, stdout, stderr io.Writer) (positional []string, code int, done bool) {
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "Usage: %s\n\n%s\n\nFlags:\n", usage, help)
		fs.PrintDefaults()
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stdout)
				fs.Usage()
				return nil, exitOK, true
			}
			complain(stderr, "%s: %v\nUsage: %s\n", name, err, usage)
			return nil, exitUsage, true
		}
		if fs.NArg() == 0 {
			return positional, 0, false
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
