//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process: the fake upstream, the gateway or nginx. Its stdin is a pipe that the
// child may watch to notice that the harness went away; Pdeathsig kills it if the harness dies.
type proc struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  io.Reader
	logPath string
	done    chan struct{}
	err     error
	// grace is how long stop waits after SIGTERM before it kills; zero means 5 s. A program
	// under valgrind writes its counts as it exits, which a kill would lose.
	grace time.Duration
}

func startProc(name, path string, args, env []string, logDir string) (*proc, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &proc{name: name, cmd: cmd, logPath: filepath.Join(logDir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.stdout = out
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		// Wait closes stdout once the child has exited, which only ends a read that is waiting
		// for a child that is gone anyway; children print one line at most.
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the child has ended, with its error.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop asks the child to end (stdin closed, SIGTERM), and kills it if it has not within 5 s.
func (p *proc) stop() {
	_ = p.stdin.Close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	grace := p.grace
	if grace == 0 {
		grace = 5 * time.Second
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// logTail is the end of the child's stderr, for error messages.
func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// memory is a process's resident set size now (VmRSS) and at its peak (VmHWM), in bytes.
type memory struct{ RSS, HWM int64 }

func readMemory(pid int) (memory, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) != 2 || fields[1] != "kB" {
			return m, fmt.Errorf("/proc/%d/status: odd %s line %q", pid, k, v)
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return m, err
		}
		if k == "VmRSS" {
			m.RSS = n << 10
		} else {
			m.HWM = n << 10
		}
	}
	if m.RSS == 0 {
		return m, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
	}
	return m, sc.Err()
}

// moduleRoot is the directory of the gateway's go.mod, found from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 64 {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/hayula/gateway") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("run the bench from inside the gateway's module (go run ./bench)")
}

// build compiles pkg (relative to the module root) into dir and returns the binary's path.
func build(ctx context.Context, root, pkg, dir string) (string, error) {
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}

// freeAddr returns a loopback address that was free a moment ago. Another process could take it
// before the child binds it; the child then fails to start and the harness says so.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// onFreeAddr starts a child on a loopback address freeAddr finds: start writes the child's
// config for addr, starts it and waits until it is ready. When the address was taken between
// freeAddr and the child's bind (the child said "address already in use"), it tries again on
// another, three times in all: a count under valgrind, which starts slowly, failed whole when a
// test suite's server took its port meanwhile (TestOnFreeAddrRetriesATakenPort).
func onFreeAddr(start func(addr string) (*proc, error)) (*proc, string, error) {
	var err error
	for range 3 {
		var addr string
		if addr, err = freeAddr(); err != nil {
			return nil, "", err
		}
		var p *proc
		if p, err = start(addr); err == nil {
			return p, addr, nil
		}
		if !strings.Contains(err.Error(), "address already in use") {
			return nil, "", err
		}
	}
	return nil, "", err
}

// startedReady is a child just started (err: its start's error) once it answers url, which
// waitReady waits for; one that does not is stopped, and the error is the caller's.
func startedReady(ctx context.Context, p *proc, err error, url string) (*proc, error) {
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, p, url); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// waitReady polls url until the child listens on its address and it answers 200, the child
// exits, or 15 s pass. The address freeAddr found free may be taken by another program (a test
// suite's server) before the child binds it, slowly under valgrind: its answers then passed for
// the child's, and a count's requests went to it (a model "auto" answered 404 by a gateway
// without [auto]).
func waitReady(ctx context.Context, p *proc, url string) error {
	c := &http.Client{Timeout: time.Second}
	hostport := strings.TrimPrefix(url, "http://")
	if i := strings.IndexByte(hostport, '/'); i >= 0 {
		hostport = hostport[:i]
	}
	for range 300 {
		if done, err := p.exited(); done {
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", p.name, err, p.logTail())
		}
		if !listensOn(p.cmd.Process.Pid, hostport) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		resp, err := c.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer %s within 15s:\n%s", p.name, url, p.logTail())
}

// listensOn reports whether process pid holds the socket listening on addr, an IPv4 host:port:
// one of its descriptors is the socket whose inode /proc/net/tcp lists in state LISTEN on that
// port (the address may be 0.0.0.0, as nginx's is written, or the host).
func listensOn(pid int, addr string) bool {
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return false
	}
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false
	}
	inodes := map[string]bool{}
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		_, local, ok := strings.Cut(f[1], ":")
		if p, err := strconv.ParseUint(local, 16, 16); ok && err == nil && p == port {
			inodes["socket:["+f[9]+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return false
	}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name()); err == nil && inodes[link] {
			return true
		}
	}
	return false
}

// raiseNoFile lifts the soft file-descriptor limit to the hard one. Setting it explicitly also
// makes the children inherit it (Go restores the original soft limit for children otherwise).
// It returns the limit in force.
func raiseNoFile() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}

// cpuUse is what processes have used of the CPU: run, their time on it from
// /proc/PID/task/*/schedstat (nanoseconds), and user and sys, its split into user and kernel
// mode from /proc/PID/stat's utime and stime (clock ticks, a hundredth of a second here: coarse
// for one round, and summed over a row's rounds for the split).
type cpuUse struct {
	run       time.Duration
	user, sys int64
}

func (u cpuUse) minus(v cpuUse) cpuUse {
	return cpuUse{run: u.run - v.run, user: u.user - v.user, sys: u.sys - v.sys}
}

// cpuTime is the CPU the processes pids have used, summed over their threads; with children,
// each process's child processes count too (nginx's workers under its master). Zero where /proc
// cannot tell.
func cpuTime(children bool, pids ...int) cpuUse {
	var total cpuUse
	for _, pid := range pids {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			f, _, _ := strings.Cut(string(b), " ")
			ns, err := strconv.ParseInt(f, 10, 64)
			if err == nil {
				total.run += time.Duration(ns)
			}
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if user, sys, ok := userSys(string(b)); ok {
				total.user += user
				total.sys += sys
			}
		}
		if !children {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if err != nil {
			continue
		}
		for _, c := range strings.Fields(string(b)) {
			if cpid, err := strconv.Atoi(c); err == nil {
				total = total.plus(cpuTime(false, cpid))
			}
		}
	}
	return total
}

func (u cpuUse) plus(v cpuUse) cpuUse {
	return cpuUse{run: u.run + v.run, user: u.user + v.user, sys: u.sys + v.sys}
}

// userSys reads utime and stime, the 14th and 15th fields of a /proc/PID/stat line (proc(5)).
// The second field, the command's name in parentheses, may hold spaces and parentheses itself:
// the fields are counted from after its last ')'.
func userSys(stat string) (user, sys int64, ok bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(stat[i+1:]) // from the 3rd field, state
	if len(f) < 13 {
		return 0, 0, false
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	return user, sys, err1 == nil && err2 == nil
}
