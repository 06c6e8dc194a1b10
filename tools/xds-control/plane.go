package main

// The plane's state: the last good config, one snapshot per node in go-control-plane's
// cache, a version that rises with every change applied, and the file it came from.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

type plane struct {
	// file orders the file's readers and writers: a PUT applies its config and then writes it
	// to the file, and a poll between the two would read the file's older bytes and push them
	// over the PUT's (GET /config served the old config until the next poll, and clients were
	// sent old, new, old). Taken before mu, never under it.
	file    sync.Mutex
	mu      sync.Mutex
	cache   cachev3.SnapshotCache
	path    string
	raw     []byte
	cfg     *Config
	version int
}

// newPlane: the cache is not in ADS mode although it serves over ADS. In ADS mode it answers a
// listener request only when the names requested cover every listener of the snapshot, and a
// gRPC client asks for one listener per channel: its gateway, asking for "payment" while the
// snapshot held three, got no answer at all, and its channels failed 15 s later.
func newPlane(path string, logger log.Logger) *plane {
	return &plane{cache: cachev3.NewSnapshotCache(false, cachev3.IDHash{}, logger), path: path}
}

// apply pushes raw to every node unless it is what was applied last; an error leaves the
// previous config serving.
func (p *plane) apply(raw []byte) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg != nil && bytes.Equal(raw, p.raw) {
		return false, nil
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		return false, err
	}
	snaps := map[string]*cachev3.Snapshot{}
	version := strconv.Itoa(p.version + 1)
	for _, node := range sortedKeys(cfg.Nodes) {
		res, err := NodeResources(cfg.Nodes[node])
		if err != nil {
			return false, fmt.Errorf("nodes.%s.%w", node, err)
		}
		snap, err := cachev3.NewSnapshot(version, res)
		if err != nil {
			return false, fmt.Errorf("nodes.%s: %w", node, err)
		}
		snaps[node] = snap
	}
	for node, snap := range snaps {
		if err := p.cache.SetSnapshot(context.Background(), node, snap); err != nil {
			return false, fmt.Errorf("nodes.%s: %w", node, err)
		}
	}
	if p.cfg != nil {
		for node := range p.cfg.Nodes {
			if _, kept := snaps[node]; !kept {
				p.cache.ClearSnapshot(node)
			}
		}
	}
	p.raw, p.cfg, p.version = raw, cfg, p.version+1
	return true, nil
}

// reload applies the file when its bytes changed.
func (p *plane) reload() (bool, error) {
	p.file.Lock()
	defer p.file.Unlock()
	raw, err := os.ReadFile(p.path)
	if err != nil {
		return false, err
	}
	return p.apply(raw)
}

// replace applies raw, then writes it to the file (atomically), so the file stays the truth.
func (p *plane) replace(raw []byte) error {
	p.file.Lock()
	defer p.file.Unlock()
	if _, err := p.apply(raw); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.path), ".xds-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p.path)
}

func (p *plane) current() ([]byte, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raw, p.version
}

// dump is what the plane sends `node`, as JSON (the differential's side of the CSDS check).
func (p *plane) dump(node string) ([]byte, error) {
	got, err := p.cache.GetSnapshot(node)
	if err != nil {
		return nil, err
	}
	snap, ok := got.(*cachev3.Snapshot)
	if !ok {
		return nil, fmt.Errorf("node %s: not a snapshot of this plane", node)
	}
	out := map[string]any{}
	names := map[resource.Type]string{
		resource.ListenerType: "listeners", resource.ClusterType: "clusters",
		resource.EndpointType: "endpoints",
	}
	for typ, key := range names {
		var items []json.RawMessage
		byName := snap.GetResources(typ)
		for _, name := range sortedKeys(byName) {
			raw, err := protojson.Marshal(byName[name])
			if err != nil {
				return nil, err
			}
			items = append(items, raw)
		}
		out[key] = items
	}
	out["version"] = snap.GetVersion(resource.ListenerType)
	return json.Marshal(out)
}
