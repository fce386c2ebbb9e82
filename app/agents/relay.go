package agents

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// relayName is the name Forge's own binary has in a sandbox whose network
// is allow: run under it, the binary is the relay, not Forge.
const relayName = "forge-sandbox-relay"

// relayAt is where the sandbox shows Forge's binary under relayName.
const relayAt = "/run/forge-relay/" + relayName

// proxyVars are the variables that send a client's connections through a
// proxy: HTTP clients read one case or the other (curl only the lower case
// http_proxy, Go and Node's proxy agents either), reqwest (Codex) also
// ALL_PROXY. NO_PROXY is set empty so that nothing, loopback included,
// bypasses the proxy (where a client would connect directly, it finds
// nothing but the sandbox's own loopback).
var proxyVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}

var noProxyVars = []string{"NO_PROXY", "no_proxy"}

// The binary is the relay when started under relayName: every binary that
// holds this package (forge, and the tests that run agents) can so be the
// relay, with nothing else installed in the sandbox.
func init() {
	if filepath.Base(os.Args[0]) == relayName {
		os.Exit(runRelay(os.Args[1:]))
	}
}

// relayOptions are what the relay is told, before the agent's argv.
const (
	relayProxy = "--proxy" // SOCKET: the proxy's unix socket
	relayDrop  = "--drop"  // become agentHostID before the agent starts
)

// runRelay is the first process of a sandbox whose network is allow, or
// of every sandbox when Forge runs as root; args are its options, "--",
// then the agent's argv. With --proxy it listens on 127.0.0.1 (the only
// interface of the sandbox's network namespace), passes each connection
// to the proxy outside through the socket, and runs the agent with
// HTTPS_PROXY and HTTP_PROXY pointing at itself. With --drop it becomes
// agentHostID, with no capability left, before the agent starts. It exits with the agent's
// status.
func runRelay(args []string) int {
	var socket string
	drop := false
	for len(args) > 0 && args[0] != "--" {
		switch {
		case args[0] == relayDrop:
			drop, args = true, args[1:]
		case args[0] == relayProxy && len(args) > 1:
			socket, args = args[1], args[2:]
		default:
			fmt.Fprintf(os.Stderr, "%s: unknown option %q\n", relayName, args[0])
			return 125
		}
	}
	if len(args) < 2 {
		fmt.Fprintf(os.Stderr, "%s: usage: %s [--drop] [--proxy SOCKET] -- PROGRAM [ARG...]\n", relayName, relayName)
		return 125
	}
	argv := args[1:]
	env := os.Environ()
	if socket != "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: listen on loopback: %v\n", relayName, err)
			return 125
		}
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				go relayConn(conn, socket)
			}
		}()
		env = proxyEnv(env, "http://"+ln.Addr().String())
	}
	if drop {
		if err := dropToAgent(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", relayName, err)
			return 125
		}
	}

	// Forge ends an agent by signalling every process of its group: the
	// agent hears it itself, and the relay waits for it to exit.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", relayName, err)
	return 127
}

// proxyEnv is env with every proxy variable pointing at proxy, and
// NO_PROXY empty.
func proxyEnv(env []string, proxy string) []string {
	out := make([]string, 0, len(env)+len(proxyVars)+len(noProxyVars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !isProxyVar(name) {
			out = append(out, kv)
		}
	}
	for _, name := range proxyVars {
		out = append(out, name+"="+proxy)
	}
	for _, name := range noProxyVars {
		out = append(out, name+"=")
	}
	return out
}

// dropToAgent becomes agentHostID: root of the agents' user namespace
// until now, with its capabilities there, the relay keeps none, and the
// agent it starts has none.
func dropToAgent() error {
	if err := syscall.Setgroups([]int{agentHostID}); err != nil {
		return fmt.Errorf("drop supplementary groups: %w", err)
	}
	if err := syscall.Setresgid(agentHostID, agentHostID, agentHostID); err != nil {
		return fmt.Errorf("become gid %d: %w", agentHostID, err)
	}
	if err := syscall.Setresuid(agentHostID, agentHostID, agentHostID); err != nil {
		return fmt.Errorf("become uid %d: %w", agentHostID, err)
	}
	return nil
}

func isProxyVar(name string) bool {
	for _, list := range [][]string{proxyVars, noProxyVars} {
		for _, v := range list {
			if v == name {
				return true
			}
		}
	}
	return false
}

// relayConn joins one connection of the agent to the proxy.
func relayConn(conn net.Conn, socket string) {
	defer conn.Close()
	up, err := net.Dial("unix", socket)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, conn); closeWrite(up); done <- struct{}{} }()
	go func() { io.Copy(conn, up); closeWrite(conn); done <- struct{}{} }()
	<-done
	<-done
}
