"""A per-file index of trace id -> byte offsets of its spans, so `mesh traces ID` reads the
few lines of one trace instead of every span file.

The reader writes it lazily beside the span files (`<traces>/.index/<file>.json`), keyed by
the file's inode, size and mtime: an unchanged file is not read again; one that grew (a service
appending) is indexed from where the last index stopped; a rotated or replaced one afresh.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from meshctl.traces import Span, parse_spans

INDEX_DIR = ".index"
_ID = re.compile(rb'"trace_id":\s*"([0-9a-fA-F]+)"')


@dataclass
class TraceIndex:
    """Looks traces up in the span files of one traces directory through their indices."""

    traces_dir: Path
    scanned_bytes: int = 0
    """Bytes of span files read to build or extend indices (not the spans looked up)."""
    _ids: dict[Path, dict[str, list[int]]] = field(default_factory=dict)

    def ids(self, path: Path) -> dict[str, list[int]]:
        """`path`'s trace ids and the offsets of their spans, its index brought up to date."""
        if path not in self._ids:
            self._ids[path] = self._fresh(path)
        return self._ids[path]

    def find(self, files: list[Path], prefix: str) -> tuple[str, list[Span]] | None:
        """The trace whose id is `prefix` or starts with it, if exactly one does."""
        prefix = prefix.lower()
        matches = {tid for f in files for tid in self.ids(f) if tid.startswith(prefix)}
        if len(matches) != 1:
            return None
        (tid,) = matches
        spans: list[Span] = []
        for f in files:
            offsets = self.ids(f).get(tid, [])
            if offsets:
                spans += _read_at(f, offsets)
        return tid, spans

    def _fresh(self, path: Path) -> dict[str, list[int]]:
        stat = path.stat()
        key = {"inode": stat.st_ino, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        saved = _load(self._index_path(path))
        if saved is not None and all(saved.get(k) == v for k, v in key.items()):
            return dict(saved["ids"])
        start, ids = 0, defaultdict(list)
        if saved is not None and saved.get("inode") == stat.st_ino:
            if saved.get("indexed_to", 0) <= stat.st_size:
                start, ids = int(saved["indexed_to"]), defaultdict(list, saved["ids"])
        indexed_to = self._scan(path, start, ids)
        self._save(path, {**key, "indexed_to": indexed_to, "ids": ids})
        return dict(ids)

    def _scan(self, path: Path, start: int, ids: dict[str, list[int]]) -> int:
        """Index the complete lines of `path` from `start`; where the last complete line ends."""
        offset = start
        with path.open("rb") as lines:
            lines.seek(start)
            for line in lines:
                if not line.endswith(b"\n"):
                    break  # torn: a service is still writing it; indexed next time
                self.scanned_bytes += len(line)
                tid = _trace_id(line)
                if tid:
                    ids[tid].append(offset)
                offset += len(line)
        return offset

    def _index_path(self, path: Path) -> Path:
        return self.traces_dir / INDEX_DIR / f"{path.name}.json"

    def _save(self, path: Path, index: dict[str, Any]) -> None:
        target = self._index_path(path)
        try:
            target.parent.mkdir(exist_ok=True)
            tmp = target.with_suffix(".tmp")
            tmp.write_text(json.dumps(index, separators=(",", ":")))
            os.replace(tmp, target)
        except OSError:
            pass  # a read-only traces dir: the index lives for this command only


def _trace_id(line: bytes) -> str | None:
    """The line's trace id (the first key the exporter writes), without parsing the span."""
    found = _ID.search(line)
    return found.group(1).decode("ascii").lower() if found else None


def _load(index: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads(index.read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) and isinstance(loaded.get("ids"), dict) else None


def _read_at(path: Path, offsets: list[int]) -> list[Span]:
    lines = []
    with path.open("rb") as f:
        for offset in offsets:
            f.seek(offset)
            lines.append(f.readline())
    return parse_spans(lines)
