package retrieval

// Lexical is the query without the words of its time windows: what is
// left to look up as terms ("the budget last week" asks about "the
// budget", not about "week"). Rankers outside this package (memory
// recall) strip the same words this package's Search does.
func (tq TimeQuery) Lexical(query string) string { return tq.lexical(query) }
