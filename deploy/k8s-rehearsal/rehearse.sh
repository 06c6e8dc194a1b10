#!/usr/bin/env bash
# make k8s-rehearsal: deploy/k8s against a real control plane on loopback. Builds (once, cached
# in K8S_BIN) etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok;
# starts them in a temporary folder with a CA and serving certificate of its own, token
# authentication and RBAC; registers two kwok nodes (fake kubelets: pods are scheduled, bound
# and marked Running/Ready, no container runs); runs tests/k8s/; then stops every process it
# started, by PID, and removes the folder, and fails if any of those processes still runs, a port
# they listened on is still listened on, or the folder is there. Needs go, openssl and python3.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
BIN=${K8S_BIN:-$root/.peers/bin}
source "$here/control-plane.sh" # step, launch, start_control_plane, stop_pids, check_nothing_left

for tool in openssl python3; do
    command -v "$tool" >/dev/null || { echo "k8s rehearsal: needs $tool" >&2; exit 1; }
done
if ! command -v go >/dev/null && ! [[ -x $BIN/kube-apiserver && -x $BIN/kwok ]]; then
    echo "k8s rehearsal skipped: no Go toolchain to build the control plane and kwok with"
    exit 0
fi
step build nice -n "${K8S_BUILD_NICE:-15}" "$here/build.sh"
BIN=$(cd "$BIN" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mesh-k8s-rehearsal.XXXXXX")
# kwok (standing in for kubelets) gets a binding of its own below.
EXTRA_TOKENS="kwok mesh-rehearsal-kwok system:authenticated"
cleanup() {
    local status=$?
    before_stop # the ports they listen on, and that every process launched has its PID
    stop_pids   # kwok ... etcd
    if ((status != 0)); then
        for log in "$work"/*.log; do
            [[ -f $log ]] && { echo "--- last lines of $(basename "$log")"; tail -n 15 "$log"; }
        done
    fi
    rm -rf "$work"
    check_nothing_left ${etcd_port:-} ${etcd_peer_port:-} ${apiserver_port:-} ||
        ((status)) || status=1
    timings+=("total $((SECONDS - start_all))")
    echo "k8s rehearsal timings (s):"
    printf '  %s\n' "${timings[@]}"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_control_plane
"$kubectl" create clusterrolebinding mesh-rehearsal-kwok --clusterrole cluster-admin \
    --user mesh-rehearsal-kwok >/dev/null
stages=()
for stage in "$BIN"/kwok-stages/*.yaml; do stages+=(--config "$stage"); done
launch kwok "$BIN/kwok" --kubeconfig "$work/kwok.kubeconfig" "${stages[@]}" \
    --manage-nodes-with-label-selector type=kwok \
    --node-lease-duration-seconds 40
"$kubectl" apply -f "$here/nodes.yaml" >/dev/null
step nodes-ready wait_for 60 "two Ready kwok nodes" "$kubectl" wait node -l type=kwok \
    --for condition=Ready --timeout 1s
# The namespace's ServiceAccount comes from the controller manager: pods need it.
step controllers-ready wait_for 60 "default ServiceAccount" "$kubectl" get serviceaccount default

export MESH_K8S_REHEARSAL=1 REHEARSAL_KUBECTL=$kubectl
step tests "$root/.venv/bin/python" -m pytest tests/k8s -p no:cacheprovider --durations=0 \
    ${PYTEST_ARGS:-}
