package lifecycle

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr puts the child in its own process group, so that a stop reaches whatever it spawned,
// and asks the kernel to SIGKILL it when the thread that forked it dies; Manager forks from one
// locked thread that lives until Close, so that is "when the gateway dies".
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// procStat is what lifecycle reads of /proc/PID/stat.
type procStat struct {
	state      byte
	ppid, pgrp int
	start      uint64 // clock ticks after boot: with the pid, names one process for good
}

// scanGroup makes one pass over /proc. live reports whether a process of the group pgid other
// than a zombie is left; when /proc cannot be read it says yes, which costs a stop its bound at
// worst. found lists the live descendants of the group's processes and of known that are outside
// the group and not in known: those that left it (setsid, setpgid) since known was found. Only
// those whose parents still run are found: one whose parent died before is a child of init by now.
func scanGroup(pgid int, known []escapee) (live bool, found []escapee) {
	if len(known) == 0 && errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false, nil // nothing left to look from
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true, nil
	}
	type proc struct {
		pid int
		procStat
	}
	isKnown := func(p proc) bool {
		return slices.Contains(known, escapee{pid: p.pid, start: p.start})
	}
	children := map[int][]proc{}
	var next []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := readStat(e.Name())
		if !ok {
			continue
		}
		p := proc{pid, st}
		children[st.ppid] = append(children[st.ppid], p)
		zombie := st.state == 'Z' || st.state == 'X'
		if st.pgrp == pgid && !zombie {
			live = true
		}
		if st.pgrp == pgid || isKnown(p) {
			next = append(next, pid)
		}
	}
	seen := map[int]bool{}
	for len(next) > 0 {
		parent := next[len(next)-1]
		next = next[:len(next)-1]
		if seen[parent] {
			continue
		}
		seen[parent] = true
		for _, c := range children[parent] {
			next = append(next, c.pid)
			if c.pgrp != pgid && c.state != 'Z' && c.state != 'X' && !isKnown(c) {
				found = append(found, escapee{pid: c.pid, start: c.start})
			}
		}
	}
	return live, found
}

// signalEscapees sends SIGTERM, or SIGKILL if kill, to each escapee that is still the process it
// was found as.
func signalEscapees(es []escapee, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	for _, e := range es {
		// The check and the kill are not atomic, but a pid is reused only after the kernel has
		// gone round every other one, not within the moment between them.
		if st, ok := readStat(strconv.Itoa(e.pid)); ok && st.start == e.start {
			_ = syscall.Kill(e.pid, sig)
		}
	}
}

// escapeesAlive reports whether an escapee still runs; a zombie does not.
func escapeesAlive(es []escapee) bool {
	for _, e := range es {
		if st, ok := readStat(strconv.Itoa(e.pid)); ok && st.start == e.start && st.state != 'Z' && st.state != 'X' {
			return true
		}
	}
	return false
}

// readStat reads /proc/pid/stat; ok is false for a process gone meanwhile or a line it cannot
// parse.
func readStat(pid string) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name in parentheses may hold spaces and parentheses; the fields follow the last
	// ')': state ppid pgrp ...
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	// state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime
	// cstime priority nice num_threads itrealvalue starttime
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp, start: start}, true
}

// KillDescendants sends SIGKILL to every process this one started that still runs, to what those
// started (in their process groups, or that left them while their parent ran) and to each process
// group a child of this process leads, as each process a Manager starts does: for a gateway that
// is about to exit at once (a second signal) and so cannot stop them in turn. Pdeathsig would
// take only the processes it started itself; their workers would live on, holding their GPU
// memory. It waits for none of them.
func KillDescendants() {
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(e.Name()); ok {
			children[st.ppid] = append(children[st.ppid], pid)
			if st.ppid == self && st.pgrp == pid {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	}
	next := slices.Clone(children[self])
	for len(next) > 0 {
		pid := next[len(next)-1]
		next = next[:len(next)-1]
		_ = syscall.Kill(pid, syscall.SIGKILL)
		next = append(next, children[pid]...)
	}
}
