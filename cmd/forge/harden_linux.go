package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// hideFromAgents makes the server's process not dumpable. Its /proc files
// (environ, mem, maps) then belong to root, so an agent, or a program the
// openai runtime's run_command starts, running as Forge's user cannot read
// the App's secrets from the server's environment or attach to it with
// ptrace. Agents are started by execve, which makes them dumpable again;
// the server itself leaves no core dump.
func hideFromAgents() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the process not dumpable: %w", err)
	}
	return nil
}
