// Command buildimage builds Forge's container image without a Docker
// engine (`make image`): a Debian root filesystem from debootstrap, the
// static forge binary `make build` made, deploy/forge.yml. It writes an OCI
// layout (OUT/oci) and a tarball for docker load and podman load
// (OUT/forge.tar). Run it as root from the repository's root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/forge-dev/forge/deploy/internal/image"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "buildimage:", err)
		os.Exit(1)
	}
}

func run() error {
	out := flag.String("out", "dist/image", "directory for the OCI layout and the tarball")
	binary := flag.String("binary", "bin/forge", "the static forge binary (make build)")
	config := flag.String("config", "deploy/forge.yml", "the image's "+image.ConfigPath)
	rootfs := flag.String("rootfs", "", "a root filesystem debootstrap already made (default: make one in a temporary directory)")
	mirror := flag.String("mirror", "http://deb.debian.org/debian", "the Debian mirror debootstrap fetches from")
	version := flag.String("version", "dev", "the image's version label and tag")
	revision := flag.String("revision", "", "the commit built, for the revision label")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	tmp, err := os.MkdirTemp("", "forge-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if *rootfs == "" {
		*rootfs = filepath.Join(tmp, "rootfs")
		fmt.Fprintf(os.Stderr, "debootstrap %s into %s (a few minutes)\n", image.Suite, *rootfs)
		if err := image.Debootstrap(ctx, *rootfs, *mirror, os.Stderr); err != nil {
			return err
		}
	}
	img, err := image.Build(*rootfs, *binary, *config, *version, *revision, time.Now(), tmp)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := image.Write(img, *out, "forge:"+*version); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("forge:%s %s in %s (oci/, forge.tar)\n", *version, digest, *out)
	return nil
}
