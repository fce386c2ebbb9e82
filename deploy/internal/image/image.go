// Package image is Forge's container image, built without a Docker engine:
// a Debian root filesystem made by debootstrap from Debian's packages (git,
// bubblewrap, ca-certificates: what deploy/Dockerfile installs on
// debian:bookworm-slim), a static forge binary and its configuration, put
// together as an OCI image with go-containerregistry. The Dockerfile stays
// for people with Docker; deploy's tests hold both to the same user, port,
// paths and entrypoint.
package image

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is; deploy/Dockerfile says the same.
const (
	// UID and GID are the forge user's: not root, since as root the
	// sandbox's uid 65534 would map back to root. Numeric in the image's
	// config so Kubernetes' runAsNonRoot can check it.
	UID, GID   = 10001, 10001
	User       = "forge"
	Port       = 8080
	Binary     = "/usr/local/bin/forge"
	ConfigPath = "/etc/forge/forge.yml"
	// DataDir holds the database, the App's credentials and cached clones;
	// WorkDir the agents' working copies, which must not be inside it.
	DataDir = "/var/lib/forge"
	WorkDir = "/var/cache/forge"
	Suite   = "bookworm"
	Source  = "https://github.com/forge-dev/forge"
)

// Packages are the Debian packages the image adds to a minimal base: git
// for clones, bubblewrap for the agents' sandbox, the CA certificates for
// GitHub's and the models' APIs.
var Packages = []string{"git", "bubblewrap", "ca-certificates"}

// Config is the image's run configuration.
func Config(version, revision string, created time.Time) v1.Config {
	return v1.Config{
		User:         fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint:   []string{Binary, "serve"},
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "FORGE_CONFIG=" + ConfigPath},
		WorkingDir:   DataDir,
		ExposedPorts: map[string]struct{}{strconv.Itoa(Port) + "/tcp": {}},
		Volumes:      map[string]struct{}{DataDir: {}, WorkDir: {}},
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":     "forge",
			"org.opencontainers.image.version":   version,
			"org.opencontainers.image.revision":  revision,
			"org.opencontainers.image.created":   created.UTC().Format(time.RFC3339),
			"org.opencontainers.image.source":    Source,
			"org.opencontainers.image.licenses":  "Apache-2.0",
			"org.opencontainers.image.base.name": "debian:" + Suite + " (debootstrap --variant=minbase)",
		},
	}
}

// Debootstrap makes a minimal Debian root filesystem with Packages in dir
// (as root; a few minutes).
func Debootstrap(ctx context.Context, dir, mirror string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(Packages, ","), Suite, dir, mirror)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debootstrap %s into %s: %w", Suite, dir, err)
	}
	return nil
}

// Build is the image: the root filesystem in rootfs as its first layer
// (less what a slim image leaves out), the forge user, binary and
// configuration as its second.
func Build(rootfs, binary, forgeYML, version, revision string, created time.Time, tmp string) (v1.Image, error) {
	base := filepath.Join(tmp, "base.tar")
	if err := writeTar(base, func(tw *tar.Writer) error { return addTree(tw, rootfs) }); err != nil {
		return nil, fmt.Errorf("base layer from %s: %w", rootfs, err)
	}
	app := filepath.Join(tmp, "forge.tar")
	if err := writeTar(app, func(tw *tar.Writer) error { return addForge(tw, rootfs, binary, forgeYML, created) }); err != nil {
		return nil, fmt.Errorf("forge layer: %w", err)
	}
	var layers []v1.Layer
	for _, p := range []string{base, app} {
		l, err := tarball.LayerFromFile(p, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(img, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = hostArch(), "linux"
	cf.Created = v1.Time{Time: created.UTC()}
	cf.Config = Config(version, revision, created)
	cf.History = []v1.History{
		{Created: cf.Created, CreatedBy: "debootstrap --variant=minbase --include=" + strings.Join(Packages, ",") + " " + Suite},
		{Created: cf.Created, CreatedBy: "forge " + version + ": " + Binary + ", " + ConfigPath + ", user " + User},
	}
	return mutate.ConfigFile(img, cf)
}

// Write puts img into out as an OCI layout (out/oci) and as a tarball that
// docker load and podman load take (out/forge.tar), tagged ref.
func Write(img v1.Image, out, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(out, "oci")); err != nil {
		return err
	}
	p, err := layout.Write(filepath.Join(out, "oci"), empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.TagStr()})); err != nil {
		return err
	}
	return tarball.WriteToFile(filepath.Join(out, "forge.tar"), tag, img)
}

