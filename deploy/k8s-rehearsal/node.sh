# Sourced by real-node.sh (after control-plane.sh) inside `unshare --net --mount --pid --fork --mount-proc`, where this
# shell is PID 1: the control plane (control-plane.sh), containerd, the kubelet, kube-proxy and
# CoreDNS on one node, the images in $work/images imported, then tests/k8s_node/. Every process
# is stopped by its PID (containerd's shims and the containers too: every PID of this namespace
# but ours), the mounts under $work are unmounted deepest first, the kubelet's pod cgroups
# removed. The namespaces go with the last of their processes.
ctr_sock=$work/containerd/containerd.sock
ctr=(ctr --address "$ctr_sock" --namespace k8s.io)
EXTRA_TOKENS="kubelet system:node:$NODE system:nodes
kube-proxy system:kube-proxy system:authenticated
coredns mesh-rehearsal-coredns system:authenticated"
# The API server reaches the kubelet (logs, port-forward) at the node's InternalIP with a client
# certificate the kubelet's webhook authorization accepts (system:masters).
APISERVER_EXTRA=(--kubelet-client-certificate "$work/tls/kubelet-client.crt"
    --kubelet-client-key "$work/tls/kubelet-client.key" --kubelet-preferred-address-types InternalIP)
extra_credentials() {
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
        -keyout "$work/tls/kubelet-client.key" -out "$work/tls/kubelet-client.csr" 2>/dev/null
    openssl x509 -req -in "$work/tls/kubelet-client.csr" -CA "$work/tls/ca.crt" \
        -CAkey "$work/tls/ca.key" -CAcreateserial -days 1 -out "$work/tls/kubelet-client.crt" 2>/dev/null
}
had_kubepods=$(ls -d /sys/fs/cgroup/*/kubepods 2>/dev/null || true)

node_cleanup() {
    local status=$? pid
    trap - EXIT
    set +e
    if ((status != 0)); then
        for log in "$work"/*.log; do
            [[ -f $log ]] && { echo "--- last lines of $(basename "$log")"; tail -n 20 "$log"; }
        done
    fi
    if ((status != 0)) && [[ -n ${kubectl:-} ]]; then
        "$kubectl" get pods --all-namespaces --output wide
        "$kubectl" get events --namespace mesh --sort-by .lastTimestamp | tail -n 30
    fi
    # The pods first, while the kubelet runs: their preStop hooks and grace periods (bounded).
    [[ -n ${kubectl:-} ]] && timeout 90 "$kubectl" delete namespace mesh --ignore-not-found \
        --timeout 80s >/dev/null 2>&1
    stop_pids # CoreDNS ... etcd
    # What containerd left running (shims, containers): every other PID of this namespace.
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
        ((pid != 1 && pid != BASHPID)) && kill -9 "$pid" 2>/dev/null
    done
    wait 2>/dev/null || true
    local mount
    while read -r mount; do
        umount "$mount" 2>/dev/null || umount --lazy "$mount" || true
    done < <(awk -v w="$work/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r)
    if [[ -z $had_kubepods ]]; then # the pod cgroups the kubelet made, deepest first
        find /sys/fs/cgroup/*/kubepods -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
    timings+=("total $((SECONDS - start_all))")
    echo "k8s real node timings (s):"
    printf '  %s\n' "${timings[@]}"
    exit "$status"
}
trap node_cleanup EXIT
trap 'exit 130' INT TERM

namespace_setup() { # this mount namespace private; /run and /var/log its own; the node's address
    mount --make-rprivate /
    mount -t tmpfs -o mode=0755 mesh-real-node /run     # containerd's shims, the pods' netns
    mount -t tmpfs -o mode=0755 mesh-real-node /var/log # the kubelet's /var/log/pods
    ip link set lo up
    ip addr add "$NODE_IP/32" dev lo
    echo 1 >/proc/sys/net/ipv4/ip_forward # this namespace's: pod to Service to pod
}

