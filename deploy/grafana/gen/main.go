// Command gen writes the Grafana dashboard to the file its argument names.
package main

import (
	"fmt"
	"os"

	"github.com/forge-dev/forge/deploy/grafana"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen FILE")
		os.Exit(2)
	}
	b, err := grafana.Dashboard()
	if err == nil {
		err = os.WriteFile(os.Args[1], b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
