"""Report folders named after experiment files stay inside reports/, and index.html links
only to files there."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from grpc_resilience_mesh.chaos.report.index import report_folder, write_index

HOSTILE = [
    "..",  # the stem of a file named `...yaml`
    ".",
    ".hidden",
    "javascript:alert(document.title);x",
    "data:text/html,<script>alert(1)</script>",
    "a\\..\\b",
    "",
]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [v or "" for k, v in attrs if k in ("href", "src")]


@pytest.mark.parametrize("stem", HOSTILE)
def test_every_report_folder_is_a_child_of_reports(tmp_path: Path, stem: str) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    folder = report_folder(reports, stem)
    assert folder.resolve().parent == reports.resolve()
    assert not folder.name.startswith(".")


def test_catalogue_names_are_kept_as_they_are(tmp_path: Path) -> None:
    assert report_folder(tmp_path, "provider-outage").name == "provider-outage"
    assert report_folder(tmp_path, "retry-storm.v2_a").name == "retry-storm.v2_a"


def _fake_report(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({"title": "t", "hypothesis": "h"}))
    (folder / "report.md").write_text("# r\n")
    (folder / "latency.png").write_bytes(b"")


def test_index_links_are_relative_file_links_only(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    folders = {report_folder(reports, stem) for stem in HOSTILE}
    for folder in folders:
        _fake_report(folder)
    # A folder an older version named unchecked is still linked as a file, never a scheme.
    _fake_report(reports / "javascript:alert(document.title);y")
    parser = _Links()
    parser.feed(write_index(reports).read_text())
    files = [u for u in parser.urls if not u.startswith("#")]
    assert len(files) == 4 * (len(folders) + 1)  # report.md, result.json, the plot twice
    for url in files:
        parsed = urlparse(url)
        assert not parsed.scheme and not parsed.netloc and not url.startswith("/"), url
        target = (reports / unquote(parsed.path)).resolve()
        assert target.parent.parent == reports.resolve() and target.is_file(), url
    assert not [p for p in tmp_path.iterdir() if p.name != "reports"], "nothing beside reports/"
