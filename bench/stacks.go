//go:build linux

package main

// --stacks: how deep the goroutine stack of a request is where it waits. At 64 requests in flight
// each holds its stack's lines across its wait for the upstream, and they add up in the cache
// (PERFORMANCE.md, "The data a request touches among others in flight"); this measures them.
// The gateway is started against an upstream of its own that reads a request and then holds it
// (no answer, a stream's head only, or a head and one event), and once the gateway waits, it is
// sent SIGQUIT with GOTRACEBACK=system, under which Go's dump gives each frame's stack pointer.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stackWait is a place a request waits for its upstream.
type stackWait struct {
	name   string
	stream bool
	// sends is what the holding upstream sends once it has read the request, before it holds
	// the connection open.
	sends string
}

var stackWaits = []stackWait{
	{"chat, for the answer", false, ""},
	{"stream, for its first event", true, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"},
	{"stream, for its next event", true, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		chunk(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"fake-model",`+
			`"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`+"\n\n")},
}

// chunk is s as one chunk of a chunked body.
func chunk(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }

// stackFrame is one function's frame: its size is its frame pointer less its stack pointer.
type stackFrame struct {
	fn   string
	size int
}

// stackDepth is a request's goroutine stack where it waits: from the top of its first frame
// (the goroutine's start) to the stack pointer of the frame that parked it, and its frames,
// innermost first.
type stackDepth struct {
	wait   string
	depth  int
	frames []stackFrame
}

// stackFrameLine is a frame's line in a dump taken under GOTRACEBACK=system: the call's line
// (function and arguments), then its file and line with fp=, sp= and pc=.
var stackFrameLine = regexp.MustCompile(`(?m)^(\S.*)\(.*\)\n\s+\S+ \+0x[0-9a-f]+ fp=0x([0-9a-f]+) sp=0x([0-9a-f]+)`)

// parseStackDump finds, in a dump of all goroutines, the one whose stack holds a frame of
// marker (the function a request's handler runs in) and measures it.
func parseStackDump(dump, marker string) (stackDepth, error) {
	for g := range strings.SplitSeq(dump, "\n\n") {
		if !strings.HasPrefix(g, "goroutine ") || !strings.Contains(g, marker) {
			continue
		}
		var d stackDepth
		top, bottom := uint64(0), ^uint64(0)
		for _, m := range stackFrameLine.FindAllStringSubmatch(g, -1) {
			fp, err1 := strconv.ParseUint(m[2], 16, 64)
			sp, err2 := strconv.ParseUint(m[3], 16, 64)
			if err1 != nil || err2 != nil || fp < sp {
				return stackDepth{}, fmt.Errorf("a frame of the dump with fp=%s sp=%s", m[2], m[3])
			}
			top, bottom = max(top, fp), min(bottom, sp)
			d.frames = append(d.frames, stackFrame{fn: m[1], size: int(fp - sp)})
		}
		if len(d.frames) == 0 {
			return stackDepth{}, errors.New("the request's goroutine has no frame with fp= and sp= (was GOTRACEBACK=system set?)")
		}
		d.depth = int(top - bottom)
		return d, nil
	}
	return stackDepth{}, fmt.Errorf("no goroutine in the dump runs %s", marker)
}

// stackDepths measures the request's stack at each of stackWaits with the gateway binary gw.
func stackDepths(ctx context.Context, e *environment, gw string) ([]stackDepth, error) {
	var out []stackDepth
	for _, w := range stackWaits {
		e.logf("stacks: %s", w.name)
		d, err := stackAt(ctx, e.dir, gw, w, chatBody("bench", w.stream, e.opts.PromptBytes))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// stackAt starts gw in front of an upstream that holds w's request, sends it one (body, the
// bench's chat request), and once the upstream holds it, dumps the gateway's goroutines and
// measures the request's.
func stackAt(ctx context.Context, dir, gw string, w stackWait, body []byte) (stackDepth, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return stackDepth{}, err
	}
	defer ln.Close()
	held := make(chan struct{}, 1)
	go holdRequests(ln, w.sends, held)
	p, addr, err := onFreeAddr(func(addr string) (*proc, error) {
		path := filepath.Join(dir, "gateway-stacks.toml")
		cfg := fmt.Sprintf("listen = %q\n\n[targets.held]\nadapter = \"openai\"\nurl = \"http://%s/v1\"\nmodel = \"fake-model\"\n\n"+
			"[routes.bench]\ntargets = [\"held\"]\n", addr, ln.Addr())
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			return nil, err
		}
		p, err := startProc("gateway-stacks", gw, []string{"serve", "--config", path}, []string{"GOTRACEBACK=system"}, dir)
		return startedReady(ctx, p, err, "http://"+addr+"/healthz")
	})
	if err != nil {
		return stackDepth{}, err
	}
	defer p.stop()
	rctx, cancel := context.WithCancel(ctx)
	client, sent := newClient(1), make(chan struct{})
	defer func() {
		cancel()
		<-sent
		client.CloseIdleConnections()
	}()
	go func() {
		defer close(sent)
		req, err := http.NewRequestWithContext(rctx, http.MethodPost, "http://"+addr+"/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		return stackDepth{}, errors.New("the request did not reach the upstream within 10 s")
	case <-ctx.Done():
		return stackDepth{}, ctx.Err()
	}
	// The gateway reads what the upstream sent and parks; a dump taken before that would catch
	// the request on its way down.
	time.Sleep(300 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return stackDepth{}, err
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		return stackDepth{}, errors.New("the gateway did not exit within 10 s of SIGQUIT")
	}
	dump, err := os.ReadFile(p.logPath)
	if err != nil {
		return stackDepth{}, err
	}
	d, err := parseStackDump(string(dump), "server.(*Server).serveOp")
	d.wait = w.name
	return d, err
}

// holdRequests serves ln: it reads each connection's request (its head and the body its
// Content-Length gives), writes sends, tells held, and then keeps the connection open until ln
// is closed.
func holdRequests(ln net.Listener, sends string, held chan<- struct{}) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		conns = append(conns, c)
		go func() {
			br := bufio.NewReader(c)
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, sends); err != nil {
				return
			}
			select {
			case held <- struct{}{}:
			default:
			}
		}()
	}
}

// stacksMarkdown is the --stacks report: each wait's depth and its largest frames.
func stacksMarkdown(ds []stackDepth, least int) string {
	var b strings.Builder
	b.WriteString("### The request's goroutine stack where it waits (bytes; GOTRACEBACK=system's dump after SIGQUIT)\n\n")
	fmt.Fprintf(&b, "| where the request waits | depth | frames of %d bytes or more, innermost first |\n|---|---|---|\n", least)
	for _, d := range ds {
		var big []string
		for _, f := range d.frames {
			if f.size >= least {
				big = append(big, fmt.Sprintf("`%s` %d", strings.TrimPrefix(f.fn, "github.com/hayula/gateway/"), f.size))
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %s |\n", d.wait, d.depth, strings.Join(big, ", "))
	}
	return b.String()
}
