#!/usr/bin/env bash
# make compose-rehearsal: docker-compose.yml as it is, brought up by Docker Compose v2 against
# podman's Docker-compatible API, tested (tests/compose/), torn down with `make down`.
# Passes, saying why, when this machine has no podman and cannot install it (not root, no apt).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env.sh"
cd "$REHEARSAL_ROOT"
mkdir -p "$REHEARSAL_DIR"
timings="$REHEARSAL_DIR/timings"
: >"$timings"
step() {  # NAME CMD...: run it, record "NAME SECONDS", return its status
  local name=$1 start=$SECONDS status=0; shift
  "$@" || status=$?
  echo "$name $((SECONDS - start))" >>"$timings"
  return "$status"
}
cleanup() {
  local status=$?
  if [[ -x $REHEARSAL_COMPOSE ]] && [[ -S ${DOCKER_HOST#unix://} ]]; then
    step down make --no-print-directory down COMPOSE="$REHEARSAL_COMPOSE" >/dev/null 2>&1 || true
  fi
  "$here/stop.sh"
  echo "rehearsal timings (s):"; sed 's/^/  /' "$timings"
  exit "$status"
}
trap cleanup EXIT
status=0
step setup "$here/setup.sh" || status=$?
if ((status == 3)); then  # no podman here and no way to install it: said why, not a failure
  trap - EXIT
  echo "compose rehearsal skipped: this machine cannot run podman (see above)"
  exit 0
fi
((status == 0)) || exit "$status"
step images "$here/images.sh"
podman image prune --force >/dev/null

# The published ports: .env's, unless another process holds one here (then a free one, set in
# the environment, which Compose and deploy/compose.mk both prefer to .env).
free_port() {
  python3 -c 'import socket,sys
p=int(sys.argv[1]); s=socket.socket()
try: s.bind(("127.0.0.1",p))
except OSError: s.bind(("127.0.0.1",0))
print(s.getsockname()[1]); s.close()' "$1"
}
for var in GATEWAY_PORT TOXIPROXY_API_PORT JAEGER_UI_PORT MAILPIT_UI_PORT; do
  if [[ -z ${!var:-} ]]; then
    port=$(free_port "$(sed -n "s/^$var=//p" .env)")
    export "$var=$port"
  fi
  echo "rehearsal: $var=${!var}"
done

# Images are built above (no registry here): up without --build, and never a pull.
step up make --no-print-directory compose-up COMPOSE="$REHEARSAL_COMPOSE" \
  COMPOSE_UP_FLAGS="--pull never"
export MESH_COMPOSE_REHEARSAL=1 REHEARSAL_COMPOSE
step tests "$REHEARSAL_ROOT/.venv/bin/python" -m pytest tests/compose -p no:cacheprovider \
  --durations=0 ${PYTEST_ARGS:-}
