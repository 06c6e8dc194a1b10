"""One real Jaeger per module (skips, naming `make peers`, where it has not been built)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.jaeger.jaeger_process import Jaeger, jaeger_or_skip, running_jaeger


@pytest.fixture(scope="module")
def jaeger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jaeger]:
    binary = jaeger_or_skip()
    with running_jaeger(binary, tmp_path_factory.mktemp("jaeger")) as running:
        yield running
