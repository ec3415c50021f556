package cluster

// Shard is one primary, its replicas and the slot ranges it serves.
type Shard struct {
	Primary  string   `json:"primary"`
	Replicas []string `json:"replicas"`
	Ranges   [][2]int `json:"ranges"`
}

// Topology maps every slot to the shard that serves it.
type Topology struct {
	// Source is the command the map was read from: "CLUSTER SHARDS" or
	// "CLUSTER SLOTS".
	Source string  `json:"source"`
	Shards []Shard `json:"shards"`
	owner  [Slots]int16
}

// Owner returns the shard serving slot, or nil when no node serves it.
func (t *Topology) Owner(slot int) *Shard {
	if t == nil || slot < 0 || slot >= Slots || t.owner[slot] < 0 {
		return nil
	}
	return &t.Shards[t.owner[slot]]
}

// Uncovered counts the slots no shard serves.
func (t *Topology) Uncovered() int {
	n := 0
	for _, o := range t.owner {
		if o < 0 {
			n++
		}
	}
	return n
}

// NewTopology builds the map of shards read from source ("CLUSTER SHARDS"
// or "CLUSTER SLOTS"; package live reads them from a server). Shards with
// the same primary are merged; a slot claimed twice goes to the last.
func NewTopology(source string, shards []Shard) *Topology {
	t := newTopology(source)
	for _, sh := range shards {
		t.add(sh)
	}
	return t
}

func newTopology(source string) *Topology {
	t := &Topology{Source: source, Shards: []Shard{}}
	for i := range t.owner {
		t.owner[i] = -1
	}
	return t
}

func (t *Topology) add(sh Shard) {
	idx := -1
	for i := range t.Shards {
		if t.Shards[i].Primary == sh.Primary {
			idx = i
			break
		}
	}
	if idx < 0 {
		if sh.Replicas == nil {
			sh.Replicas = []string{}
		}
		if sh.Ranges == nil {
			sh.Ranges = [][2]int{}
		}
		t.Shards = append(t.Shards, sh)
		idx = len(t.Shards) - 1
	} else {
		t.Shards[idx].Ranges = append(t.Shards[idx].Ranges, sh.Ranges...)
	}
	for _, r := range sh.Ranges {
		for s := max(r[0], 0); s <= r[1] && s < Slots; s++ {
			t.owner[s] = int16(idx)
		}
	}
}
