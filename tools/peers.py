"""Build the peers (real Toxiproxy, Jaeger v2, Mailpit, our load generator and xDS control plane,
the Java driver of Netflix's concurrency-limits, ghz) once into .peers/bin/.

    python -m tools.peers [--only NAME ...] [--bin DIR]

Each binary gets a stamp file beside it, `NAME.version`, whose first line is the version built; a
binary whose stamp names the wanted version is skipped, so a second run costs nothing. When the Go
module proxy refuses the pinned version, the nearest version it serves (`go list -m -versions`) is
built instead, and the stamp's second line records what was refused. Jaeger's module carries replace
directives that `go install module@version` refuses, so it is built the way the module is meant to
be consumed: `go get -tool` in a throwaway Go module under .peers/src/jaeger. A peer whose source is
in this repo (grpc_resilience_mesh/loadgen/go: mesh-loadgen; tools/xds-control: mesh-xds) is built
with `go build` there, and its stamp is the hash of its sources, so an edit rebuilds it and nothing
else does. A Maven project of this repo (tools/limits-differential) is built the same way, stamped
by the hash of its pom.xml and .java files, with `mvn package` (offline first, online when the local
repository lacks something) out of the source tree, into NAME.jar with its dependencies in
NAME-lib/; without `mvn` or `java` it is skipped with a message (its tests skip too) and the exit
status is unchanged. Exit status 0 when every peer is there, 1 when one failed to build, 2 when `go`
is missing.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BIN = ROOT / ".peers" / "bin"
# The proxy's ways of saying "no such version" (as opposed to a build or network failure).
_REFUSED = re.compile(r"unknown revision|invalid version|not found|404|410|no matching versions")


@dataclass(frozen=True)
class Peer:
    """One binary: the module that serves it, the package path and the version pinned."""

    name: str
    module: str
    package: str
    version: str
    tool_module: bool = False  # built via `go get -tool` in a module of our own
    version_var: str = ""  # the Go variable the release build stamps (-ldflags -X), if any
    in_repo: bool = False  # `package` is a Go module of this repo, built with `go build`
    builder: str = "go"  # or "maven": `package` is a Maven project of this repo (in_repo too)


# As the release builds stamp them: `toxiproxy-server -version` and GET /version say 2.12.0.
_TOXI_VERSION = "github.com/Shopify/toxiproxy/v2.Version"
_MAILPIT_VERSION = "github.com/axllent/mailpit/config.Version"

# deploy/README.md maps these to the image tags .env pins; tests/unit/deploy checks they agree.
PEERS = (
    Peer(
        "toxiproxy-server",
        "github.com/Shopify/toxiproxy/v2",
        "cmd/server",
        "v2.12.0",
        version_var=_TOXI_VERSION,
    ),
    Peer(
        "toxiproxy-cli",
        "github.com/Shopify/toxiproxy/v2",
        "cmd/cli",
        "v2.12.0",
        version_var=_TOXI_VERSION,
    ),
    Peer("mailpit", "github.com/axllent/mailpit", "", "v1.33.1", version_var=_MAILPIT_VERSION),
    Peer("jaeger", "github.com/jaegertracing/jaeger", "cmd/jaeger", "v1.76.0", tool_module=True),
    Peer(
        "mesh-loadgen", "mesh/tools/loadgen", "grpc_resilience_mesh/loadgen/go", "", in_repo=True
    ),  # issue 16
    # issue 30: the xDS control plane (go-control-plane v0.14.0) for `mesh up --xds`.
    Peer("mesh-xds", "mesh/tools/xds", "tools/xds-control", "", in_repo=True),
    # issue 27: the reference side of the adaptive limits' differential test.
    Peer(
        "limits-differential.jar",
        "com.netflix.concurrency-limits:concurrency-limits-core",
        "tools/limits-differential",
        "0.5.4",
        in_repo=True,
        builder="maven",
    ),
    # issue 29: the field's gRPC load tool, an independent measure beside `mesh bench` (its
    # `@latest` resolves to v0.93.0 of 2021: the pin matters). Its -version prints main.version.
    Peer("ghz", "github.com/bojand/ghz", "cmd/ghz", "v0.120.0", version_var="main.version"),
)
# What each builder needs on PATH, and which files of an in-repo peer are its sources.
TOOLCHAINS = {"go": ("go",), "maven": ("mvn", "java")}
_SOURCES = {"go": ({".go"}, {"go.mod", "go.sum"}), "maven": ({".java"}, {"pom.xml"})}


def wanted_version(peer: Peer) -> str:
    """The pinned version; for a peer built from this repo, `src-` and a hash of its sources."""
    if not peer.in_repo:
        return peer.version
    digest = hashlib.sha256()
    source = ROOT / peer.package
    suffixes, names = _SOURCES[peer.builder]
    for path in sorted(source.rglob("*")):
        if path.is_file() and (path.suffix in suffixes or path.name in names):
            digest.update(f"{path.relative_to(source)}\0{path.stat().st_size}\0".encode())
            digest.update(path.read_bytes())
    return "src-" + digest.hexdigest()[:16]


def import_path(peer: Peer) -> str:
    if peer.in_repo:
        return peer.package
    return f"{peer.module}/{peer.package}" if peer.package else peer.module


def stamp_path(bin_dir: Path, peer: Peer) -> Path:
    return bin_dir / f"{peer.name}.version"


def built_version(bin_dir: Path, peer: Peer) -> str | None:
    """The version the stamp records, or None when the binary or its stamp is missing."""
    stamp = stamp_path(bin_dir, peer)
    if not (bin_dir / peer.name).is_file() or not stamp.is_file():
        return None
    lines = stamp.read_text().splitlines()
    return lines[0].strip() if lines else None


def is_current(bin_dir: Path, peer: Peer) -> bool:
    """True when the binary is there and its stamp names the pinned version (or a stand-in
    recorded as used because the pinned one was refused)."""
    stamp = stamp_path(bin_dir, peer)
    version = built_version(bin_dir, peer)
    if version is None:
        return False
    if peer.in_repo:
        return version == wanted_version(peer)
    return version == peer.version or f"refused {peer.version}" in stamp.read_text()


def _go(args: Sequence[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["go", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def _mvn(args: Sequence[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["mvn", "-q", "-B", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def _build_maven(peer: Peer, bin_dir: Path, env: dict[str, str]) -> tuple[bool, str]:
    """`mvn package` into .peers/src/NAME, then NAME.jar and NAME-lib/ into bin_dir."""
    stem = peer.name.removesuffix(".jar")
    out = bin_dir.parent / "src" / stem
    args = ["package", f"-Dlimits.build.dir={out}"]
    done = _mvn(["-o", *args], ROOT / peer.package, env)
    if done.returncode != 0:  # the first build: resolve the plugins and the library online
        done = _mvn(args, ROOT / peer.package, env)
    if done.returncode != 0:
        return False, done.stdout + done.stderr
    shutil.rmtree(bin_dir / f"{stem}-lib", ignore_errors=True)
    shutil.copytree(out / f"{stem}-lib", bin_dir / f"{stem}-lib")
    shutil.copy2(out / f"{stem}.jar", bin_dir / peer.name)
    return True, ""


def _build(peer: Peer, version: str, bin_dir: Path, env: dict[str, str]) -> tuple[bool, str]:
    """Build one version; (ok, stderr)."""
    if peer.builder == "maven":
        return _build_maven(peer, bin_dir, env)
    if peer.in_repo:
        out = str(bin_dir / peer.name)
        flags = ["-trimpath", "-buildvcs=false"]
        done = _go(["build", *flags, "-o", out, "."], ROOT / peer.package, env)
        return done.returncode == 0, done.stderr
    target = f"{import_path(peer)}@{version}"
    if not peer.tool_module:
        # Toxiproxy's tags are v-prefixed; its Version variable is not (2.12.0); Mailpit keeps it.
        stamped = version.removeprefix("v") if "toxiproxy" in peer.module else version
        flags = [f"-ldflags=-X {peer.version_var}={stamped}"] if peer.version_var else []
        done = _go(["install", *flags, target], ROOT, {**env, "GOBIN": str(bin_dir)})
        if done.returncode == 0 and peer.name != Path(import_path(peer)).name:
            (bin_dir / Path(import_path(peer)).name).replace(bin_dir / peer.name)
        return done.returncode == 0, done.stderr
    src = bin_dir.parent / "src" / peer.name
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    steps = (
        ["mod", "init", f"meshpeers/{peer.name}"],
        ["get", "-tool", target],
        ["build", "-o", str(bin_dir / peer.name), import_path(peer)],
    )
    for step in steps:
        done = _go(step, src, env)
        if done.returncode != 0:
            return False, done.stderr
    return True, ""


def nearest_served(peer: Peer, env: dict[str, str]) -> str | None:
    """The served version closest to the pinned one (same major), older preferred on a tie."""
    done = _go(["list", "-m", "-versions", peer.module], ROOT, env)
    served = done.stdout.split()[1:] if done.returncode == 0 else []

    def key(version: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", version)[:3])

    pinned = key(peer.version)
    same_major = [v for v in served if "-" not in v and key(v)[:1] == pinned[:1]]
    if not same_major:
        return None
    distance = [
        (abs(key(v)[1] - pinned[1]) * 1000 + abs(key(v)[2] - pinned[2]), v) for v in same_major
    ]
    return min(distance, key=lambda pair: (pair[0], key(pair[1]) > pinned))[1]


HEARTBEAT_S = 15.0
"""While a build runs, a line this often: a Go build took 212 s on a busy machine, and
`make demo` showed nothing after "building mesh-loadgen ..." all that time."""


def _still_building(name: str, done: threading.Event, interval_s: float) -> None:
    started = time.monotonic()
    while not done.wait(interval_s):
        elapsed = time.monotonic() - started
        print(f"peers: still building {name} ({elapsed:.0f} s so far) ...", flush=True)


def _build_saying(peer: Peer, version: str, bin_dir: Path, env: dict[str, str]) -> tuple[bool, str]:
    """_build, with a line every HEARTBEAT_S seconds until it ends."""
    done = threading.Event()
    beat = threading.Thread(
        target=_still_building, args=(peer.name, done, HEARTBEAT_S), daemon=True
    )
    beat.start()
    try:
        return _build(peer, version, bin_dir, env)
    finally:
        done.set()
        beat.join()


def ensure(peer: Peer, bin_dir: Path, env: dict[str, str]) -> bool:
    """Build one peer unless current; print what happened and how long it took."""
    if is_current(bin_dir, peer):
        print(f"peers: {peer.name} {built_version(bin_dir, peer)} already built (skip)", flush=True)
        return True
    version = wanted_version(peer)
    print(f"peers: building {peer.name} {version} ...", flush=True)
    started = time.monotonic()
    ok, stderr = _build_saying(peer, version, bin_dir, env)
    note = ""
    if not ok and not peer.in_repo and _REFUSED.search(stderr):
        stand_in = nearest_served(peer, env)
        refused = f"{peer.module}@{peer.version}"
        print(f"peers: the Go module proxy refused {refused}; trying {stand_in}", flush=True)
        if stand_in is not None:
            ok, stderr = _build_saying(peer, stand_in, bin_dir, env)
            note = f"refused {peer.version}, used {stand_in}"
    elapsed = time.monotonic() - started
    if not ok:
        print(
            f"peers: {peer.name} FAILED after {elapsed:.0f} s:\n{stderr.strip()}", file=sys.stderr
        )
        return False
    used = note.rsplit(" ", 1)[-1] if note else version
    stamp_path(bin_dir, peer).write_text(f"{used}\n{note}\n" if note else f"{used}\n")
    print(
        f"peers: built {peer.name} {used} ({import_path(peer)}) in {elapsed:.0f} s {note}".rstrip(),
        flush=True,
    )
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.peers", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--only", action="append", choices=[p.name for p in PEERS])
    parser.add_argument("--bin", type=Path, default=DEFAULT_BIN, help="where binaries go")
    args = parser.parse_args(argv)
    requested = [p for p in PEERS if not args.only or p.name in args.only]
    wanted = [p for p in requested if _toolchain_present(p)]
    no_go = any(p.builder == "go" and p not in wanted for p in requested)
    bin_dir: Path = args.bin.resolve()
    bin_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # Two `make test` runs at once share one build: the second waits, then finds the stamps.
    with (bin_dir.parent / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        results = [ensure(peer, bin_dir, env) for peer in wanted]
    if not all(results):
        return 1
    return 2 if no_go else 0


def _toolchain_present(peer: Peer) -> bool:
    """True when the peer's builder is on PATH; otherwise say which tool is missing."""
    missing = [tool for tool in TOOLCHAINS[peer.builder] if shutil.which(tool) is None]
    if missing:
        tools = " and ".join(f"`{tool}`" for tool in missing)
        print(
            f"peers: no {tools} on PATH: {peer.name} not built; tests that need it will skip",
            file=sys.stderr,
        )
    return not missing


if __name__ == "__main__":
    raise SystemExit(main())
