package recording

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/ratelimit-dev/ratelimit/words"
)

// encoding/gob reads each message of a stream whole before it decodes a
// field of it, so one vegeta result whose Body holds 900 MB (a few MB on
// disk, gzipped) would cost 900 MB even though the reader never looks at
// the body. gobSkip sits between the recording and the gob decoder: it
// hands every message on as it is, except a message longer than
// maxGobMessage, which it rewrites as it reads it, dropping the bytes of
// its Body field (a []byte) without keeping them. To find the body in a
// message it follows the type definitions the stream sends before its
// values (encoding/gob's wire format, "Types and values" in its package
// documentation): a struct's fields by name and type id, slices, maps and
// GobEncoder types (time.Time) by their elements. What it cannot follow
// (an interface field, a type never defined, a field other than the body
// that is itself longer than maxGobMessage) is refused.

// maxGobMessage is the longest gob message handed to encoding/gob as it
// is; a vegeta result without its body is a few hundred bytes.
const maxGobMessage = 1 << 20

// Predefined gob type ids (encoding/gob, type.go).
const (
	gobBool      = 1
	gobInt       = 2
	gobUintType  = 3
	gobFloat     = 4
	gobBytes     = 5
	gobString    = 6
	gobComplex   = 7
	gobInterface = 8
	gobFirstUser = 64 // encoding/gob firstUserId
)

// gobType is a type the stream defined: a struct's fields, a slice's or an
// array's element, a map's key and element, or an encoder's bytes.
type gobType struct {
	kind      byte // 's' struct, 'l' slice or array, 'm' map, 'e' GobEncoder, BinaryMarshaler or TextMarshaler
	fields    []gobField
	key, elem int
}

type gobField struct {
	name string
	id   int
}

// errGobSkip is a message gobSkip cannot rewrite.
type errGobSkip struct{ msg string }

func (e *errGobSkip) Error() string { return e.msg }

type gobSkip struct {
	r     *bufio.Reader
	out   bytes.Buffer // what Read hands on next
	types map[int]*gobType
	// the message being rewritten
	left    int64 // its bytes not read yet
	msg     bytes.Buffer
	skipped int64
}

func newGobSkip(r *bufio.Reader) *gobSkip {
	return &gobSkip{r: r, types: map[int]*gobType{}}
}

func (g *gobSkip) Read(p []byte) (int, error) {
	if g.out.Len() == 0 {
		if err := g.next(); err != nil {
			return 0, err
		}
	}
	return g.out.Read(p)
}

// next puts the next message, rewritten if need be, in out.
func (g *gobSkip) next() error {
	g.out.Reset()
	n, raw, err := readGobUint(g.r)
	if err != nil {
		if err == io.EOF && len(raw) == 0 {
			return io.EOF
		}
		return io.ErrUnexpectedEOF
	}
	if n <= maxGobMessage {
		g.out.Write(raw)
		if _, err := io.CopyN(&g.out, g.r, int64(n)); err != nil {
			return io.ErrUnexpectedEOF
		}
		msg := g.out.Bytes()[len(raw):]
		if id, rest, ok := gobIntOf(msg); ok && id < 0 {
			g.define(int(-id), rest) // a type the stream defines; ignored if garbled
		}
		return nil
	}
	if n > 1<<62 {
		return &errGobSkip{msg: "a gob message claims more bytes than a file can hold"}
	}
	return g.rewrite(int64(n))
}

// rewrite reads a message of n bytes, a value of a struct the stream
// defined, and puts it in out without its Body.
func (g *gobSkip) rewrite(n int64) error {
	g.left, g.skipped = n, 0
	g.msg.Reset()
	id, err := g.int()
	if err != nil {
		return err
	}
	t := g.types[int(id)]
	if id < gobFirstUser || t == nil || t.kind != 's' {
		return &errGobSkip{msg: fmt.Sprintf("a gob message of %s bytes that is not a vegeta result", words.Commas(n))}
	}
	g.putInt(id)
	if err := g.structValue(t, true); err != nil {
		return err
	}
	if g.left != 0 {
		return &errGobSkip{msg: "a gob message longer than its value"}
	}
	if g.msg.Len() > maxGobMessage {
		return &errGobSkip{msg: fmt.Sprintf("a result of %s bytes besides its body (the reader takes at most %s)", words.Commas(g.msg.Len()), words.Commas(maxGobMessage))}
	}
	g.out.Write(appendGobUint(nil, uint64(g.msg.Len())))
	g.out.Write(g.msg.Bytes())
	return nil
}

