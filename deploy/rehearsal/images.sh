#!/usr/bin/env bash
# Every image docker-compose.yml names, built here under the exact names .env pins (no registry
# is reached). The mesh image is built each time; the others skip when their image exists
# (REBUILD=1 builds them all again).
#   base    debootstrap --variant=minbase bookworm, `podman import`ed
#   python  the base + Debian's Python 3.11: deploy/Dockerfile's PYTHON_IMAGE
#   mesh    deploy/Dockerfile as written (MESH_IMAGE)
#   redis, toxiproxy, jaeger, mailpit: look-alikes (deploy/README.md lists what differs)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$REHEARSAL_ROOT"
here=deploy/rehearsal/images
build="$REHEARSAL_DIR/build"
timings="$REHEARSAL_DIR/timings"
mkdir -p "$build"
# An image name as Compose reads it: the shell's value wins over .env's (qualify: env.sh).
pinned() { local v="${!1:-}"; [[ -n $v ]] || v=$(sed -n "s/^$1=//p" .env); qualify "$v"; }
have() { [[ ${REBUILD:-} != 1 ]] && podman image exists "$1"; }
timed() {  # NAME CMD...: run, and append "NAME SECONDS" to .rehearsal/timings
  local name=$1 start=$SECONDS; shift
  "$@"
  echo "image:$name $((SECONDS - start))" >>"$timings"
  echo "rehearsal: $name image built in $((SECONDS - start)) s"
}
BASE=localhost/rehearsal/debian:bookworm
PYTHON=localhost/rehearsal/python:3.11-bookworm
LABEL=(--format docker --label io.github.grpc-resilience-mesh.rehearsal=1)

make_base() {
  local rootfs="$REHEARSAL_DIR/rootfs"
  if [[ ! -x $rootfs/bin/sh ]]; then
    rm -rf "$rootfs.partial"
    debootstrap --variant=minbase bookworm "$rootfs.partial" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
      >"$REHEARSAL_DIR/debootstrap.log"
    rm -rf "$rootfs"; mv "$rootfs.partial" "$rootfs"
  fi
  tar --numeric-owner -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
}
have "$BASE" || timed base make_base

# pip in the mesh build verifies PyPI with the host's CA bundle (any proxy's CA included).
CA=/etc/ssl/certs/ca-certificates.crt
build_with_net=(--network host --volume "$CA:$CA:ro")
have "$PYTHON" || timed python podman build --quiet "${LABEL[@]}" --network host \
  --build-arg BASE="$BASE" -f "$here/python.Containerfile" -t "$PYTHON" "$here" >/dev/null

# Always built, as `make up` does (--build): the layer cache keeps an unchanged tree quick.
MESH_IMAGE=$(pinned MESH_IMAGE)
timed mesh podman build --quiet "${LABEL[@]}" "${build_with_net[@]}" \
  --build-arg PYTHON_IMAGE="$PYTHON" -f deploy/Dockerfile -t "$MESH_IMAGE" . >/dev/null

# The Go-built peers: `make peers` puts them in .peers/bin. Toxiproxy's image is FROM scratch,
# so its two binaries are built again without cgo (static) from the same module version.
peer() { [[ -x .peers/bin/$1 ]] || make --no-print-directory peers >&2; install -m 0755 ".peers/bin/$1" "$2"; }
context() { rm -rf "$build/$1"; mkdir -p "$build/$1"; echo "$build/$1"; }

REDIS_IMAGE=$(pinned REDIS_IMAGE)
if ! have "$REDIS_IMAGE"; then
  ctx=$(context redis); cp "$here/redis-entrypoint.sh" "$here/redis-server-wrapper.sh" "$ctx/"
  timed redis podman build --quiet "${LABEL[@]}" --network host --build-arg BASE="$BASE" \
    -f "$here/redis.Containerfile" -t "$REDIS_IMAGE" "$ctx" >/dev/null
fi

TOXIPROXY_IMAGE=$(pinned TOXIPROXY_IMAGE)
if ! have "$TOXIPROXY_IMAGE"; then
  ctx=$(context toxiproxy)
  version=${TOXIPROXY_IMAGE##*:}
  CGO_ENABLED=0 GOBIN="$ctx" go install \
    "github.com/Shopify/toxiproxy/v2/cmd/server@v${version#v}" \
    "github.com/Shopify/toxiproxy/v2/cmd/cli@v${version#v}"
  mv "$ctx/server" "$ctx/toxiproxy-server"; mv "$ctx/cli" "$ctx/toxiproxy-cli"
  timed toxiproxy podman build --quiet "${LABEL[@]}" -f "$here/toxiproxy.Containerfile" \
    -t "$TOXIPROXY_IMAGE" "$ctx" >/dev/null
fi

MAILPIT_IMAGE=$(pinned MAILPIT_IMAGE)
if ! have "$MAILPIT_IMAGE"; then
  ctx=$(context mailpit); peer mailpit "$ctx/mailpit"
  timed mailpit podman build --quiet "${LABEL[@]}" --build-arg BASE="$BASE" \
    -f "$here/mailpit.Containerfile" -t "$MAILPIT_IMAGE" "$ctx" >/dev/null
fi

JAEGER_IMAGE=$(pinned JAEGER_IMAGE)
if ! have "$JAEGER_IMAGE"; then
  ctx=$(context jaeger); peer jaeger "$ctx/jaeger"
  timed jaeger podman build --quiet "${LABEL[@]}" --network host --build-arg BASE="$BASE" \
    -f "$here/jaeger.Containerfile" -t "$JAEGER_IMAGE" "$ctx" >/dev/null
fi