start_containerd() {
    mkdir -p "$work/containerd" "$work/cni/conf" "$work/cni/ipam"
    cat >"$work/containerd/config.toml" <<TOML
version = 2
root = "$work/containerd/root"
state = "$work/containerd/state"
[grpc]
  address = "$ctr_sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # No CAP_SYS_RESOURCE here: a negative oom_score_adj (the sandbox's -998) is refused, and runc
  # fails "can't get final child's PID from pipe: EOF". Never below containerd's own (0).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$work/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
TOML
    # ptp: a veth per pod to this namespace, routed (no bridge, so kube-proxy's iptables rules
    # see every pod-to-Service packet without br_netfilter).
    cat >"$work/cni/conf/10-mesh.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "mesh-real-node", "plugins": [
  {"type": "ptp", "ipMasq": false, "mtu": 1500,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]],
            "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$work/cni/ipam"}}]}
JSON
    launch containerd containerd --config "$work/containerd/config.toml"
    step containerd-ready wait_for 60 "containerd" "${ctr[@]}" version
    local tar
    for tar in "$work"/images/*.tar; do "${ctr[@]}" images import "$tar" >/dev/null; done
}

start_kubelet() {
    echo "nameserver $NODE_IP" >"$work/resolv.conf"
    cat >"$work/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$ctr_sock
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $work/tls/ca.crt}
authorization: {mode: Webhook}
clusterDNS: [$NODE_IP]
clusterDomain: cluster.local
resolvConf: $work/resolv.conf
# The images cannot be pulled again: nothing is collected, and no eviction on a full disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
serializeImagePulls: false
YAML
    launch kubelet "$BIN/kubelet" --config "$work/kubelet.yaml" \
        --kubeconfig "$work/kubelet.kubeconfig" --root-dir "$work/kubelet" \
        --cert-dir "$work/kubelet/pki" --hostname-override "$NODE" --node-ip "$NODE_IP"
    step node-ready wait_for 120 "Ready node $NODE" "$kubectl" wait "node/$NODE" \
        --for condition=Ready --timeout 1s
}

start_kube_proxy() {
    cat >"$work/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $work/kube-proxy.kubeconfig}
hostnameOverride: $NODE
mode: iptables
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# conntrack's table size is the host's (not per namespace): leave it alone.
conntrack: {maxPerCore: 0, min: 0}
YAML
    launch kube-proxy "$BIN/kube-proxy" --config "$work/kube-proxy.yaml"
    step kube-proxy-ready wait_for 60 "kube-proxy healthz" curl -sf http://127.0.0.1:10256/healthz
}

start_coredns() { # the cluster's names, from the API server; nothing forwarded anywhere
    "$kubectl" create clusterrole mesh-rehearsal-coredns --verb list,watch \
        --resource endpointslices.discovery.k8s.io,services,pods,namespaces >/dev/null
    "$kubectl" create clusterrolebinding mesh-rehearsal-coredns \
        --clusterrole mesh-rehearsal-coredns --user mesh-rehearsal-coredns >/dev/null
    cat >"$work/Corefile" <<COREFILE
.:53 {
    bind $NODE_IP
    ready 127.0.0.1:8181
    health 127.0.0.1:8180
    errors
    cache 5
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $work/coredns.kubeconfig coredns
        pods insecure
    }
}
COREFILE
    launch coredns "$BIN/coredns" -conf "$work/Corefile"
    step coredns-ready wait_for 60 "CoreDNS ready" curl -sf http://127.0.0.1:8181/ready
}

namespace_setup
start_control_plane
start_containerd
start_kubelet
start_kube_proxy
start_coredns
step controllers-ready wait_for 60 "default ServiceAccount" "$kubectl" get serviceaccount default

export MESH_K8S_REAL_NODE=1 REHEARSAL_KUBECTL=$kubectl REHEARSAL_WORK=$work
export REHEARSAL_CTR="${ctr[*]}" REHEARSAL_OVERLAY=$OVERLAY
cd "$root"
# The session's first test waits for the overlay's rollout (containers start for real).
step tests "$root/.venv/bin/python" -m pytest tests/k8s_node -p no:cacheprovider --durations=0 \
    --timeout 900 \
    ${PYTEST_ARGS:-}
