package storage

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Verifying every block of every table at open (see preflight) is most of
// an open at a million items: seconds, because each block is decompressed
// to be checked. Badger never changes a table file once written, so a
// table whose bytes are all the same as when it was last verified in full
// needs no second full check: the CRC-32C of the whole file shows that,
// and reading a file through a CRC is ten times faster than decompressing
// it. The sums file records, per table, its size and that CRC, taken
// before the full check. Damage detection stays as strong: any byte that
// changed since (bit rot, a bad sector, a hand edit) changes the file's
// CRC, and the table is then verified block by block again, and refused
// if a block fails. (Only table names and sizes were tried first, and
// given up: rot changes neither; see tablerot_test.go.)

// tableSumsName is the sums file in the data directory.
const tableSumsName = "engram.tablesums"

// tableSumsHeader starts the sums file; a line "end CRC" (the CRC-32C of
// everything before it) ends it, so a damaged or cut file is ignored.
const tableSumsHeader = "engram table sums 1\n"

// tableSum is a table file as it was when last verified in full.
type tableSum struct {
	size int64
	crc  uint32
}

// readTableSums reads dir's sums file, keyed by table file name. A missing,
// damaged or unknown file reads as no sums (an empty map): every table is
// then verified in full, as if none had been before.
func readTableSums(dir string) map[string]tableSum {
	raw, err := os.ReadFile(filepath.Join(dir, tableSumsName))
	if err != nil || !bytes.HasPrefix(raw, []byte(tableSumsHeader)) {
		return map[string]tableSum{}
	}
	end := bytes.LastIndex(raw, []byte("end "))
	if end < 0 {
		return map[string]tableSum{}
	}
	want, err := strconv.ParseUint(strings.TrimSuffix(string(raw[end+4:]), "\n"), 16, 32)
	if err != nil || crc32.Checksum(raw[:end], castagnoli) != uint32(want) {
		return map[string]tableSum{}
	}
	sums := map[string]tableSum{}
	for _, line := range strings.Split(string(raw[len(tableSumsHeader):end]), "\n") {
		if line == "" {
			continue
		}
		var name string
		var s tableSum
		if _, err := fmt.Sscanf(line, "%s %d %x", &name, &s.size, &s.crc); err != nil || filepath.Ext(name) != tableExt {
			return map[string]tableSum{}
		}
		sums[name] = s
	}
	return sums
}

// writeTableSums replaces dir's sums file with sums, through a temporary
// file renamed into place, so that a kill leaves the old file or the new
// one. Losing it costs only time: the next open verifies in full again.
func writeTableSums(dir string, sums map[string]tableSum) error {
	var b bytes.Buffer
	b.WriteString(tableSumsHeader)
	names := make([]string, 0, len(sums))
	for name := range sums {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "%s %d %08x\n", name, sums[name].size, sums[name].crc)
	}
	fmt.Fprintf(&b, "end %08x\n", crc32.Checksum(b.Bytes(), castagnoli))
	tmp := filepath.Join(dir, tableSumsName+".tmp")
	err := os.WriteFile(tmp, b.Bytes(), 0o600)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, tableSumsName))
	}
	if err != nil {
		// A part written on a full disk would hold its room until the
		// next record: nothing reads it.
		_ = os.Remove(tmp)
	}
	return err
}

// sumFile is the size and CRC-32C of the file at path, read through buf.
func sumFile(path string, buf []byte) (tableSum, error) {
	f, err := os.Open(path)
	if err != nil {
		return tableSum{}, err
	}
	defer func() { _ = f.Close() }()
	var s tableSum
	for {
		n, err := f.Read(buf)
		s.crc = crc32.Update(s.crc, castagnoli, buf[:n])
		s.size += int64(n)
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			return tableSum{}, err
		}
	}
}
