package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/ratelimit-dev/ratelimit/cluster"
)

// KeyslotJSON writes res exactly as JSON(w, res) would, but streams the
// keys array instead of building the whole document in memory, so a
// million keys cost a fraction of the time and memory.
func KeyslotJSON(w io.Writer, res cluster.Result) error {
	keys := res.Keys
	res.Keys = []cluster.Key{}
	var head bytes.Buffer
	if err := JSON(&head, res); err != nil {
		return err
	}
	const marker = "\n  \"keys\": [],\n"
	doc := head.Bytes()
	at := bytes.Index(doc, []byte(marker))
	if at < 0 || len(keys) == 0 {
		if len(keys) > 0 {
			return fmt.Errorf("encode json: keys field not found")
		}
		_, err := w.Write(doc)
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.Write(doc[:at])
	bw.WriteString("\n  \"keys\": [\n")
	buf := make([]byte, 0, 512)
	for i, k := range keys {
		buf = ksAppendKey(buf[:0], k)
		if i < len(keys)-1 {
			buf = append(buf, ',')
		}
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	bw.WriteString("  ],\n")
	bw.Write(doc[at+len(marker):])
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// ksAppendKey appends one element of the keys array at the indentation
// report.JSON gives it, with the fields in cluster.Key's order.
func ksAppendKey(b []byte, k cluster.Key) []byte {
	b = append(b, "    {\n      \"key\": "...)
	b = ksAppendJSONString(b, k.Key)
	if k.KeyBase64 != "" {
		b = append(b, ",\n      \"key_base64\": "...)
		b = ksAppendJSONString(b, k.KeyBase64)
	}
	b = append(b, ",\n      \"tag\": "...)
	b = ksAppendJSONString(b, k.Tag)
	b = append(b, ",\n      \"tagged\": "...)
	b = strconv.AppendBool(b, k.Tagged)
	b = append(b, ",\n      \"slot\": "...)
	b = strconv.AppendInt(b, int64(k.Slot), 10)
	if k.Node != "" {
		b = append(b, ",\n      \"node\": "...)
		b = ksAppendJSONString(b, k.Node)
	}
	if len(k.Replicas) > 0 {
		b = append(b, ",\n      \"replicas\": ["...)
		for i, r := range k.Replicas {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n        "...)
			b = ksAppendJSONString(b, r)
		}
		b = append(b, "\n      ]"...)
	}
	if k.ServerSlot != nil {
		b = append(b, ",\n      \"server_slot\": "...)
		b = strconv.AppendInt(b, int64(*k.ServerSlot), 10)
	}
	return append(b, "\n    }"...)
}

const ksHexDigits = "0123456789abcdef"

// ksAppendJSONString quotes s the way encoding/json does with its default
// HTML escaping: \" \\ \n \r \t \b \f, other control bytes and < > & as \u00XX,
// U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func ksAppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', ksHexDigits[c>>4], ksHexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', ksHexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
