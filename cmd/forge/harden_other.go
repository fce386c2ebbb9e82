//go:build !linux

package main

// hideFromAgents does nothing outside Linux: PR_SET_DUMPABLE is Linux's.
func hideFromAgents() error { return nil }
