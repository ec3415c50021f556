package load

import (
	"strconv"
	"sync"
	"testing"
)

// The lean client's value table hands back a value seen before without
// allocating, from any number of conns at once, and stops growing at
// maxValues (a value past it is still returned, as a new string).
func TestValueTable(t *testing.T) {
	var vt valueTable
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2 * maxValues {
				v := `"default";r=` + strconv.Itoa((i+g)%(2*maxValues)) + ";t=1"
				if got := vt.get([]byte(v)); got != v {
					t.Errorf("get(%q) = %q", v, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(*vt.m.Load()); n != maxValues {
		t.Errorf("the table holds %d values, want %d", n, maxValues)
	}
	var seen []byte
	for k := range *vt.m.Load() {
		seen = []byte(k)
		break
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = vt.get(seen) }); allocs != 0 {
		t.Errorf("get of a value seen: %.0f allocations, want 0", allocs)
	}
}
