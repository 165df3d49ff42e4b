package cortex

// ItemSpecs is itemSpecs(n, seed) as BulkCreate takes it, for the
// external test that holds core/scale's copy of the generator to it.
func ItemSpecs(n int, seed uint64) ([]BulkItem, error) { return bulkItems(itemSpecs(n, seed)) }
