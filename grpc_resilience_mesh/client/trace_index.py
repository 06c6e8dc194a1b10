"""A sharded index of trace id -> byte offsets of its spans, so `mesh traces ID` reads a
sixteenth of the index and then the few lines of one trace, whatever the volume of span files.

Beside the span files, `<traces>/.index/<file>/` holds for each span file 16 shards, named for
a trace id's first hex digit, of lines `<trace id> <offset>,<offset>...` (appended to as the
file grows), and `meta.json`: the file's inode, size and mtime, how far it was indexed, a
checksum of its first bytes and each shard's length at that point (bytes past it are from an
update that did not finish, cut off by the next). A file that grew is indexed from where the
last update stopped; one renamed by rotation (`x.jsonl` -> `x.jsonl.1`, the same inode) takes
its index along; a replaced one is indexed afresh. The index of a file that is gone is dropped,
and so is the one-JSON-per-file format before this one (`.index/<file>.json`).

`mesh chaos run`, `mesh demo` and `mesh up` build it ahead (index_traces); a lookup brings it
up to date first (one lock orders them). Where `.index` cannot be written, an index that is
current is still read, and the other files are scanned.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import zlib
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.client.traces import Span, parse_spans, trace_files

INDEX_DIR = ".index"
SHARDS = "0123456789abcdef"
META = "meta.json"
LOCK = "lock"
HEAD_BYTES = 4096
"""The first bytes of a span file, checksummed: a reused inode is not taken for the same file."""
CHUNK_BYTES = 1 << 20
_ID = re.compile(rb'"trace_id":\s*"([0-9a-fA-F]+)"')
_HEX = re.compile(r"[0-9a-f]+")
_MOVING = "~"
"""Prefix of an index on its way to its file's new name (rotation)."""


@dataclass(frozen=True)
class Meta:
    """What one span file's index covers."""

    inode: int
    size: int
    mtime_ns: int
    indexed_to: int
    """Where the last complete line indexed ends."""
    head: int
    """crc32 of the file's first min(indexed_to, HEAD_BYTES) bytes."""
    shards: tuple[int, ...]
    """Each shard's length in bytes, in SHARDS order."""

    def same_stat(self, stat: os.stat_result) -> bool:
        return (self.inode, self.size, self.mtime_ns) == (
            stat.st_ino,
            stat.st_size,
            stat.st_mtime_ns,
        )


def index_traces(traces_dir: Path) -> None:
    """Bring the index of every span file in `traces_dir` up to date; nothing where it cannot
    be written (a read-only or missing directory)."""
    with suppress(OSError):
        TraceIndex(traces_dir).refresh()


