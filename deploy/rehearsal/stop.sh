#!/usr/bin/env bash
# End what setup.sh started: the health ticker and podman's API service (by their pid files).
# The stack itself is `make down`'s; images and .rehearsal/ stay for the next run.
set -uo pipefail
source "$(dirname "$0")/env.sh"
for name in ticker service; do
  file="$REHEARSAL_DIR/$name.pid"
  [[ -f $file ]] || continue
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$file"
done
rm -f "${DOCKER_HOST#unix://}"
