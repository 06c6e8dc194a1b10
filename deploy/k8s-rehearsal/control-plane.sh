# Sourced by rehearse.sh and real-node.sh: the loopback control plane both rehearsals start,
# and their helpers. start_control_plane expects BIN (the built binaries) and work (an empty
# temporary folder). Every process launch starts is in pids (its name in pid_names, its start
# time in pid_starts); stop_pids stops them, the last started first; check_nothing_left then
# says whether any of them, or a port they listened on, or the folder, is left. step records
# each step's seconds in timings.
#   EXTRA_TOKENS   more "WHO USER GROUP" lines: a token and WHO.kubeconfig each
#   APISERVER_EXTRA  more kube-apiserver flags (an array)
#   extra_credentials  a function, when defined: run once the CA exists, before the API server
pids=()
pid_names=()
pid_starts=()
start_all=$SECONDS
timings=()

step() { # NAME CMD...: run it, record its seconds
    local name=$1 start=$SECONDS status=0
    shift
    "$@" || status=$?
    timings+=("$name $((SECONDS - start))")
    return "$status"
}

stop_pids() { # SIGTERM each, up to 5 s, then SIGKILL; the last started first
    local i pid
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        pid=${pids[i]}
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}

launch() { # NAME CMD...: start it in the background, its output in $work/NAME.log
    local name=$1
    shift
    "$@" >"$work/$name.log" 2>&1 &
    pids+=("$!")
    pid_names+=("$name")
    pid_starts+=("$(started "$!")")
}

