#!/usr/bin/env bash
# make k8s-real-node: deploy/k8s's `chaos` overlay on one real node built from parts, where
# containers run. Builds (once, cached in K8S_BIN) what rehearse.sh builds plus the kubelet,
# kube-proxy (the same wrapper module) and CoreDNS (a subset of its plugins); builds the
# project's images as the compose rehearsal does (deploy/rehearsal/images.sh, podman) and a
# pause image of our own (pause/: registry.k8s.io cannot be reached); then, in network, mount
# and PID namespaces of its own (unshare: nothing but that namespace's loopback and the pods'
# veths is touched), starts the loopback control plane, Debian's containerd with runc and the
# CNI plugins (ptp), the kubelet, kube-proxy and CoreDNS, imports the images into containerd,
# and runs tests/k8s_node/ (the overlay rolls out, names resolve, Services route, and `mesh chaos
# run provider-outage` through port-forwards counts the calls the embedded mesh counts).
# Everything it started is stopped by PID, the kubelet's mounts are unmounted deepest first,
# and its folder removed. Needs root, go, podman (apt), containerd, runc,
# containernetworking-plugins, iptables, conntrack (apt-get install containerd conntrack).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
BIN=${K8S_BIN:-$root/.peers/bin}
NODE=real-node-1
NODE_IP=10.97.0.10 # on the namespace's loopback: the node's address and the cluster's DNS
POD_CIDR=10.244.0.0/24
PAUSE_IMAGE=localhost/mesh-rehearsal/pause:3.10
OVERLAY=$root/deploy/k8s/overlays/chaos
source "$here/control-plane.sh" # step, launch, start_control_plane, stop_pids
log() { echo "k8s real node: $*" >&2; }

if [[ ${1:-} == --inside ]]; then
    work=$2
    BIN=$(cd "$BIN" && pwd)
    source "$here/node.sh"
    exit
fi

[[ $(id -u) == 0 ]] || { log "needs root (namespaces, mounts, containerd)"; exit 1; }
for tool in go openssl python3 podman containerd ctr runc unshare nsenter iptables conntrack; do
    command -v "$tool" >/dev/null || { log "needs $tool (apt-get install containerd conntrack podman)"; exit 1; }
done
for plugin in ptp host-local loopback; do
    [[ -x /usr/lib/cni/$plugin ]] || { log "needs /usr/lib/cni/$plugin (containernetworking-plugins)"; exit 1; }
done
step build nice -n "${K8S_BUILD_NICE:-15}" "$here/build.sh" node
work=$(mktemp -d "${TMPDIR:-/tmp}/mesh-k8s-real-node.XXXXXX")
cleanup() {
    local status=$?
    rm -rf "$work"
    timings+=("total $((SECONDS - start_all))")
    echo "k8s real node timings (s):"
    printf '  %s\n' "${timings[@]}"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

images() { # the compose rehearsal's images, a pause image; each saved to $work/images
    "$root/deploy/rehearsal/setup.sh" >/dev/null
    local status=0
    "$root/deploy/rehearsal/images.sh" || status=$?
    "$root/deploy/rehearsal/stop.sh"
    ((status == 0)) || return "$status"
    source "$root/deploy/rehearsal/env.sh" # podman's storage; qualify
    local ctx=$work/pause-image
    mkdir -p "$ctx" "$work/images"
    (cd "$here/pause" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ctx/pause" .)
    printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' \
        >"$ctx/Containerfile"
    podman build --quiet --format docker -t "$PAUSE_IMAGE" "$ctx" >/dev/null
    podman save --quiet --format docker-archive -o "$work/images/pause.tar" "$PAUSE_IMAGE"
    # Every image the overlay names, by the name containerd's CRI will look it up by.
    local image n=0
    for image in $("$BIN/kubectl" kustomize "$OVERLAY" | sed -n 's/^[ -]*image: *//p' | sort -u); do
        image=$(qualify "$image")
        podman save --quiet --format docker-archive -o "$work/images/$((n += 1)).tar" "$image"
        echo "$image" >>"$work/images/names"
    done
}
step images images
# A network, mount and PID namespace of its own: the node's bridge-less pod network, its
# iptables rules and every mount the kubelet makes live and die with it.
step node unshare --net --mount --pid --fork --mount-proc "$here/real-node.sh" --inside "$work"