// Load is the one image of the OCI layout Write made in out.
func Load(out string) (v1.Image, error) {
	p, err := layout.FromPath(filepath.Join(out, "oci"))
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s: %d images, want one", out, len(m.Manifests))
	}
	return idx.Image(m.Manifests[0].Digest)
}

func hostArch() string {
	out, err := exec.Command("dpkg", "--print-architecture").Output()
	if err != nil {
		return "amd64"
	}
	return strings.TrimSpace(string(out))
}

func writeTar(path string, add func(*tar.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	if err := add(tw); err != nil {
		f.Close()
		return err
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// slimmed says whether a path of the root filesystem stays out of the
// image, as in Debian's slim images: documentation (its copyright files
// kept), manual pages, apt's package lists and caches, logs, and what the
// container runtime provides (/dev, /proc, /sys, resolv.conf, hostname).
func slimmed(rel string, d fs.DirEntry) bool {
	dir, base := filepath.Dir(rel), filepath.Base(rel)
	switch {
	case dir == "dev" || dir == "proc" || dir == "sys" || dir == "run" || dir == "tmp":
		return true
	case rel == "etc/resolv.conf" || rel == "etc/hostname":
		return true
	case strings.HasPrefix(rel, "usr/share/man/") || strings.HasPrefix(rel, "usr/share/info/") || strings.HasPrefix(rel, "usr/share/locale/"):
		return true
	case strings.HasPrefix(rel, "usr/share/doc/") && !d.IsDir() && base != "copyright":
		return true
	case strings.HasPrefix(rel, "var/lib/apt/lists/") && base != "partial" && base != "lock":
		return true
	case strings.HasPrefix(rel, "var/cache/apt/") && strings.HasSuffix(base, ".bin"):
		return true
	case strings.HasPrefix(rel, "var/cache/apt/archives/") && strings.HasSuffix(base, ".deb"):
		return true
	case strings.HasPrefix(rel, "var/log/") && !d.IsDir():
		return true
	case rel == "debootstrap" || strings.HasPrefix(rel, "debootstrap/"):
		return true
	}
	return false
}

// addTree writes the root filesystem, owners and modes as they are on
// disk, hard links as links, in lexical order.
func addTree(tw *tar.Writer, root string) error {
	links := map[[2]uint64]string{}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		if slimmed(rel, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		target := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, target)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		hdr.Name, hdr.Uname, hdr.Gname = rel, "", ""
		if d.IsDir() {
			hdr.Name += "/"
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().IsRegular() && st.Nlink > 1 {
			key := [2]uint64{uint64(st.Dev), st.Ino}
			if first, ok := links[key]; ok {
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
				return tw.WriteHeader(hdr)
			}
			links[key] = rel
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
}

// addForge writes the second layer: the forge user and group (the root
// filesystem's passwd and group with them added), the binary, the
// configuration and the two directories only forge may enter.
func addForge(tw *tar.Writer, rootfs, binary, forgeYML string, mtime time.Time) error {
	dir := func(name string, mode int64, uid, gid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: gid, ModTime: mtime})
	}
	file := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: mtime}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc/passwd"))
	if err != nil {
		return err
	}
	group, err := os.ReadFile(filepath.Join(rootfs, "etc/group"))
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	conf, err := os.ReadFile(forgeYML)
	if err != nil {
		return err
	}
	passwd = fmt.Appendf(passwd, "%s:x:%d:%d:Forge:/nonexistent:/usr/sbin/nologin\n", User, UID, GID)
	group = fmt.Appendf(group, "%s:x:%d:\n", User, GID)
	for _, step := range []error{
		file("etc/passwd", 0o644, passwd),
		file("etc/group", 0o644, group),
		dir("etc/forge", 0o755, 0, 0),
		file(strings.TrimPrefix(ConfigPath, "/"), 0o644, conf),
		dir("usr/local/bin", 0o755, 0, 0),
		file(strings.TrimPrefix(Binary, "/"), 0o755, bin),
		dir(strings.TrimPrefix(DataDir, "/"), 0o700, UID, GID),
		dir(strings.TrimPrefix(WorkDir, "/"), 0o700, UID, GID),
	} {
		if step != nil {
			return step
		}
	}
	return nil
}
