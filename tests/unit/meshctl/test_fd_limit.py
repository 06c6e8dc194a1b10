"""`mesh up` raises its soft descriptor limit to the hard one, and lives with a refusal."""

from __future__ import annotations

import resource

import pytest

from grpc_resilience_mesh.launch import fd_limit


class FakeLimits:
    def __init__(self, soft: int, hard: int, refuse: bool = False) -> None:
        self.limits = (soft, hard)
        self.refuse = refuse

    def get(self, which: int) -> tuple[int, int]:
        assert which == resource.RLIMIT_NOFILE
        return self.limits

    def set(self, which: int, limits: tuple[int, int]) -> None:
        assert which == resource.RLIMIT_NOFILE
        if self.refuse:
            raise ValueError("not allowed")
        self.limits = limits


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeLimits:
    limits = FakeLimits(1024, 524288)
    monkeypatch.setattr(resource, "getrlimit", limits.get)
    monkeypatch.setattr(resource, "setrlimit", limits.set)
    return limits


def test_the_soft_limit_is_raised_to_the_hard_one(fake: FakeLimits) -> None:
    assert fd_limit.raise_open_files_limit() == (1024, 524288)
    assert fake.limits == (524288, 524288)


def test_an_unlimited_hard_limit_raises_to_the_kernels_default_cap(fake: FakeLimits) -> None:
    fake.limits = (1024, resource.RLIM_INFINITY)
    assert fd_limit.raise_open_files_limit() == (1024, fd_limit.NO_HARD_LIMIT_TARGET)
    assert fake.limits == (fd_limit.NO_HARD_LIMIT_TARGET, resource.RLIM_INFINITY)


def test_a_refusal_or_a_limit_already_at_the_top_leaves_it(fake: FakeLimits) -> None:
    fake.limits = (4096, 4096)
    assert fd_limit.raise_open_files_limit() == (4096, 4096)
    fake.limits, fake.refuse = (1024, 4096), True
    assert fd_limit.raise_open_files_limit() == (1024, 1024)
    assert fake.limits == (1024, 4096)
