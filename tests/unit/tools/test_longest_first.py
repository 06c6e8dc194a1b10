"""The suite's order: longest modules first, a module's tests kept together and in order."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from tests.support.longest_first import (
    UNLISTED_E2E_S,
    UNLISTED_S,
    DurationRecorder,
    longest_first,
    recorded,
)


@dataclass
class Item:
    nodeid: str


def ids(items: list[Any]) -> list[str]:
    return [i.nodeid for i in items]


def test_modules_go_longest_first_and_keep_their_own_order() -> None:
    items = [
        Item("tests/unit/a.py::t1"),
        Item("tests/unit/a.py::t2"),
        Item("tests/e2e/slow.py::t1"),
        Item("tests/unit/b.py::t1"),
        Item("tests/e2e/slow.py::t2"),
        Item("tests/e2e/unlisted.py::t1"),
    ]
    seconds = {"tests/e2e/slow.py": 120.0, "tests/unit/a.py": 2.0, "tests/unit/b.py": 30.0}
    ordered = longest_first(cast(list[pytest.Item], items), seconds)
    assert ids(ordered) == [
        "tests/e2e/slow.py::t1",
        "tests/e2e/slow.py::t2",
        "tests/unit/b.py::t1",
        "tests/e2e/unlisted.py::t1",  # an unlisted e2e module: UNLISTED_E2E_S
        "tests/unit/a.py::t1",
        "tests/unit/a.py::t2",
    ]
    assert UNLISTED_S < 2.0 < UNLISTED_E2E_S < 30.0


def test_with_no_figures_the_collection_order_stands_within_each_kind() -> None:
    items = [Item("tests/unit/z.py::t"), Item("tests/e2e/y.py::t"), Item("tests/unit/a.py::t")]
    ordered = longest_first(cast(list[pytest.Item], items), {})
    assert ids(ordered) == ["tests/e2e/y.py::t", "tests/unit/z.py::t", "tests/unit/a.py::t"]


def test_a_missing_or_malformed_file_gives_no_figures(tmp_path: Path) -> None:
    assert recorded(tmp_path / "absent.json") == {}
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    assert recorded(bad) == {}
    bad.write_text(json.dumps({"modules": ["not", "a", "mapping"]}))
    assert recorded(bad) == {}


def test_the_committed_figures_parse_and_name_modules_that_exist() -> None:
    seconds = recorded()
    assert len(seconds) >= 20, "tests/durations.json: rerun `make test-durations`"
    root = Path(__file__).resolve().parents[3]
    missing = [m for m in seconds if not (root / m).is_file()]
    assert missing == [], f"gone or renamed: rerun `make test-durations` ({missing})"


def test_the_recorder_sums_each_modules_steps_and_writes_longest_first(tmp_path: Path) -> None:
    out = tmp_path / "durations.json"
    recorder = DurationRecorder(out)
    for nodeid, seconds in [("tests/a.py::x", 1.0), ("tests/b.py::y", 4.0), ("tests/a.py::z", 2.5)]:
        recorder.pytest_runtest_logreport(cast(pytest.TestReport, _Report(nodeid, seconds)))
    session = cast(pytest.Session, _Session())
    recorder.pytest_sessionfinish(session)
    assert recorded(out) == {"tests/b.py": 4.0, "tests/a.py": 3.5}
    assert list(json.loads(out.read_text())["modules"]) == ["tests/b.py", "tests/a.py"]


@dataclass
class _Report:
    nodeid: str
    duration: float


class _Config:
    pass


class _Session:
    config = _Config()
