package lualint

import "slices"

// valueKind says where a value comes from.
type valueKind int

const (
	kindOther valueKind = iota
	kindKeys            // KEYS[...]
	kindArgv            // ARGV[...]
	kindParam           // a function parameter
	kindFn              // redis.call or redis.pcall (server.call, server.pcall) itself
	kindLib             // the redis (or server) table itself
)

// value is where a variable's value can come from.
type value struct {
	kind valueKind
	expr string // the source text
	key  string // kindKeys: the key, KEYS[1] (KEYS for every key)
	name string // kindParam: the parameter; kindFn: redis.call; kindLib: redis
	line int
	seq  int // creation order, which is source order within a pass
}

// values makes value records.
type values struct {
	src *luaSource
	n   int
	fns map[string]*value
}

func (vs *values) fixed(kind valueKind, expr string, gline int) *value {
	line, _ := vs.src.posAt(vs.src.goffset(gline))
	vs.n++
	return &value{kind: kind, expr: expr, line: line, seq: vs.n}
}

// named returns the one value for the redis table or one of its call
// functions.
func (vs *values) named(kind valueKind, name string) *value {
	if v, ok := vs.fns[name]; ok {
		return v
	}
	vs.n++
	v := &value{kind: kind, expr: name, name: name, seq: vs.n}
	vs.fns[name] = v
	return v
}

// maxValues is how many values a variable keeps: past it, the earliest
// are kept, and the earliest that does not come from KEYS (the one a
// finding names) is never dropped.
const maxValues = 64

// union returns the values of a and b, without repeats, in creation order.
func union(a, b []*value) []*value {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	if len(b) <= maxValues && !slices.ContainsFunc(b, func(v *value) bool { return !slices.Contains(a, v) }) {
		return a // b adds nothing: the common case of a value met again
	}
	seen := make(map[*value]bool, len(a)+len(b))
	out := make([]*value, 0, len(a)+len(b))
	for _, v := range slices.Concat(a, b) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(x, y *value) int { return x.seq - y.seq })
	if len(out) > maxValues {
		kept := out[:maxValues:maxValues]
		if !slices.ContainsFunc(kept, func(v *value) bool { return v.kind != kindKeys }) {
			if i := slices.IndexFunc(out, func(v *value) bool { return v.kind != kindKeys }); i >= 0 {
				kept = append(kept[:maxValues-1:maxValues-1], out[i])
			}
		}
		out = kept
	}
	return out
}
