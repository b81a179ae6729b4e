// lab-image writes the real-kubelet lab's container images, built from local files (nothing can be
// pulled here), as one image archive that `ctr images import` reads and tags:
//
//	lab-image OUT.tar REF LAYER.tar ENTRYPOINT [REF LAYER.tar ENTRYPOINT ...]
//
// REF is the name a manifest uses (registry.k8s.io/pause:3.10.1), LAYER.tar the image's one layer
// (an uncompressed tar of its root file system), ENTRYPOINT its entrypoint ("-" for none: the
// Pod's command gives it). go-containerregistry writes the format: manifests, config, digests.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func image(layerPath, entrypoint string) (v1.Image, error) {
	layer, err := tarball.LayerFromFile(layerPath)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", layerPath, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	// The runtime imports and runs only images of its own platform.
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()} // the same files give the same digest
	cfg.Config.Env = []string{"PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"}
	if entrypoint != "-" {
		cfg.Config.Entrypoint = []string{entrypoint}
	}
	return mutate.ConfigFile(img, cfg)
}

func run(args []string) error {
	if len(args) < 4 || (len(args)-1)%3 != 0 {
		return fmt.Errorf("usage: lab-image OUT.tar REF LAYER.tar ENTRYPOINT [REF LAYER.tar ENTRYPOINT ...]")
	}
	out := args[0]
	refs := map[name.Reference]v1.Image{}
	for i := 1; i < len(args); i += 3 {
		tag, err := name.NewTag(args[i], name.StrictValidation)
		if err != nil {
			return fmt.Errorf("image name %q: %w", args[i], err)
		}
		img, err := image(args[i+1], args[i+2])
		if err != nil {
			return fmt.Errorf("image %s: %w", args[i], err)
		}
		refs[tag] = img
	}
	tmp := out + ".part"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	return os.Rename(tmp, out)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "lab-image:", err)
		os.Exit(1)
	}
}
