package hostile

import (
	"bytes"
	"compress/gzip"
	"encoding/gob"
	"errors"
	"io"
	"net/http"
	"time"
)

// Hostile inputs for the commands that read files: recordings of other
// tools that inflate or carry far more than they seem to, written as a
// stream so that the test never holds them either.

// vegetaResult is vegeta's lib.Result of v12.13.0, field for field, as
// vegeta attack gob-encodes it.
type vegetaResult struct {
	Attack    string
	Seq       uint64
	Code      uint16
	Timestamp time.Time
	Latency   time.Duration
	BytesOut  uint64
	BytesIn   uint64
	Error     string
	Body      []byte
	Method    string
	URL       string
	Headers   http.Header
}

// WriteVegetaGob writes what vegeta attack would for n requests at 20/s,
// each answered 200 with a RateLimit-Policy, the first of them with a
// body of bodyBytes bytes (streamed: neither the writer nor w's reader
// need hold it).
func WriteVegetaGob(w io.Writer, n int, bodyBytes int64) error {
	marker := bytes.Repeat([]byte{'#'}, 200)
	var b bytes.Buffer
	enc := gob.NewEncoder(&b)
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for i := range n {
		v := vegetaResult{Seq: uint64(i), Code: 200, Timestamp: start.Add(time.Duration(i) * 50 * time.Millisecond), Latency: time.Millisecond,
			Method: "GET", URL: "http://127.0.0.1:8011/hello", BytesIn: 2,
			Headers: http.Header{"Ratelimit-Policy": {`"default";q=1000;w=60`}}}
		if i == 0 {
			v.Body, v.BytesIn = marker, uint64(bodyBytes)
		}
		if err := enc.Encode(&v); err != nil {
			return err
		}
	}
	data := b.Bytes()
	// find the message holding the marker and write it again with a body
	// of bodyBytes in its place
	for len(data) > 0 {
		size, k := gobUint(data)
		if k == 0 || len(data) < k+int(size) {
			return errors.New("hostile: a gob stream it cannot reframe")
		}
		msg := data[k : k+int(size)]
		data = data[k+int(size):]
		at := bytes.Index(msg, marker)
		if at < 0 {
			if _, err := w.Write(appendGobUint(nil, size)); err != nil {
				return err
			}
			if _, err := w.Write(msg); err != nil {
				return err
			}
			continue
		}
		head := msg[:at-2] // the marker's length, 200, is two bytes
		tail := msg[at+len(marker):]
		blen := appendGobUint(nil, uint64(bodyBytes))
		total := uint64(len(head)+len(blen)+len(tail)) + uint64(bodyBytes)
		for _, part := range [][]byte{appendGobUint(nil, total), head, blen} {
			if _, err := w.Write(part); err != nil {
				return err
			}
		}
		if _, err := io.Copy(w, io.LimitReader(repeatReader('a'), bodyBytes)); err != nil {
			return err
		}
		if _, err := w.Write(tail); err != nil {
			return err
		}
	}
	return nil
}

// WriteGzipBomb writes gzip members that together inflate to at least
// inflated bytes of line repeated: about 1 MB on disk per GiB. One member
// of 4 MiB is compressed once and written again and again.
func WriteGzipBomb(w io.Writer, inflated int64, line string) error {
	const member = 4 << 20
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	chunk := bytes.Repeat([]byte(line), max(1, (64<<10)/len(line)))
	for written := 0; written < member; written += len(chunk) {
		if _, err := zw.Write(chunk); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	for done := int64(0); done < inflated; done += member {
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func gobUint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	if b[0] < 128 {
		return uint64(b[0]), 1
	}
	k := int(-int8(b[0]))
	if k < 1 || k > 8 || len(b) < 1+k {
		return 0, 0
	}
	var u uint64
	for _, c := range b[1 : 1+k] {
		u = u<<8 | uint64(c)
	}
	return u, 1 + k
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
