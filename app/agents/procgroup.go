package agents

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

// signalGroup sends sig to every process of the group pgid. A group that is
// already gone reports os.ErrProcessDone, which tells os/exec the command
// finished on its own.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// endGroup makes sure nothing the agent started outlives the call: whatever
// is left of the group gets SIGTERM (unless Cancel already sent it at
// termAt, in Unix nanoseconds), then SIGKILL once the grace has passed.
func endGroup(pgid int, grace time.Duration, termAt int64, sandboxed bool) {
	if !groupAlive(pgid) {
		return
	}
	deadline := time.Now().Add(grace)
	if termAt != 0 {
		deadline = time.Unix(0, termAt).Add(grace)
	} else if terminateGroup(pgid, sandboxed) != nil {
		return
	}
	if waitGroup(pgid, deadline) {
		return
	}
	_ = signalGroup(pgid, syscall.SIGKILL)
	// SIGKILL is delivered when the process next runs; wait for that, so
	// the caller may remove the working copy once Run returns.
	waitGroup(pgid, time.Now().Add(killWait))
}

// killWait bounds the wait for SIGKILLed processes to be gone; only a
// process stuck in the kernel (uninterruptible I/O) takes longer.
const killWait = 2 * time.Second

// waitGroup polls until no process of the group runs, or deadline passes,
// and reports whether the group is gone.
func waitGroup(pgid int, deadline time.Time) bool {
	for {
		if !groupAlive(pgid) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupAlive reports whether a process of the group is still running. Dead
// members the system has not reaped yet (zombies, common when PID 1 of a
// container does not reap orphans) still answer signal 0, so where /proc
// exists it is asked for members that are not zombies.
func groupAlive(pgid int) bool {
	if signalGroup(pgid, 0) != nil {
		return false
	}
	members, ok := groupMembers(pgid)
	return !ok || len(members) > 0
}

// groupMembers lists the running processes of the group, as /proc tells;
// ok is false when /proc cannot be read.
func groupMembers(pgid int) (pids []int, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	want := []byte(strconv.Itoa(pgid))
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited while we looked
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) >= 3 && bytes.Equal(f[2], want) && !bytes.Equal(f[0], []byte("Z")) && !bytes.Equal(f[0], []byte("X")) {
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, true
}

// agentProcAttr starts an agent process as the leader of a session (and so
// a process group) of its own: one signal reaches every process it starts,
// and it has no controlling terminal to push input into (TIOCSTI).
func agentProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// terminateGroup asks the group pgid to end with SIGTERM. In a sandbox the
// leader is bwrap, which SIGTERM would kill at once, and its death takes the
// whole sandbox down with SIGKILL: it is spared, so the agent gets its grace
// like an unsandboxed one, and bwrap ends when the agent does.
func terminateGroup(pgid int, sandboxed bool) error {
	if !sandboxed {
		return signalGroup(pgid, syscall.SIGTERM)
	}
	members, ok := groupMembers(pgid)
	if !ok {
		return signalGroup(pgid, syscall.SIGTERM)
	}
	for _, pid := range members {
		if pid != pgid {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	if signalGroup(pgid, 0) != nil {
		return os.ErrProcessDone
	}
	return nil
}
