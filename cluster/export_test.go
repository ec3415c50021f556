package cluster

// SlotVectors returns the keys of the pinned vectors (slot_test.go) and
// their slots, so the live tests (package cluster_test) confirm them with
// a server.
func SlotVectors() (keys []string, slots []int) {
	for _, v := range slotVectors {
		keys = append(keys, v.key)
		slots = append(slots, v.slot)
	}
	return keys, slots
}
