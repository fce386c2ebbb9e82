package agents

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// agentHostID is the uid and gid an agent has outside its sandbox when
// Forge runs as root: the kernel's overflow id (nobody, nogroup), which
// owns nothing of the system. Without it bubblewrap would map the agent's
// uid to Forge's, root: every file it made in the working copy would be
// root's, a set-user-ID one included.
const agentHostID = 65534

// agentUserNamespace makes, as root, the user namespace every agent's
// sandbox joins (bubblewrap's --userns): root and agentHostID, mapped to
// themselves, and nothing else. Bubblewrap sets the sandbox up there as
// root, so it reaches Forge's own directories, private as they are; the
// sandbox's first process, Forge's binary as the relay, then becomes
// agentHostID for good (dropToAgent) before the agent starts. The
// namespace lives as long as the returned file is open: the process that
// made it is gone at once.
func agentUserNamespace() (*os.File, error) {
	program, err := exec.LookPath("cat")
	if err != nil {
		return nil, fmt.Errorf("find cat(1) to hold the agents' user namespace: %w", err)
	}
	hold := exec.Command(program)
	stdin, err := hold.StdinPipe()
	if err != nil {
		return nil, err
	}
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: agentHostID, HostID: agentHostID, Size: 1}}
	hold.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER, UidMappings: ids, GidMappings: ids,
		// The relay clears root's supplementary groups before it drops.
		GidMappingsEnableSetgroups: true,
	}
	if err := hold.Start(); err != nil {
		return nil, fmt.Errorf("make the agents' user namespace as root (uid %d outside; the kernel must allow user namespaces, user.max_user_namespaces above 0): %w", agentHostID, err)
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", hold.Process.Pid))
	stdin.Close()
	_ = hold.Wait()
	if err != nil {
		return nil, fmt.Errorf("open the agents' user namespace: %w", err)
	}
	return ns, nil
}

// chownTree gives a tree to uid and gid, links themselves rather than what
// they point at.
func chownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}
