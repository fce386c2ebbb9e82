package deploy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/deploy/internal/image"
)

// dockerfile is deploy/Dockerfile's instructions, continuation lines
// joined, by stage: the build stage first.
func dockerfile(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages [][]string
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		cur += line
		if strings.HasPrefix(cur, "FROM ") {
			stages = append(stages, nil)
		}
		if len(stages) > 0 {
			stages[len(stages)-1] = append(stages[len(stages)-1], cur)
		}
		cur = ""
	}
	if len(stages) != 2 {
		t.Fatalf("Dockerfile: %d stages, want a build stage and the image", len(stages))
	}
	return stages
}

// TestDockerfileAgreesWithBuilder: deploy/Dockerfile, for people with
// Docker, and the image make image builds without it (deploy/internal/image)
// have the same user, packages, binary, configuration, directories, port,
// entrypoint and volumes.
func TestDockerfileAgreesWithBuilder(t *testing.T) {
	final := dockerfile(t)[1]
	instr := map[string][]string{}
	for _, in := range final {
		op, rest, _ := strings.Cut(in, " ")
		instr[op] = append(instr[op], rest)
	}
	one := func(op string) string {
		if len(instr[op]) != 1 {
			t.Errorf("Dockerfile: %d %s instructions, want one", len(instr[op]), op)
			return ""
		}
		return instr[op][0]
	}
	cfg := image.Config("v", "r", time.Now())
	if got := one("USER"); got != cfg.User {
		t.Errorf("Dockerfile USER %q, builder %q", got, cfg.User)
	}
	var entry []string
	if err := json.Unmarshal([]byte(one("ENTRYPOINT")), &entry); err != nil || !slices.Equal(entry, cfg.Entrypoint) {
		t.Errorf("Dockerfile ENTRYPOINT %v (%v), builder %v", entry, err, cfg.Entrypoint)
	}
	if got := one("EXPOSE"); got+"/tcp" != fmt.Sprint(image.Port)+"/tcp" {
		t.Errorf("Dockerfile EXPOSE %q, builder %d", got, image.Port)
	} else if _, ok := cfg.ExposedPorts[got+"/tcp"]; !ok {
		t.Errorf("builder exposes %v, not the Dockerfile's %s", cfg.ExposedPorts, got)
	}
	if got := one("WORKDIR"); got != cfg.WorkingDir {
		t.Errorf("Dockerfile WORKDIR %q, builder %q", got, cfg.WorkingDir)
	}
	if got := one("STOPSIGNAL"); got != cfg.StopSignal {
		t.Errorf("Dockerfile STOPSIGNAL %q, builder %q", got, cfg.StopSignal)
	}
	var volumes []string
	if err := json.Unmarshal([]byte(one("VOLUME")), &volumes); err != nil {
		t.Errorf("Dockerfile VOLUME: %v", err)
	}
	for _, v := range volumes {
		if _, ok := cfg.Volumes[v]; !ok || len(volumes) != len(cfg.Volumes) {
			t.Errorf("Dockerfile volumes %v, builder %v", volumes, cfg.Volumes)
		}
	}
	if got := one("ENV"); !slices.Contains(cfg.Env, got) {
		t.Errorf("Dockerfile ENV %q, builder %v", got, cfg.Env)
	}
	copies := strings.Join(instr["COPY"], "\n")
	for _, want := range []string{" " + image.Binary + "\n", "deploy/forge.yml " + image.ConfigPath} {
		if !strings.Contains(copies+"\n", want) {
			t.Errorf("Dockerfile COPY %q does not put %q", copies, want)
		}
	}
	run := strings.Join(instr["RUN"], "\n")
	for _, want := range []string{
		fmt.Sprintf("groupadd --system --gid %d %s", image.GID, image.User),
		fmt.Sprintf("useradd --system --uid %d --gid %s", image.UID, image.User),
		fmt.Sprintf("install -d -o %s -g %s -m 0700 %s %s", image.User, image.User, image.DataDir, image.WorkDir),
	} {
		if !strings.Contains(run, want) {
			t.Errorf("Dockerfile RUN does not %q:\n%s", want, run)
		}
	}
	installs := regexp.MustCompile(`apt-get install -y --no-install-recommends ([a-z0-9 .+-]+?) &&`).FindStringSubmatch(run)
	if installs == nil {
		t.Fatalf("Dockerfile installs no packages:\n%s", run)
	}
	got := strings.Fields(installs[1])
	slices.Sort(got)
	want := slices.Sorted(slices.Values(image.Packages))
	if !slices.Equal(got, want) {
		t.Errorf("Dockerfile installs %v, builder %v", got, want)
	}
	if from := instr["FROM"]; len(from) != 1 || from[0] != "debian:"+image.Suite+"-slim" {
		t.Errorf("Dockerfile FROM %v, builder debootstraps %s", from, image.Suite)
	}
}
