"""What each image the deployments run contains and does, read from the image's own sources.

No Docker engine runs where these tests run, so nothing here looks inside an image: each row
says what the image's Dockerfile and entrypoint at the pinned tag say, with where it was read;
deploy/README.md ("What the pinned images contain") quotes the lines. A tag in .env without a
row here fails test_deploy_hardening.py: read the new tag's sources, then add its row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

ALPINE_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""Docker's default PATH, which these images leave as it is."""


@dataclass(frozen=True)
class StepDown:
    """What an entrypoint does when it starts as uid 0, before running the service."""

    to: str
    """uid:gid it switches to."""
    needs: frozenset[str]
    """The capabilities that takes, without which the container exits at start."""


@dataclass(frozen=True)
class PinnedImage:
    """One image reference, as pinned in .env (the same tag the k8s manifests use)."""

    user: str | None
    """The image's USER as uid[:gid]; None: it sets none, so it starts as root."""
    shell: bool
    """Whether /bin/sh exists, which CMD-SHELL health checks need."""
    executables: frozenset[str]
    """Absolute paths known to be in the image (not all of them: the ones that matter here)."""
    owners: Mapping[str, str] = field(default_factory=dict)
    """Directory -> uid:gid owning it in the image (a new named volume copies that owner)."""
    writes: tuple[str, ...] = ()
    """Directories the service writes; everything else may be read-only."""
    step_down: StepDown | None = None
    search_path: tuple[str, ...] = ALPINE_PATH
    sources: tuple[str, ...] = ()


IMAGES: dict[str, PinnedImage] = {
    "redis:7.4.2-alpine": PinnedImage(
        user=None,
        shell=True,
        executables=frozenset(
            {
                "/bin/sh",
                "/usr/local/bin/docker-entrypoint.sh",
                "/usr/local/bin/gosu",
                "/usr/local/bin/redis-server",
                "/usr/local/bin/redis-cli",
            }
        ),
        owners={"/data": "999:1000"},
        writes=("/data",),
        step_down=StepDown(to="999:1000", needs=frozenset({"CHOWN", "SETUID", "SETGID"})),
        sources=(
            "repo-info repos/redis/remote/7.4.2-alpine.md (the tag's build steps, as pushed)",
            "redis/docker-library-redis@e5650da9 7.4/alpine/Dockerfile:12-13,133-141",
            "redis/docker-library-redis@e5650da9 7.4/alpine/docker-entrypoint.sh:11-13",
        ),
    ),
    "axllent/mailpit:v1.33.1": PinnedImage(
        user=None,
        shell=True,
        executables=frozenset({"/bin/sh", "/mailpit"}),
        writes=("/tmp",),
        sources=(
            "axllent/mailpit@v1.33.1 Dockerfile:15,24,32,34",
            "axllent/mailpit@v1.33.1 internal/storage/database.go:68-72",
            "axllent/mailpit@v1.33.1 cmd/readyz.go:31,51-52",
        ),
    ),
    "ghcr.io/shopify/toxiproxy:2.12.0": PinnedImage(
        user=None,
        shell=False,
        executables=frozenset({"/toxiproxy", "/toxiproxy-cli"}),
        search_path=(),
        sources=(
            "Shopify/toxiproxy@v2.12.0 Dockerfile:1-10",
            "Shopify/toxiproxy@v2.12.0 cmd/cli/cli.go:93-98,276-279,676-677",
        ),
    ),
    "jaegertracing/jaeger:2.13.0": PinnedImage(
        user="10001",
        shell=True,
        executables=frozenset({"/bin/sh", "/usr/bin/wget", "/cmd/jaeger/jaeger-linux"}),
        writes=("/tmp",),
        sources=(
            "jaegertracing/jaeger@v1.76.0 (image 2.13.0) cmd/jaeger/Dockerfile:9-11,43-50",
            "jaegertracing/jaeger@v1.76.0 scripts/build/docker/base/Dockerfile:7",
            "jaegertracing/jaeger@v1.76.0 cmd/jaeger/internal/all-in-one.yaml:49-52",
        ),
    ),
    "grpc-resilience-mesh:local": PinnedImage(
        user="10001:10001",
        shell=True,
        executables=frozenset(
            {"/bin/sh", "/opt/venv/bin/python", "/usr/local/bin/python", "/usr/bin/sleep"}
        ),
        owners={"/data": "10001:10001"},
        search_path=("/opt/venv/bin", *ALPINE_PATH),
        sources=("deploy/Dockerfile (built here; test_deploy_hardening.py reads it)",),
    ),
}