started() { # PID: its start time (clock ticks after boot) while it runs; nothing once it is
    # gone or a zombie. A PID and its start time name one process: PIDs are reused.
    local stat fields
    [[ $1 =~ ^[0-9]+$ ]] || return 0
    { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
    read -r -a fields <<<"${stat##*) }" # past "PID (command) ": the command may hold spaces
    if [[ ${fields[0]} != Z ]]; then echo "${fields[19]-}"; fi
}

running() { # INDEX: is pids[INDEX] still the process launch started?
    [[ -n ${pid_starts[$1]:-} && $(started "${pids[$1]}") == "${pid_starts[$1]}" ]]
}

listening() { # PORT INODE of each listening TCP socket (/proc/net/tcp and tcp6)
    local port inode
    awk 'FNR > 1 && $4 == "0A" { n = split($2, a, ":"); print a[n], $10 }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null |
        while read -r port inode; do echo "$((16#$port)) $inode"; done
}

before_stop() { # before stop_pids: the ports the recorded processes listen on (bound_ports),
    # and each process launched (a NAME.log in $work) whose PID was not recorded (unrecorded)
    local i log name recorded sockets=" " port inode
    for i in "${!pids[@]}"; do
        running "$i" || continue
        sockets+=$(find "/proc/${pids[i]}/fd" -lname 'socket:*' -printf '%l ' 2>/dev/null |
            tr -dc '0-9 ')
    done
    sockets+=" "
    bound_ports=()
    while read -r port inode; do
        if [[ $sockets == *" $inode "* ]]; then bound_ports+=("$port"); fi
    done < <(listening)
    unrecorded=()
    for log in "$work"/*.log; do
        [[ -f $log ]] || continue
        name=$(basename "$log" .log) recorded=
        for i in "${!pid_names[@]}"; do
            if [[ ${pid_names[i]} == "$name" && ${pids[i]} =~ ^[0-9]+$ ]]; then recorded=1; fi
        done
        [[ -n $recorded ]] || unrecorded+=("$name")
    done
}

check_nothing_left() { # PORT...: after stop_pids and the folder's removal: no process launch
    # started still runs, no PORT (nor one before_stop saw them listen on) is listened on, and
    # $work is gone. Says what is left, or that the record it goes by is not whole; status 1.
    local i port inode name owners left=() ports=" $* ${bound_ports[*]-} "
    for name in ${unrecorded[@]+"${unrecorded[@]}"}; do
        left+=("$name: launched ($name.log) with no PID recorded: cannot tell whether it runs")
    done
    if [[ " ${timings[*]-} " == *" apiserver-ready "* ]]; then # the control plane was launched
        for name in etcd kube-apiserver; do
            [[ " ${pid_names[*]-} " == *" $name "* ]] ||
                left+=("$name: launched (the API server was waited for) with no PID recorded")
        done
    fi
    for i in "${!pids[@]}"; do
        if running "$i"; then
            left+=("${pid_names[i]} (PID ${pids[i]}) still running: $({ tr '\0' ' ' \
                <"/proc/${pids[i]}/cmdline"; } 2>/dev/null | sed 's/ *$//' | cut -c1-100)")
        fi
    done
    while read -r port inode; do
        [[ $ports == *" $port "* ]] || continue
        owners=$(find /proc/[0-9]*/fd -lname "socket:\[$inode\]" -printf '%h\n' 2>/dev/null |
            cut -d/ -f3 | sort -un | paste -sd ' ')
        left+=("port $port still listened on, by PID ${owners:-(none seen)}")
    done < <(listening)
    [[ -r /proc/net/tcp ]] || left+=("no /proc/net/tcp: cannot tell what is listened on")
    [[ ! -e $work ]] || left+=("folder $work still there")
    if ((${#left[@]} == 0)); then
        echo "k8s rehearsal: nothing left: ${#pids[@]} processes ended, ports$ports free," \
            "$work removed"
        return 0
    fi
    echo "k8s rehearsal: left after cleanup:" >&2
    printf '  %s\n' "${left[@]}" >&2
    return 1
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for() { # SECONDS WHAT CMD...: retry CMD every 0.5 s until it passes
    local limit=$1 what=$2 deadline=$((SECONDS + $1))
    shift 2
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || { echo "k8s rehearsal: no $what within $limit s" >&2; return 1; }
        sleep 0.5
    done
}

credentials() { # a CA, the API server's certificate, the service-account key, one token each
    local tls=$work/tls
    mkdir -p "$tls"
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=mesh-rehearsal-ca \
        -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver \
        -keyout "$tls/apiserver.key" -out "$tls/apiserver.csr" 2>/dev/null
    openssl x509 -req -in "$tls/apiserver.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" \
        -CAcreateserial -days 1 -out "$tls/apiserver.crt" \
        -extfile <(echo "subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1") 2>/dev/null
    openssl genrsa -out "$tls/sa.key" 2048 2>/dev/null
    openssl rsa -in "$tls/sa.key" -pubout -out "$tls/sa.pub" 2>/dev/null
    : >"$work/tokens.csv"
    local who user group token
    # WHO USER GROUP: the admin is the one cluster-admin; the controllers are the users RBAC's
    # bootstrap roles name; the caller's EXTRA_TOKENS follow.
    while read -r who user group; do
        [[ -n $who ]] || continue
        token=$(openssl rand -hex 16)
        echo "$token,$user,$user,$group" >>"$work/tokens.csv"
        kubeconfig "$who" "$token"
    done <<TOKENS
admin mesh-rehearsal-admin system:masters
controller-manager system:kube-controller-manager system:authenticated
scheduler system:kube-scheduler system:authenticated
${EXTRA_TOKENS:-}
TOKENS
}

kubeconfig() { # WHO TOKEN: $work/WHO.kubeconfig
    cat >"$work/$1.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: rehearsal
    cluster:
      server: https://127.0.0.1:$apiserver_port
      certificate-authority: $work/tls/ca.crt
users:
  - name: $1
    user:
      token: $2
contexts:
  - name: $1
    context: {cluster: rehearsal, user: $1}
current-context: $1
KUBECONFIG
}

start_control_plane() { # etcd, kube-apiserver (waits until ready), controller manager, scheduler
    etcd_port=$(free_port)
    etcd_peer_port=$(free_port)
    apiserver_port=$(free_port)
    credentials
    if declare -F extra_credentials >/dev/null; then extra_credentials; fi
    export KUBECONFIG=$work/admin.kubeconfig
    kubectl=$BIN/kubectl
    launch etcd "$BIN/etcd" --name rehearsal --data-dir "$work/etcd" --unsafe-no-fsync \
        --listen-client-urls "http://127.0.0.1:$etcd_port" \
        --advertise-client-urls "http://127.0.0.1:$etcd_port" \
        --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
        --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
        --initial-cluster "rehearsal=http://127.0.0.1:$etcd_peer_port"
    # Pods tolerate a NotReady or unreachable node 5 s (the default is 300 s), so a failed
    # node's pods are rescheduled while the test watches.
    launch kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$apiserver_port" \
        --tls-cert-file "$work/tls/apiserver.crt" --tls-private-key-file "$work/tls/apiserver.key" \
        --token-auth-file "$work/tokens.csv" --authorization-mode Node,RBAC \
        --service-account-issuer https://kubernetes.default.svc.cluster.local \
        --service-account-key-file "$work/tls/sa.pub" \
        --service-account-signing-key-file "$work/tls/sa.key" \
        --service-cluster-ip-range 10.96.0.0/16 \
        --default-not-ready-toleration-seconds 5 --default-unreachable-toleration-seconds 5 \
        ${APISERVER_EXTRA[@]+"${APISERVER_EXTRA[@]}"}
    step apiserver-ready wait_for 120 "ready API server" "$kubectl" get --raw /readyz
    launch kube-controller-manager "$BIN/kube-controller-manager" \
        --kubeconfig "$work/controller-manager.kubeconfig" --secure-port 0 --leader-elect=false \
        --use-service-account-credentials --service-account-private-key-file "$work/tls/sa.key" \
        --root-ca-file "$work/tls/ca.crt" --node-monitor-period 2s
    launch kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$work/scheduler.kubeconfig" \
        --secure-port 0 --leader-elect=false
}
