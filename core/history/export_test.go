package history

// HoldFolds returns opts with every fold left pending (as a crash right
// after a write would leave it), for the tests of resuming them.
func HoldFolds(opts Options) Options {
	opts.holdFolds = true
	return opts
}
