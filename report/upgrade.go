package report

import (
	"bytes"
	"encoding/json"
	"math"
)

// Documents of an older version are upgraded on read: decoded as a JSON
// tree, their fields renamed and converted to the units of the current
// version by the kind's upgrade function (the v1 functions sit beside each
// kind's renderers), then decoded as the current version.

type jsonTree = map[string]any

// upgradeTree decodes data, lets edit change the tree into the current
// version and decodes the result as T.
func upgradeTree[T any](data []byte, edit func(jsonTree)) (T, error) {
	var zero T
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var t jsonTree
	if err := dec.Decode(&t); err != nil {
		return zero, err
	}
	edit(t)
	out, err := json.Marshal(t)
	if err != nil {
		return zero, err
	}
	var v T
	err = json.Unmarshal(out, &v)
	return v, err
}

// rename moves m[from] to m[to], if m has it.
func rename(m jsonTree, from, to string) {
	if v, ok := m[from]; ok && m != nil {
		delete(m, from)
		m[to] = v
	}
}

// convert replaces a number, or every number of an array, at m[key] by
// f(number); anything else is left for the decoder to refuse.
func convert(m jsonTree, key string, f func(float64) float64) {
	one := func(v any) any {
		n, ok := v.(json.Number)
		if !ok {
			return v
		}
		x, err := n.Float64()
		if err != nil {
			return v
		}
		return f(x)
	}
	switch v := m[key].(type) {
	case []any:
		for i := range v {
			v[i] = one(v[i])
		}
	case nil:
	default:
		m[key] = one(v)
	}
}

// usToMs and sToMs convert microseconds and seconds to milliseconds at
// microsecond resolution, as the current version writes them.
func usToMs(x float64) float64 { return x / 1000 }
func sToMs(x float64) float64  { return math.Round(x*1e6) / 1e3 }

// renameMs renames m[from] to m[to] and converts it with f.
func renameMs(m jsonTree, from, to string, f func(float64) float64) {
	rename(m, from, to)
	convert(m, to, f)
}

// object is m[key] as an object, or nil.
func object(m jsonTree, key string) jsonTree {
	o, _ := m[key].(map[string]any)
	return o
}

// objects are the objects of the array m[key].
func objects(m jsonTree, key string) []jsonTree {
	a, _ := m[key].([]any)
	var out []jsonTree
	for _, v := range a {
		if o, ok := v.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}
