package recording

import "github.com/ratelimit-dev/ratelimit/judge"

// arrivalHeap is a min-heap of arrivals on one of their times (send or
// done): the reorder buffer of a recording, which comes roughly in
// completion order and must reach the replay in time order. Values, not
// pointers, so a buffer of a million arrivals is one allocation of 40 MB.
type arrivalHeap struct {
	done bool // keyed on DoneNs, else SendNs
	a    []judge.Arrival
}

func (h *arrivalHeap) key(i int) int64 {
	if h.done {
		return h.a[i].DoneNs
	}
	return h.a[i].SendNs
}

func (h *arrivalHeap) len() int { return len(h.a) }

// min is the smallest time in the heap; the heap must not be empty.
func (h *arrivalHeap) min() int64 { return h.key(0) }

func (h *arrivalHeap) push(x judge.Arrival) {
	h.a = append(h.a, x)
	for i := len(h.a) - 1; i > 0; {
		p := (i - 1) / 2
		if h.key(p) <= h.key(i) {
			break
		}
		h.a[p], h.a[i] = h.a[i], h.a[p]
		i = p
	}
}

func (h *arrivalHeap) pop() judge.Arrival {
	top := h.a[0]
	n := len(h.a) - 1
	h.a[0] = h.a[n]
	h.a = h.a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.key(l) < h.key(m) {
			m = l
		}
		if r < n && h.key(r) < h.key(m) {
			m = r
		}
		if m == i {
			break
		}
		h.a[m], h.a[i] = h.a[i], h.a[m]
		i = m
	}
	return top
}