// structValue copies a struct's fields, or at the top (a vegeta result)
// all but its Body, whose bytes are read and dropped.
func (g *gobSkip) structValue(t *gobType, top bool) error {
	field, carry := -1, uint64(0)
	for {
		delta, err := g.uint()
		if err != nil {
			return err
		}
		if delta == 0 {
			g.putUint(0)
			return nil
		}
		if delta > uint64(len(t.fields)) || field+int(delta) >= len(t.fields) {
			return &errGobSkip{msg: "a gob struct field out of range"}
		}
		field += int(delta)
		f := t.fields[field]
		if top && f.name == "Body" && f.id == gobBytes {
			size, err := g.uint()
			if err != nil {
				return err
			}
			if err := g.discard(size); err != nil {
				return err
			}
			g.skipped += int64(size)
			carry += delta
			continue
		}
		g.putUint(carry + delta)
		carry = 0
		if err := g.value(f.id, 0); err != nil {
			return err
		}
	}
}

// value copies one value of type id.
func (g *gobSkip) value(id, depth int) error {
	if depth > 32 {
		return &errGobSkip{msg: "gob types nested too deep"}
	}
	switch id {
	case gobBool, gobInt, gobUintType, gobFloat:
		u, err := g.uint()
		g.putUint(u)
		return err
	case gobComplex:
		for range 2 {
			u, err := g.uint()
			if err != nil {
				return err
			}
			g.putUint(u)
		}
		return nil
	case gobBytes, gobString:
		return g.bytes()
	case gobInterface:
		return &errGobSkip{msg: "an interface value in a vegeta result"}
	}
	t := g.types[id]
	if t == nil {
		return &errGobSkip{msg: fmt.Sprintf("gob type %d used before it is defined", id)}
	}
	switch t.kind {
	case 's':
		return g.structValue(t, false)
	case 'e':
		return g.bytes()
	case 'l', 'm':
		count, err := g.uint()
		if err != nil {
			return err
		}
		g.putUint(count)
		for i := uint64(0); i < count; i++ {
			if g.left <= 0 {
				return &errGobSkip{msg: "a gob count beyond its message"}
			}
			if t.kind == 'm' {
				if err := g.value(t.key, depth+1); err != nil {
					return err
				}
			}
			if err := g.value(t.elem, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return &errGobSkip{msg: "an unknown gob type"}
}

// bytes copies a length and that many bytes, refusing more than the
// message may keep.
func (g *gobSkip) bytes() error {
	size, err := g.uint()
	if err != nil {
		return err
	}
	if size > uint64(g.left) || int64(g.msg.Len())+int64(size) > maxGobMessage {
		return &errGobSkip{msg: fmt.Sprintf("a field of %s bytes besides the body (the reader takes at most %s)", words.Commas(int64(min(size, 1<<62))), words.Commas(maxGobMessage))}
	}
	g.putUint(size)
	g.left -= int64(size)
	if _, err := io.CopyN(&g.msg, g.r, int64(size)); err != nil {
		return io.ErrUnexpectedEOF
	}
	return nil
}

func (g *gobSkip) discard(size uint64) error {
	if size > uint64(g.left) {
		return io.ErrUnexpectedEOF
	}
	g.left -= int64(size)
	if _, err := g.r.Discard(int(size)); err != nil {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// uint reads a gob unsigned integer of the message being rewritten.
func (g *gobSkip) uint() (uint64, error) {
	u, raw, err := readGobUint(g.r)
	g.left -= int64(len(raw))
	if err != nil || g.left < 0 {
		return 0, io.ErrUnexpectedEOF
	}
	return u, nil
}

func (g *gobSkip) int() (int64, error) {
	u, err := g.uint()
	return gobIntFrom(u), err
}

func (g *gobSkip) putUint(u uint64) { g.msg.Write(appendGobUint(nil, u)) }

func (g *gobSkip) putInt(i int64) {
	u := uint64(i) << 1
	if i < 0 {
		u = uint64(^i)<<1 | 1
	}
	g.putUint(u)
}

// define reads a type definition (encoding/gob's wireType) of type id:
// a struct, slice, array, map or encoder type.
func (g *gobSkip) define(id int, msg []byte) {
	if id < gobFirstUser || len(g.types) > 10_000 {
		return
	}
	d := &gobDef{b: msg}
	t, ok := d.wireType()
	if ok {
		g.types[id] = t
	}
}

// gobDef reads a type definition from its message bytes.
type gobDef struct{ b []byte }

func (d *gobDef) uint() (uint64, bool) {
	u, rest, ok := gobUintOf(d.b)
	d.b = rest
	return u, ok
}

func (d *gobDef) int() (int, bool) {
	u, ok := d.uint()
	return int(gobIntFrom(u)), ok
}

func (d *gobDef) str() (string, bool) {
	n, ok := d.uint()
	if !ok || n > uint64(len(d.b)) {
		return "", false
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s, true
}

// fields reads a struct's fields, calling f with each field's number; f
// reads the value.
func (d *gobDef) fields(f func(n int) bool) bool {
	n := -1
	for {
		delta, ok := d.uint()
		if !ok || delta > 64 {
			return false
		}
		if delta == 0 {
			return true
		}
		n += int(delta)
		if !f(n) {
			return false
		}
	}
}

// common skips a CommonType {Name string; Id typeId}.
func (d *gobDef) common() bool {
	return d.fields(func(n int) bool {
		switch n {
		case 0:
			_, ok := d.str()
			return ok
		case 1:
			_, ok := d.int()
			return ok
		}
		return false
	})
}

// wireType reads {ArrayT, SliceT, StructT, MapT, GobEncoderT,
// BinaryMarshalerT, TextMarshalerT}, one of them set.
func (d *gobDef) wireType() (*gobType, bool) {
	var t *gobType
	ok := d.fields(func(n int) bool {
		switch n {
		case 0, 1: // arrayType {CommonType; Elem; Len}, sliceType {CommonType; Elem}
			t = &gobType{kind: 'l'}
			return d.fields(func(m int) bool {
				switch m {
				case 0:
					return d.common()
				case 1:
					var ok bool
					t.elem, ok = d.int()
					return ok
				case 2:
					_, ok := d.int()
					return ok
				}
				return false
			})
		case 2: // structType {CommonType; Field []fieldType}
			t = &gobType{kind: 's'}
			return d.fields(func(m int) bool {
				switch m {
				case 0:
					return d.common()
				case 1:
					count, ok := d.uint()
					if !ok || count > uint64(len(d.b)) {
						return false
					}
					for range count {
						var f gobField
						if !d.fields(func(k int) bool {
							var ok bool
							switch k {
							case 0:
								f.name, ok = d.str()
							case 1:
								f.id, ok = d.int()
							}
							return ok
						}) {
							return false
						}
						t.fields = append(t.fields, f)
					}
					return true
				}
				return false
			})
		case 3: // mapType {CommonType; Key; Elem}
			t = &gobType{kind: 'm'}
			return d.fields(func(m int) bool {
				var ok bool
				switch m {
				case 0:
					return d.common()
				case 1:
					t.key, ok = d.int()
				case 2:
					t.elem, ok = d.int()
				}
				return ok
			})
		case 4, 5, 6: // gobEncoderType {CommonType}
			t = &gobType{kind: 'e'}
			return d.fields(func(m int) bool { return m == 0 && d.common() })
		}
		return false
	})
	return t, ok && t != nil
}

// readGobUint reads one gob unsigned integer and returns the bytes it took.
func readGobUint(r *bufio.Reader) (uint64, []byte, error) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	if c < 128 {
		return uint64(c), []byte{c}, nil
	}
	k := int(-int8(c))
	if k < 1 || k > 8 {
		return 0, []byte{c}, errors.New("a gob integer of more than 8 bytes")
	}
	raw := make([]byte, 1+k)
	raw[0] = c
	if _, err := io.ReadFull(r, raw[1:]); err != nil {
		return 0, raw, io.ErrUnexpectedEOF
	}
	var u uint64
	for _, b := range raw[1:] {
		u = u<<8 | uint64(b)
	}
	return u, raw, nil
}

func gobUintOf(b []byte) (uint64, []byte, bool) {
	if len(b) == 0 {
		return 0, b, false
	}
	c := b[0]
	if c < 128 {
		return uint64(c), b[1:], true
	}
	k := int(-int8(c))
	if k < 1 || k > 8 || len(b) < 1+k {
		return 0, b, false
	}
	var u uint64
	for _, x := range b[1 : 1+k] {
		u = u<<8 | uint64(x)
	}
	return u, b[1+k:], true
}

func gobIntOf(b []byte) (int64, []byte, bool) {
	u, rest, ok := gobUintOf(b)
	return gobIntFrom(u), rest, ok
}

// gobIntFrom undoes gob's signed encoding: the low bit says to complement.
func gobIntFrom(u uint64) int64 {
	if u&1 != 0 {
		return ^int64(u >> 1)
	}
	return int64(u >> 1)
}

func appendGobUint(b []byte, u uint64) []byte {
	if u < 128 {
		return append(b, byte(u))
	}
	var tmp [8]byte
	k := 8
	for ; u > 0; u >>= 8 {
		k--
		tmp[k] = byte(u)
	}
	return append(append(b, byte(-(8-k))), tmp[k:]...)
}
