package scale

// SetItemChunk makes Build create items n at a time, until the test ends.
func SetItemChunk(n int) (restore func()) {
	old := itemChunk
	itemChunk = n
	return func() { itemChunk = old }
}
