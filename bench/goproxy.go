//go:build linux

package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

// roleGoProxy re-executes this binary as a plain httputil.ReverseProxy: the cost of a Go proxy
// that parses nothing, with the same net/http server and client the gateway uses. Against it, the
// gateway's column shows what its own work adds; against nginx, what Go's net/http costs.
const roleGoProxy = "goproxy"

func goproxyMain(args []string) int {
	fs := flag.NewFlagSet("bench goproxy", flag.ContinueOnError)
	target := fs.String("target", "", "base URL of the upstream")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "goproxy: bad -target", *target)
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "goproxy:", err)
		return 1
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
	}
	rp.FlushInterval = -1 // flush every write, as SSE needs
	// The body is read whole first, as the gateway does: handed to the transport as it arrives,
	// net/http closes the upstream connection of some streams under way (use of closed network
	// connection), which would count as failures that are net/http's and not the proxy model's.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("addr=%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
	return 0
}

func (e *environment) startGoProxy() (err error) {
	e.goproxy, e.goproxyAddr, err = startRole("goproxy", roleGoProxy, "http://"+e.fast, e.dir)
	return err
}

// startRole re-executes this binary in role, in front of target, and returns the process and the
// address it said it listens on (its first line of output, "addr=HOST:PORT").
func startRole(name, role, target, dir string) (*proc, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	p, err := startProc(name, exe, []string{"-target", target}, []string{roleEnv + "=" + role}, dir)
	if err != nil {
		return nil, "", err
	}
	line, err := bufio.NewReader(p.stdout).ReadString('\n')
	if err != nil {
		p.stop()
		return nil, "", fmt.Errorf("%s did not start: %w\n%s", name, err, p.logTail())
	}
	var addr string
	if _, err := fmt.Sscanf(line, "addr=%s", &addr); err != nil {
		p.stop()
		return nil, "", fmt.Errorf("%s said %q: %w", name, line, err)
	}
	return p, addr, nil
}
