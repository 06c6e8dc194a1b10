# Sourced by the rehearsal's scripts: podman's configuration, storage and API socket, all under
# .rehearsal/ in the checkout (git-ignored), never the user's own ~/.config or /etc/containers.
REHEARSAL_ROOT="${REHEARSAL_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
REHEARSAL_DIR="${REHEARSAL_DIR:-$REHEARSAL_ROOT/.rehearsal}"
export CONTAINERS_CONF="$REHEARSAL_DIR/containers.conf"
export CONTAINERS_STORAGE_CONF="$REHEARSAL_DIR/storage.conf"
export CONTAINERS_REGISTRIES_CONF="$REHEARSAL_DIR/registries.conf"
export DOCKER_HOST="unix://$REHEARSAL_DIR/podman.sock"
# Docker Compose v2 itself keeps its state (and the CLI's config) here, not in ~/.docker.
export DOCKER_CONFIG="$REHEARSAL_DIR/docker-config"
REHEARSAL_COMPOSE="$REHEARSAL_DIR/bin/docker-compose"
# An image as Docker (and containerd) names it: redis:7 is docker.io/library/redis:7 (podman
# would say localhost/redis:7).
qualify() {
  local first=${1%%/*}
  if [[ $1 != */* ]]; then echo "docker.io/library/$1"
  elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then echo "docker.io/$1"
  else echo "$1"; fi
}
