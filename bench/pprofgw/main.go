// Command pprofgw is `gateway serve` with net/http/pprof on a second loopback listener. It exists
// for the bench harness's --profile phase only, so that the gateway that ships never links pprof
// and the binary the harness measures is the real one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/internal/logbuf"
	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pprofgw:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pprofgw", flag.ContinueOnError)
	path := fs.String("config", "gateway.toml", "configuration file")
	listen := fs.String("listen", "", "listen address (overrides the config's)")
	pprofAddr := fs.String("pprof", "127.0.0.1:0", "loopback address of the pprof listener")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return err
	}
	// The logger gateway serve builds (cmd/gateway newLogger): batched writes, logfmt's text format.
	buf := logbuf.New(os.Stderr, 100*time.Millisecond, 64<<10)
	defer buf.Close()
	log := slog.New(logfmt.NewText(buf, lvl))
	cfg, err := config.Load(*path, os.Getenv)
	if err != nil {
		return err
	}
	if *listen != "" {
		if err := cfg.SetListen(*listen); err != nil {
			return err
		}
	}
	pl, err := net.Listen("tcp", *pprofAddr)
	if err != nil {
		return err
	}
	if ip := pl.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		_ = pl.Close()
		return errors.New("the pprof listener must be on loopback")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ps := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ps.Serve(pl) }()
	defer ps.Close()

	srv, err := server.New(server.Options{Config: cfg, Logger: log})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	// As gateway serve does: active health checks and managed processes, when configured.
	if err := srv.Start(ctx); err != nil {
		_ = ln.Close()
		return err
	}
	// The harness reads this line to find both listeners.
	fmt.Printf("gateway=%s pprof=%s\n", ln.Addr(), pl.Addr())
	return server.Serve(ctx, ln, srv.Handler(), 5*time.Second, log)
}
