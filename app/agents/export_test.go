package agents

// CLIReport is what Forge reads of an agent CLI's output, for the tests
// that run the CLIs as released (package agents_test).
type CLIReport struct {
	Answer, Session, Failure string
	Final                    bool
	Input, Output            int64
	Cost                     float64
	HasCost                  bool
	Skipped                  int
}

// ReadCLIOutput reads out, a CLI's whole stdout, as an exec runtime with
// output format does.
func ReadCLIOutput(format string, out []byte) CLIReport {
	var r cliReport
	w := &lineReader{max: 1 << 24, read: func(line []byte) { r.readLine(format, line) }}
	w.Write(out)
	w.Close()
	return CLIReport{Answer: r.answer, Session: r.session, Failure: r.failure, Final: r.final,
		Input: r.input, Output: r.output, Cost: r.cost, HasCost: r.hasCost, Skipped: r.skipped + w.skipped}
}
