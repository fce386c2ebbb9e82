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

// runRelay is the first process of a sandbox whose network is allow:
// args are the proxy's unix socket, then the agent's argv. It listens on
// 127.0.0.1 (the only interface of the sandbox's network namespace),
// passes each connection to the proxy outside through the socket, and runs
// the agent with HTTPS_PROXY and HTTP_PROXY pointing at itself. It exits
// with the agent's status.
func runRelay(args []string) int {
	if len(args) < 2 {
		fmt.Fprintf(os.Stderr, "%s: usage: %s SOCKET PROGRAM [ARG...]\n", relayName, relayName)
		return 125
	}
	socket, argv := args[0], args[1:]
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
	proxy := "http://" + ln.Addr().String()
	env := make([]string, 0, len(os.Environ())+len(proxyVars)+len(noProxyVars))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !isProxyVar(name) {
			env = append(env, kv)
		}
	}
	for _, name := range proxyVars {
		env = append(env, name+"="+proxy)
	}
	for _, name := range noProxyVars {
		env = append(env, name+"=")
	}

	// Forge ends an agent by signalling every process of its group: the
	// agent hears it itself, and the relay waits for it to exit.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
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
