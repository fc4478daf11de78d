//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
)

// roleGoBlind re-executes this binary as a byte relay that knows HTTP/1.1 framing and nothing
// else: a goroutine and one upstream connection per client connection; each message (request or
// answer) is framed by its head's Content-Length or chunked encoding (no body for an answer to
// HEAD, a 1xx, 204 or 304) and its bytes are copied on as they arrive, unread beyond that. No
// JSON, no routing, no log line, no timeout, hop-by-hop fields passed as they are, no second
// dial when the upstream closes an idle connection (the bench's fake upstream never does). It is
// a lower bound for a Go proxy, below what any real one does: what Go's runtime and the kernel
// cost to move the bench's bytes on this machine. Nor does it ask for TCP keepalive probes on
// either side (nginx asks for none, and the gateway none on loopback), which net's defaults
// would cost it four setsockopt calls a connection. gateway − goblind is the gateway's own work plus
// the head parsing, pooling and timeouts every proxy pays (nginx's column pays them too).
const roleGoBlind = "goblind"

// maxBlindHead bounds a message head; the bench's heads are a few hundred bytes.
const maxBlindHead = 16 << 10

func goblindMain(args []string) int {
	fs := flag.NewFlagSet("bench goblind", flag.ContinueOnError)
	target := fs.String("target", "", "host:port of the upstream")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if _, _, err := net.SplitHostPort(*target); err != nil {
		fmt.Fprintln(os.Stderr, "goblind: bad -target", *target)
		return 2
	}
	ln, err := blindListen()
	if err != nil {
		fmt.Fprintln(os.Stderr, "goblind:", err)
		return 1
	}
	go blindServe(ln, *target)
	fmt.Printf("addr=%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = ln.Close()
	return 0
}

// blindListen listens on loopback for clients, asking for no keepalive probes.
func blindListen() (net.Listener, error) {
	return (&net.ListenConfig{KeepAlive: -1}).Listen(context.Background(), "tcp", "127.0.0.1:0")
}

// blindDial connects to the upstream, asking for no keepalive probes.
func blindDial(upstream string) (net.Conn, error) {
	return (&net.Dialer{KeepAlive: -1}).Dial("tcp", upstream)
}

// blindServe accepts until ln is closed.
func blindServe(ln net.Listener, upstream string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go blindConn(c, upstream)
	}
}

// blindConn relays one client connection's requests, one at a time, over one upstream
// connection, until either side closes or sends something it cannot frame.
func blindConn(c net.Conn, upstream string) {
	defer c.Close()
	u, err := blindDial(upstream)
	if err != nil {
		return
	}
	defer u.Close()
	in, out := &blindSide{conn: c, buf: make([]byte, 8<<10)}, &blindSide{conn: u, buf: make([]byte, 8<<10)}
	for {
		isHead, err := relayMessage(in, u, false)
		if err != nil {
			return
		}
		for interim := true; interim; { // a 1xx answer is followed by the final one
			if interim, err = relayMessage(out, c, isHead); err != nil {
				return
			}
		}
	}
}

// blindSide is one connection read from, with the bytes read past the last message.
type blindSide struct {
	conn net.Conn
	buf  []byte
	n    int // buf[:n] holds bytes read and not yet relayed
}

var errBlindFrame = errors.New("goblind: a message it cannot frame")

// relayMessage copies one message from src to dst: the head and whatever of the body came with
// it in one write, then the rest of the body, each read written as it arrives.
func relayMessage(src *blindSide, dst io.Writer, reqHead bool) (bool, error) {
	head := -1
	for head < 0 {
		if head = bytes.Index(src.buf[:src.n], []byte("\r\n\r\n")); head >= 0 {
			break
		}
		if src.n == len(src.buf) {
			if src.n >= maxBlindHead {
				return false, errBlindFrame
			}
			src.buf = append(src.buf, make([]byte, len(src.buf))...)
		}
		m, err := src.conn.Read(src.buf[src.n:])
		if err != nil {
			return false, err
		}
		src.n += m
	}
	var fr framer
	flag, err := fr.init(src.buf[:head+2], reqHead)
	if err != nil {
		return false, err
	}
	have := head + 4
	for {
		used, done := fr.feed(src.buf[have:src.n])
		have += used
		if done {
			break
		}
		if _, err := dst.Write(src.buf[:have]); err != nil {
			return false, err
		}
		m, err := src.conn.Read(src.buf)
		if err != nil {
			return false, err
		}
		src.n, have = m, 0
	}
	if _, err := dst.Write(src.buf[:have]); err != nil {
		return false, err
	}
	src.n = copy(src.buf, src.buf[have:src.n])
	return flag, nil
}

