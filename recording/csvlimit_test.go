package recording

import (
	"bufio"
	"strings"
	"testing"
)

// TestVegetaCSVUnclosedQuote: an unclosed quote does not take the whole
// input into one field: the reader stops a record past 1 MiB.
func TestVegetaCSVUnclosedQuote(t *testing.T) {
	in := "1700000000000000000,200,1000,0,0,\"" + strings.Repeat("x\n", 1<<20)
	err := readVegetaCSV(bufio.NewReader(strings.NewReader(in)), nil)
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("%v", err)
	}
}
