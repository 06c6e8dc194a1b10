"""Issue 27, item 5: our adaptive limits against Netflix's concurrency-limits-core 0.5.4 itself.

The same seeded sample sequences (steady, a latency step up, a step down, drops, noise) go to
`grpc_aio_resilience.limits` and, through the Java driver `make peers` builds
(tools/limits-differential), to the reference's classes; the limit after every sample must agree.

Tolerance: none, every limit equal. Both sides hold time as whole nanoseconds (the Python
rounds seconds to ns once, and the samples here are whole ns), do the same IEEE-754 double
arithmetic in the same order (Python floats are doubles; no float32 anywhere) and truncate the
estimate to an int the same way, so any difference is a rule that differs, not rounding. Vegas's
probe jitter, ThreadLocalRandom in the reference, is pinned on both sides to one list of values.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import cycle

import pytest

from grpc_aio_resilience.limits import (
    AIMDLimit,
    AIMDSettings,
    FixedLimit,
    Gradient2Limit,
    Limit,
    VegasLimit,
    VegasSettings,
    WindowedLimit,
)
from tests.support.peers import peer_jar

pytestmark = pytest.mark.timeout(120)
MS = 1_000_000  # ns
JITTER = (0.5, 0.73, 0.91, 0.62, 0.999)
Sample = tuple[int, int, int, bool]  # start_ns, rtt_ns, inflight, dropped


@dataclass(frozen=True)
class Case:
    """One algorithm with its settings, as the driver's `run` line and as our constructor."""

    name: str
    driver: str
    build: Callable[[], Limit]


def vegas(settings: VegasSettings | None = None) -> Limit:
    draws: Iterator[float] = cycle(JITTER)
    return VegasLimit(settings, jitter=lambda: next(draws))


PINNED = "jitter=" + ",".join(str(j) for j in JITTER)
CASES = (
    Case("fixed", "fixed limit=10", lambda: FixedLimit(10)),
    Case("aimd", "aimd", AIMDLimit),
    Case("aimd-min1", "aimd minLimit=1", lambda: AIMDLimit(AIMDSettings(min_limit=1))),
    Case("vegas", f"vegas {PINNED}", vegas),
    Case(
        "vegas-probe2-smooth0.5",
        f"vegas probeMultiplier=2 smoothing=0.5 {PINNED}",
        lambda: vegas(VegasSettings(probe_multiplier=2, smoothing=0.5)),
    ),
    Case("gradient2", "gradient2", Gradient2Limit),
    Case("windowed-vegas", f"vegas windowed=1 {PINNED}", lambda: WindowedLimit(vegas())),
    Case("windowed-gradient2", "gradient2 windowed=1", lambda: WindowedLimit(Gradient2Limit())),
)


def samples(rtts: list[int], rng: random.Random, drop_p: float = 0.0) -> list[Sample]:
    """Calls 10 ms apart (so windows of 1 s hold ~100), mostly busy, sometimes app-limited."""
    out = []
    for i, rtt in enumerate(rtts):
        inflight = rng.randint(1, 250) if rng.random() < 0.2 else rng.randint(100, 250)
        out.append((i * 10 * MS + rng.randint(0, MS), rtt, inflight, rng.random() < drop_p))
    return out


def scenarios() -> dict[str, list[Sample]]:
    rng = random.Random(27)
    n = 1500

    def around(ms: float, count: int) -> list[int]:
        return [int(rng.gauss(ms, ms / 50) * MS) for _ in range(count)]

    noisy = [int(rng.lognormvariate(3.0, 0.6) * MS) + 1 for _ in range(n)]
    timeouts = [6000 * MS if rng.random() < 0.02 else rtt for rtt in around(10, n)]
    return {
        "steady": samples(around(10, n), rng),
        "step-up": samples(around(10, n // 3) + around(40, n - n // 3), rng),
        "step-down": samples(around(40, n // 3) + around(10, n - n // 3), rng),
        "drops": samples(timeouts, rng, drop_p=0.05),
        "noisy": samples(noisy, rng, drop_p=0.02),
    }


SCENARIOS = scenarios()


def ours(case: Case, sequence: list[Sample]) -> list[int]:
    limit = case.build()
    seen = []
    for start_ns, rtt_ns, inflight, dropped in sequence:
        limit.on_sample(start_ns / 1e9, rtt_ns / 1e9, inflight, dropped)
        seen.append(limit.limit)
    return seen


@pytest.fixture(scope="module")
def reference() -> dict[tuple[str, str], list[int]]:
    """Every case on every scenario through the reference, in one JVM."""
    java, jar = peer_jar("limits-differential.jar")
    lines, keys = [], []
    for case in CASES:
        for scenario, sequence in SCENARIOS.items():
            keys.append((case.name, scenario))
            lines.append(f"run {case.driver}")
            lines.extend(f"{s} {r} {i} {int(d)}" for s, r, i, d in sequence)
    done = subprocess.run(
        [str(java), "-jar", str(jar), "batch"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    runs = done.stdout.split("run\n")[1:]
    assert len(runs) == len(keys)
    return {key: [int(v) for v in run.split()] for key, run in zip(keys, runs, strict=True)}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_limit_sequence_matches_the_reference(
    case: Case, scenario: str, reference: dict[tuple[str, str], list[int]]
) -> None:
    expected = reference[(case.name, scenario)]
    got = ours(case, SCENARIOS[scenario])
    assert len(got) == len(expected)
    differences = [(i, e, g) for i, (e, g) in enumerate(zip(expected, got, strict=True)) if e != g]
    first = differences[0] if differences else None
    assert not differences, f"{len(differences)} samples differ; first (i, java, ours): {first}"
