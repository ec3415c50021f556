package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// lineServer answers every line it reads with "+" and the line's length,
// after delay; it counts the bytes it read.
func lineServer(t *testing.T, delay time.Duration) (addr string, read *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	read = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReaderSize(c, 1<<20)
				for {
					line, err := br.ReadSlice('\n')
					for errors.Is(err, bufio.ErrBufferFull) {
						var more []byte
						more, err = br.ReadSlice('\n')
						line = append(append([]byte(nil), line...), more...)
					}
					read.Add(int64(len(line)))
					if err != nil {
						return
					}
					time.Sleep(delay)
					if _, err := c.Write([]byte("+" + strconv.Itoa(len(line)) + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), read
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wantLinux(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the exchange side is Linux's")
	}
}

// Writes wait for the next read, go out together, and the answers come
// back in order; a slow answer is waited for.
func TestDeferredExchanges(t *testing.T) {
	wantLinux(t)
	addr, read := lineServer(t, 20*time.Millisecond)
	d := Defer(dial(t, addr))
	if _, ok := d.(*Deferred); !ok {
		t.Fatalf("Defer(a TCP connection) = %T, want *Deferred", d)
	}
	for _, w := range []string{"one\n", "three\n"} {
		if n, err := d.Write([]byte(w)); err != nil || n != len(w) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := read.Load(); n != 0 {
		t.Fatalf("the server read %d bytes before the first Read; writes should wait for it", n)
	}
	br := bufio.NewReader(d)
	for _, want := range []string{"+4\n", "+6\n"} {
		got, err := br.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("answer %q, %v; want %q", got, err, want)
		}
	}
	// the next exchange on the same connection
	if _, err := d.Write([]byte("again\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := br.ReadString('\n'); err != nil || got != "+6\n" {
		t.Fatalf("third answer %q, %v", got, err)
	}
	if read.Load() != int64(len("one\nthree\nagain\n")) {
		t.Errorf("the server read %d bytes", read.Load())
	}
}

// A request far larger than the socket's buffer is written in parts, each
// waiting for room, before the answer is read; the counters count it all.
func TestConnLargeRequest(t *testing.T) {
	wantLinux(t)
	addr, read := lineServer(t, 0)
	c := dial(t, addr)
	in, out := new(atomic.Int64), new(atomic.Int64)
	w := New(c, in, out)
	if w == nil {
		t.Fatal("New(a TCP connection) = nil")
	}
	req := append(bytes.Repeat([]byte("x"), 16<<20), '\n')
	w.Arm(req)
	buf := make([]byte, 64)
	n, err := w.Read(buf)
	if err != nil || string(buf[:n]) != "+"+strconv.Itoa(len(req))+"\n" {
		t.Fatalf("answer %q, %v", buf[:n], err)
	}
	if sent, werr := w.Written(); sent != len(req) || werr != nil || w.Armed() {
		t.Errorf("Written = %d, %v (armed %v), want all %d", sent, werr, w.Armed(), len(req))
	}
	if out.Load() != int64(len(req)) || in.Load() != int64(n) || read.Load() != int64(len(req)) {
		t.Errorf("counted out %d in %d, server read %d; want %d, %d, %d", out.Load(), in.Load(), read.Load(), len(req), n, len(req))
	}
}

// A deadline already past cuts the exchange before the request goes out:
// a timeout, nothing written; a deadline reached while waiting for the
// answer is a timeout after the request went out.
func TestConnDeadlines(t *testing.T) {
	wantLinux(t)
	addr, read := lineServer(t, time.Second)
	c := dial(t, addr)
	w := New(c, nil, nil)
	_ = c.SetDeadline(time.Unix(1, 0))
	w.Arm([]byte("early\n"))
	_, err := w.Read(make([]byte, 16))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("past deadline: %v, want a deadline error", err)
	}
	if sent, werr := w.Written(); sent != 0 || werr == nil {
		t.Errorf("past deadline: Written = %d, %v; want nothing written and the error", sent, werr)
	}
	time.Sleep(50 * time.Millisecond)
	if read.Load() != 0 {
		t.Errorf("the server read %d bytes of a request cut before it went out", read.Load())
	}

	c2 := dial(t, addr)
	w2 := New(c2, nil, nil)
	_ = c2.SetDeadline(time.Now().Add(100 * time.Millisecond))
	w2.Arm([]byte("late\n"))
	start := time.Now()
	_, err = w2.Read(make([]byte, 16))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("slow answer: %v, want a deadline error", err)
	}
	if took := time.Since(start); took < 90*time.Millisecond || took > 900*time.Millisecond {
		t.Errorf("the deadline ended the wait after %v, want about 100 ms", took)
	}
	if sent, werr := w2.Written(); sent != len("late\n") || werr != nil {
		t.Errorf("slow answer: Written = %d, %v; want the whole request", sent, werr)
	}
}

// A peer that closed: the exchange fails with EOF (or a reset) on the
// read, and a Deferred connection reports it from Read.
func TestDeferredPeerClosed(t *testing.T) {
	wantLinux(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
	}()
	d := Defer(dial(t, ln.Addr().String()))
	time.Sleep(50 * time.Millisecond)
	_, _ = d.Write([]byte("anyone?\n"))
	_, err = d.Read(make([]byte, 16))
	if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		t.Fatalf("closed peer: %v, want EOF or a reset", err)
	}
}

// What has no descriptor keeps its own reads and writes; a Deferred keeps
// the socket's SyscallConn (a pool's health check peeks through it).
func TestDeferWhereItCannot(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if d := Defer(a); d != a {
		t.Errorf("Defer(net.Pipe) = %T, want the pipe itself", d)
	}
	if New(a, nil, nil) != nil {
		t.Error("New(net.Pipe) is not nil")
	}
	wantLinux(t)
	addr, _ := lineServer(t, 0)
	d := Defer(dial(t, addr))
	sc, ok := d.(syscall.Conn)
	if !ok {
		t.Fatal("a Deferred connection is not a syscall.Conn")
	}
	if _, err := sc.SyscallConn(); err != nil {
		t.Fatal(err)
	}
	dialed := Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	})
	c, err := dialed(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*Deferred); !ok || !strings.Contains(c.LocalAddr().String(), "127.0.0.1") {
		t.Errorf("Dialer gave %T", c)
	}
}