// framer finds where a message's body ends: after Content-Length bytes, or after a chunked
// body's last chunk and trailer. A head with neither has no body (the bench sends none such).
type framer struct {
	chunked bool
	left    int64 // Content-Length bytes, or the current chunk's data and its CRLF, still to come
	state   int   // chunked: where in the chunk framing the next byte falls
	size    int64 // chunked: the size line being read
	line    bool  // chunked, in a trailer: the current line has bytes
}

const (
	chunkSize    = iota // hex digits of a chunk's size
	chunkExt            // the rest of the size line, to its LF
	chunkData           // data and its CRLF (left counts both)
	chunkTrailer        // trailer lines, to an empty one
)

// init reads the framing from the head's lines (status or request line first, each ending CRLF).
// reqHead says the message answers a HEAD request. flag is, for a request, whether it is HEAD;
// for an answer, whether it is an interim (1xx) one.
func (f *framer) init(head []byte, reqHead bool) (flag bool, err error) {
	*f = framer{}
	noBody := reqHead
	if first, _, _ := bytes.Cut(head, []byte("\r\n")); bytes.HasPrefix(first, []byte("HEAD ")) {
		flag = true
	} else if len(first) >= 12 && bytes.HasPrefix(first, []byte("HTTP/1.")) {
		code := string(first[9:12])
		flag = code[0] == '1'
		noBody = noBody || flag || code == "204" || code == "304"
	}
	for len(head) > 0 {
		i := bytes.Index(head, []byte("\r\n"))
		line := head[:i]
		head = head[i+2:]
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return false, errBlindFrame
			}
			f.left = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) {
				return false, errBlindFrame
			}
			f.chunked = true
		}
	}
	if f.chunked {
		f.left = 0
	}
	if noBody {
		f.chunked, f.left = false, 0
	}
	return flag, nil
}

// feed consumes body bytes from b and returns how many belong to this message and whether the
// message ends within them.
func (f *framer) feed(b []byte) (used int, done bool) {
	if !f.chunked {
		n := int(min(f.left, int64(len(b))))
		f.left -= int64(n)
		return n, f.left == 0
	}
	for used < len(b) {
		c := b[used]
		switch f.state {
		case chunkData:
			n := int(min(f.left, int64(len(b)-used)))
			f.left -= int64(n)
			used += n
			if f.left == 0 {
				f.state = chunkSize
			}
			continue
		case chunkSize:
			switch {
			case c >= '0' && c <= '9':
				f.size = f.size<<4 | int64(c-'0')
			case c|0x20 >= 'a' && c|0x20 <= 'f':
				f.size = f.size<<4 | int64(c|0x20-'a'+10)
			default:
				f.state = chunkExt
				continue // this byte is the extension's or the CR's: look at it there
			}
		case chunkExt:
			if c == '\n' {
				if f.size == 0 {
					f.state = chunkTrailer
				} else {
					f.state, f.left, f.size = chunkData, f.size+2, 0
				}
			}
		case chunkTrailer:
			switch c {
			case '\n':
				if !f.line {
					return used + 1, true
				}
				f.line = false
			case '\r':
			default:
				f.line = true
			}
		}
		used++
	}
	return used, false
}

func (e *environment) startGoBlind() (err error) {
	if e.goblind, e.goblindAddr, err = startRole("goblind", roleGoBlind, e.fast, e.dir); err != nil || e.opts.Streams == 0 {
		return err
	}
	e.goblindSlow, e.goblindSlowAddr, err = startRole("goblind-slow", roleGoBlind, e.slow, e.dir)
	return err
}
