package lifecycle

import (
	"bytes"
	"os"
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

// groupHasLive reports whether a process of the group pgid other than a zombie is left, from
// /proc/PID/stat; when /proc cannot be read it says yes, which costs a stop its bound at worst.
func groupHasLive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		st, ok := readStat(e.Name())
		if ok && st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			return true
		}
	}
	return false
}

// procStat is what lifecycle reads of /proc/PID/stat.
type procStat struct {
	state      byte
	ppid, pgrp int
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
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp}, true
}
