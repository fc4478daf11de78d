package conformance

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Main runs the `gateway conformance` command: args are the flags after the
// subcommand name. Progress goes to stderr so that `--format json > file`
// stays clean; the report goes to stdout or --out. It returns the exit
// code: 0 when every MUST check passed or was skipped, 1 when one failed,
// 2 when the arguments are wrong or the server could not be reached. getenv is how
// --api-key-env reads the key (os.Getenv).
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	var o Options
	var only, format, out string
	fs.StringVar(&o.BaseURL, "base-url", "", "server to check, with or without the /v1 suffix (required)")
	var keyEnv string
	fs.StringVar(&keyEnv, "api-key-env", "", "read the bearer token from this environment variable; also enables the bad-key check")
	fs.StringVar(&o.APIKey, "api-key", "", "bearer token, as --api-key-env (which keeps it out of ps and shell history)")
	fs.StringVar(&o.Model, "model", "", "chat model (default: the first id in /v1/models not named like an embedding model and not refusing chat; the report says which and why)")
	fs.StringVar(&o.EmbeddingModel, "embedding-model", "", "embedding model (default: without --model, the first id in /v1/models named like an embedding model, else the chat model; a 400 then means unsupported; the report says which and why)")
	fs.StringVar(&only, "only", "", "run only checks whose id matches this glob; comma-separated globs allowed")
	fs.BoolVar(&o.Strict, "strict", false, "STRICT checks count like MUST instead of only warning")
	fs.StringVar(&format, "format", string(FormatTable), "report format: table, json, junit or markdown")
	fs.StringVar(&out, "out", "", "write the report to this file instead of stdout")
	fs.DurationVar(&o.Timeout, "timeout", defaultTimeout, "timeout for each request")
	var caFile string
	fs.StringVar(&caFile, "ca-file", "", "also trust the PEM certificates in this file (an https:// server whose certificate is self-signed or from a private CA)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: gateway conformance --base-url URL [--api-key-env VAR | --api-key KEY] [--model M] [--embedding-model E]")
		fmt.Fprintln(w, "       [--only GLOB] [--strict] [--format table|json|junit|markdown] [--out FILE] [--timeout 30s] [--ca-file PEM]")
		fmt.Fprintln(w, "Grades an OpenAI-compatible server against the OpenAI API, raw and through the openai-go SDK, and")
		fmt.Fprintln(w, "prints a report (CONFORMANCE.md); exits 0 when every MUST check passed or was skipped, 1 when one")
		fmt.Fprintln(w, "failed, 2 on a usage mistake or a server it could not reach.")
		fs.PrintDefaults()
	}
	// Help asked for (--help, -h) is the command's answer, on stdout with 0; a mistake's message
	// and the usage go to stderr with 2.
	var said bytes.Buffer
	fs.SetOutput(&said)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = stdout.Write(said.Bytes())
		return 0
	}
	if err != nil {
		_, _ = stderr.Write(said.Bytes())
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "conformance: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if keyEnv != "" {
		if o.APIKey != "" {
			fmt.Fprintln(stderr, "conformance: --api-key and --api-key-env both give the key: use one")
			return 2
		}
		if o.APIKey = getenv(keyEnv); o.APIKey == "" {
			fmt.Fprintf(stderr, "conformance: --api-key-env: %s is unset or empty\n", keyEnv)
			return 2
		}
	}
	f, err := ParseFormat(format)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	for _, g := range strings.Split(only, ",") {
		if g = strings.TrimSpace(g); g != "" {
			o.Only = append(o.Only, g)
		}
	}
	o.Progress = stderr
	if caFile != "" {
		tr, err := trusting(caFile)
		if err != nil {
			fmt.Fprintf(stderr, "conformance: --ca-file: %v\n", err)
			return 2
		}
		defer tr.CloseIdleConnections()
		o.HTTPClient = &http.Client{Transport: tr}
	}

	// --out is opened before the run, which may take minutes against a real model: a path that
	// cannot be created is said now, not once the report is done (TestOutCheckedBeforeRun).
	dst, err := openOut(out)
	if err != nil {
		fmt.Fprintf(stderr, "conformance: --out: %v\n", err)
		return 2
	}
	defer dst.abandon()
	rep, err := Run(ctx, o)
	if err != nil {
		// A usage error may quote the server's answer to /v1/models.
		fmt.Fprintln(stderr, printable(err.Error()))
		return 2
	}
	if err := writeReport(rep, f, dst, stdout); err != nil {
		fmt.Fprintf(stderr, "conformance: writing report: %v\n", err)
		return 2
	}
	if out != "" {
		fmt.Fprintln(stderr, rep.verdictLine())
	}
	return rep.ExitCode()
}

// trusting is a transport that trusts the PEM certificates in file besides the system's: for a
// gateway serving HTTPS with a self-signed certificate (tls_cert_file), which the system does not
// know (TestCAFileTrusted).
func trusting(file string) (*http.Transport, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // none on this system: the file's alone
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", file)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr, nil
}

// outFile is --out, opened before the run: a file it created is removed if no report is written
// into it, and one that was there is left as it was until the report replaces it.
type outFile struct {
	file    *os.File // nil: the report goes to stdout
	created bool
	done    bool
}

func openOut(path string) (*outFile, error) {
	if path == "" {
		return &outFile{}, nil
	}
	_, statErr := os.Stat(path)
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	return &outFile{file: file, created: errors.Is(statErr, os.ErrNotExist)}, nil
}

// abandon closes the file if no report was written, and removes it if the run created it.
func (o *outFile) abandon() {
	if o.file == nil || o.done {
		return
	}
	_ = o.file.Close()
	if o.created {
		_ = os.Remove(o.file.Name())
	}
}

func writeReport(rep *Report, f Format, dst *outFile, stdout io.Writer) error {
	if dst.file == nil {
		return rep.Write(stdout, f)
	}
	dst.done = true
	if fi, err := dst.file.Stat(); err == nil && fi.Mode().IsRegular() {
		// Not a pipe or a device (--out /dev/stdout), which cannot be truncated.
		if err := dst.file.Truncate(0); err != nil {
			dst.file.Close()
			return err
		}
	}
	if err := rep.Write(dst.file, f); err != nil {
		dst.file.Close()
		return err
	}
	return dst.file.Close()
}
