"""docs/architecture.md's "Follow a call": each route lists at most 12 files, in order, and
every one of them exists (a file moved or renamed makes the page stale)."""

from __future__ import annotations

from tests.support.doc_routes import MAX_FILES, ROOT, routes


def test_both_routes_are_there_and_at_most_twelve_files_each() -> None:
    found = routes()
    assert sorted(t.split(",")[0] for t in found) == ["GetHome", "`mesh chaos run NAME`"]
    for title, files in found.items():
        assert 1 <= len(files) <= MAX_FILES, title
        assert len(set(files)) == len(files), title


def test_every_file_listed_exists() -> None:
    missing = [f for files in routes().values() for f in files if not (ROOT / f).is_file()]
    assert missing == []