@dataclass
class TraceIndex:
    """Looks traces up in the span files of one traces directory through their indices."""

    traces_dir: Path
    scanned_bytes: int = 0
    """Bytes of span files read to build or extend indices, or scanned without one."""
    loaded_bytes: int = 0
    """Bytes of index shards read by lookups."""
    _metas: dict[Path, Meta] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.traces_dir / INDEX_DIR

    def refresh(self, files: list[Path] | None = None) -> None:
        """Index what the span files gained since the last update; drop what is stale."""
        with self._locked() as writable:
            self._refresh(trace_files(self.traces_dir) if files is None else files, writable)

    def find(self, files: list[Path], prefix: str) -> tuple[str, list[Span]] | None:
        """The trace whose id is `prefix` or starts with it, if exactly one does."""
        prefix = prefix.lower()
        if not _HEX.fullmatch(prefix):
            return None
        matches: dict[str, list[tuple[Path, list[int]]]] = {}
        with self._locked() as writable:
            self._refresh(files, writable)
            for path in files:
                hits = self._hits(path, prefix) if path in self._metas else None
                if hits is None:
                    hits = self._scan_for(path, prefix)
                for tid, offsets in hits.items():
                    matches.setdefault(tid, []).append((path, offsets))
                if len(matches) > 1:
                    return None
        if len(matches) != 1:
            return None
        ((tid, where),) = matches.items()
        spans = [span for path, offsets in where for span in _read_at(path, offsets)]
        return tid, [s for s in spans if str(s["trace_id"]).lower() == tid]  # none rotated in

    @contextmanager
    def _locked(self) -> Iterator[bool]:
        """Hold the index's lock; yield whether the index can be written."""
        try:
            self.root.mkdir(mode=0o700, exist_ok=True)  # the spans' ids: the owner's, as they are
            lock = (self.root / LOCK).open("a")
        except OSError:
            yield False
            return
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield True

    def _refresh(self, files: list[Path], writable: bool) -> None:
        stats = {path: _stat(path) for path in files}
        if writable:
            with suppress(OSError):
                self._follow_renames(_load_metas(self.root), stats)
        metas = _load_metas(self.root)
        for path, stat in stats.items():
            meta = metas.get(path.name)
            self._metas.pop(path, None)
            if stat is None:
                continue
            if meta is not None and meta.same_stat(stat):
                self._metas[path] = meta
            elif writable:
                self._update(path, stat, meta)
        if writable:
            with suppress(OSError):
                self._drop_stale()

    def _follow_renames(
        self, metas: dict[str, Meta], stats: dict[Path, os.stat_result | None]
    ) -> None:
        """Move each index whose file has a new name (same inode) to that name: in two steps,
        as rotation renames files onto each other's names."""
        names = {stat.st_ino: path.name for path, stat in stats.items() if stat is not None}
        moves = {
            name: names[meta.inode]
            for name, meta in metas.items()
            if names.get(meta.inode, name) != name
        }
        for old, new in moves.items():
            _remove(self.root / (_MOVING + new))
            os.replace(self.root / old, self.root / (_MOVING + new))
        for new in moves.values():
            _remove(self.root / new)
            os.replace(self.root / (_MOVING + new), self.root / new)

    def _update(self, path: Path, stat: os.stat_result, meta: Meta | None) -> None:
        """Index `path` from where `meta` stopped (from its start if it no longer fits)."""
        folder = self.root / path.name
        try:
            if meta is None or not _extends(path, stat, meta, folder):
                _remove(folder)
                folder.mkdir()
                meta = Meta(stat.st_ino, 0, 0, 0, 0, (0,) * len(SHARDS))
            ids, indexed_to = self._scan(path, meta.indexed_to, stat.st_size)
            shards = _append(folder, meta.shards, ids)
            fresh = Meta(
                stat.st_ino,
                stat.st_size,
                stat.st_mtime_ns,
                indexed_to,
                _head(path, indexed_to),
                shards,
            )
            _write_meta(folder, fresh)
        except OSError:
            return  # rotated away meanwhile (found under its new name next time), or no room
        self._metas[path] = fresh

    def _drop_stale(self) -> None:
        """Remove every index of a file that is gone, and anything in an older format."""
        for entry in self.root.iterdir():
            if entry.name == LOCK:
                continue
            if entry.is_dir() and (self.traces_dir / entry.name).is_file():
                continue
            _remove(entry)

    def _scan(self, path: Path, start: int, end: int) -> tuple[dict[str, list[int]], int]:
        """The trace ids in the complete lines of `path` between `start` and `end`, with their
        offsets; and where the last complete line ends (a torn one is indexed next time)."""
        ids: dict[str, list[int]] = defaultdict(list)
        done, carry = start, b""
        with path.open("rb") as f:
            f.seek(start)
            while done + len(carry) < end:
                chunk = f.read(min(CHUNK_BYTES, end - done - len(carry)))
                if not chunk:
                    break
                data = carry + chunk
                cut = data.rfind(b"\n") + 1
                line = -1
                for found in _ID.finditer(data, 0, cut):
                    if (begins := data.rfind(b"\n", 0, found.start()) + 1) != line:
                        line = begins  # the line's first trace id: its span's (the first key)
                        ids[found.group(1).decode("ascii").lower()].append(done + begins)
                done, carry = done + cut, data[cut:]
        self.scanned_bytes += done - start
        return ids, done

    def _scan_for(self, path: Path, prefix: str) -> dict[str, list[int]]:
        """Without a usable index: scan the whole file for ids starting with `prefix`."""
        try:
            ids, _ = self._scan(path, 0, path.stat().st_size)
        except OSError:
            return {}
        return {tid: offsets for tid, offsets in ids.items() if tid.startswith(prefix)}

    def _hits(self, path: Path, prefix: str) -> dict[str, list[int]] | None:
        """The ids starting with `prefix` in `path`'s index, read from their one shard (None
        when it cannot be read)."""
        length = self._metas[path].shards[SHARDS.index(prefix[0])]
        try:
            with (self.root / path.name / prefix[0]).open("rb") as f:
                data = f.read(length)
        except OSError:
            return None
        self.loaded_bytes += len(data)
        wanted = re.compile(rb"^(" + prefix.encode() + rb"[0-9a-f]*) ([0-9,]+)$", re.MULTILINE)
        hits: dict[str, list[int]] = defaultdict(list)
        for found in wanted.finditer(data):
            hits[found.group(1).decode("ascii")] += [int(o) for o in found.group(2).split(b",")]
        return hits


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def _extends(path: Path, stat: os.stat_result, meta: Meta, folder: Path) -> bool:
    """Whether `path` is `meta`'s file grown (not replaced or cut) and its shards whole."""
    if meta.inode != stat.st_ino or meta.indexed_to > stat.st_size:
        return False
    if _head(path, meta.indexed_to) != meta.head:
        return False
    return all(_size(folder / c) >= n for c, n in zip(SHARDS, meta.shards, strict=True))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return -1


def _head(path: Path, indexed_to: int) -> int:
    with path.open("rb") as f:
        return zlib.crc32(f.read(min(indexed_to, HEAD_BYTES)))


def _append(folder: Path, lengths: tuple[int, ...], ids: dict[str, list[int]]) -> tuple[int, ...]:
    """Append `ids` to the shards (each cut to its length first); their new lengths."""
    lines: dict[str, list[str]] = {c: [] for c in SHARDS}
    for tid, offsets in ids.items():
        lines[tid[0]].append(f"{tid} {','.join(map(str, offsets))}\n")
    grown = []
    for c, length in zip(SHARDS, lengths, strict=True):
        with (folder / c).open("ab") as f:
            f.truncate(length)
            f.write("".join(lines[c]).encode("ascii"))
            grown.append(f.tell())
    return tuple(grown)


def _write_meta(folder: Path, meta: Meta) -> None:
    tmp = folder / (META + ".tmp")
    tmp.write_text(json.dumps(asdict(meta)))
    os.replace(tmp, folder / META)


def _load_metas(root: Path) -> dict[str, Meta]:
    """Every index's meta, by its span file's name; an unreadable one is left out."""
    metas = {}
    try:
        entries = [e for e in root.iterdir() if e.is_dir()]
    except OSError:
        return {}
    for entry in entries:
        meta = _load_meta(entry / META)
        if meta is not None:
            metas[entry.name] = meta
    return metas


def _load_meta(path: Path) -> Meta | None:
    try:
        raw: Any = json.loads(path.read_text())
        meta = Meta(**{**raw, "shards": tuple(raw["shards"])})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    numbers = [meta.inode, meta.size, meta.mtime_ns, meta.indexed_to, meta.head, *meta.shards]
    valid = len(meta.shards) == len(SHARDS) and all(type(v) is int for v in numbers)
    return meta if valid else None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _read_at(path: Path, offsets: list[int]) -> list[Span]:
    lines = []
    try:
        with path.open("rb") as f:
            for offset in offsets:
                f.seek(offset)
                lines.append(f.readline())
    except FileNotFoundError:
        return []  # rotated away since it was indexed
    return parse_spans(lines)
