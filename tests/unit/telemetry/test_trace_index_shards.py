"""The trace index is sharded by a trace id's first hex digit: a lookup reads one shard per span
file; a grown file is indexed from where it stopped, a rotated one takes its index along, a
replaced one is indexed afresh, and what is stale or in the old format is dropped."""

from __future__ import annotations

import json
import os
from pathlib import Path

from grpc_resilience_mesh.client.trace_index import INDEX_DIR, SHARDS, TraceIndex, index_traces
from grpc_resilience_mesh.client.traces import trace_files

PER_TRACE = 3


def _ids(file_no: int) -> list[str]:
    """Ten trace ids for each first hex digit, distinct per file."""
    return [f"{c}{file_no:03x}{k:028x}" for c in SHARDS for k in range(10)]


def _lines(trace_ids: list[str]) -> str:
    return "".join(
        json.dumps({"trace_id": tid, "span_id": f"{n + 1:016x}", "name": f"{tid}-{n}"}) + "\n"
        for tid in trace_ids
        for n in range(PER_TRACE)
    )


def _index_files(traces: Path) -> dict[str, list[str]]:
    root = traces / INDEX_DIR
    return {d.name: sorted(f.name for f in d.iterdir()) for d in root.iterdir() if d.is_dir()}


def _find(traces: Path, prefix: str) -> tuple[TraceIndex, list[str]]:
    index = TraceIndex(traces)
    found = index.find(trace_files(traces), prefix)
    return index, [] if found is None else [span["name"] for span in found[1]]


def test_a_lookup_reads_one_shard_of_each_file(tmp_path: Path) -> None:
    for n, name in enumerate(("gateway.jsonl.1", "gateway.jsonl", "profile.jsonl")):
        (tmp_path / name).write_text(_lines(_ids(n)))
    index_traces(tmp_path)
    assert _index_files(tmp_path) == {
        name: sorted([*SHARDS, "meta.json"])
        for name in ("gateway.jsonl.1", "gateway.jsonl", "profile.jsonl")
    }
    wanted = _ids(1)[10 * SHARDS.index("b") + 4]
    index, names = _find(tmp_path, wanted)
    assert names == [f"{wanted}-{n}" for n in range(PER_TRACE)]
    assert index.scanned_bytes == 0, "built ahead: no span file is read but for the trace"
    shard_b = sum(
        (tmp_path / INDEX_DIR / f.name / "b").stat().st_size for f in trace_files(tmp_path)
    )
    every_shard = sum(p.stat().st_size for p in (tmp_path / INDEX_DIR).rglob("*") if p.is_file())
    assert index.loaded_bytes == shard_b
    assert index.loaded_bytes * 8 < every_shard


def test_a_one_digit_prefix_reads_that_digits_shard_only(tmp_path: Path) -> None:
    (tmp_path / "gateway.jsonl").write_text(_lines([_ids(0)[0], _ids(0)[-1]]))  # 0..., f...
    index, names = _find(tmp_path, "f")
    assert names == [f"{_ids(0)[-1]}-{n}" for n in range(PER_TRACE)]
    assert index.loaded_bytes == (tmp_path / INDEX_DIR / "gateway.jsonl" / "f").stat().st_size


def test_a_grown_file_is_indexed_from_where_it_stopped(tmp_path: Path) -> None:
    live = tmp_path / "gateway.jsonl"
    live.write_text(_lines(_ids(0)[:80]))
    index_traces(tmp_path)
    appended = _lines(_ids(0)[80:])
    with live.open("a") as f:
        f.write(appended)
    grown = TraceIndex(tmp_path)
    grown.refresh()
    assert grown.scanned_bytes == len(appended)
    meta = json.loads((tmp_path / INDEX_DIR / "gateway.jsonl" / "meta.json").read_text())
    assert meta["indexed_to"] == live.stat().st_size
    for wanted in (_ids(0)[3], _ids(0)[150]):
        index, names = _find(tmp_path, wanted)
        assert len(names) == PER_TRACE and index.scanned_bytes == 0


def test_rotation_moves_the_index_with_the_file_and_drops_the_stale(tmp_path: Path) -> None:
    older, live = tmp_path / "gateway.jsonl.1", tmp_path / "gateway.jsonl"
    older.write_text(_lines(_ids(0)))
    live.write_text(_lines(_ids(1)))
    index_traces(tmp_path)
    older.unlink()  # the exporter's rotation: .1 dropped, the live file becomes .1
    os.replace(live, older)
    live.write_text(_lines(_ids(2)[:5]))
    index = TraceIndex(tmp_path)
    index.refresh()
    assert index.scanned_bytes == live.stat().st_size, "only the new file is read"
    assert set(_index_files(tmp_path)) == {"gateway.jsonl", "gateway.jsonl.1"}
    assert _find(tmp_path, _ids(0)[7])[1] == []  # rotated away
    assert len(_find(tmp_path, _ids(1)[7])[1]) == PER_TRACE
    assert len(_find(tmp_path, _ids(2)[3])[1]) == PER_TRACE
    older.unlink()
    index_traces(tmp_path)
    assert set(_index_files(tmp_path)) == {"gateway.jsonl"}


def test_a_file_replaced_in_place_is_indexed_afresh(tmp_path: Path) -> None:
    live = tmp_path / "gateway.jsonl"
    live.write_text(_lines(_ids(0)[:20]))
    index_traces(tmp_path)
    live.write_text(_lines(_ids(1)))  # the same inode, other (and more) lines
    index, names = _find(tmp_path, _ids(1)[100])
    assert len(names) == PER_TRACE
    assert index.scanned_bytes == live.stat().st_size
    assert _find(tmp_path, _ids(0)[5])[1] == []


def test_the_old_one_file_index_is_removed_not_read(tmp_path: Path) -> None:
    live = tmp_path / "gateway.jsonl"
    live.write_text(_lines(_ids(0)[:4]))
    stat = live.stat()
    old = tmp_path / INDEX_DIR / "gateway.jsonl.json"
    old.parent.mkdir()
    old.write_text(  # the format before shards, current for this file, with a bogus trace
        json.dumps(
            {
                "inode": stat.st_ino,
                "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns,
                "indexed_to": stat.st_size,
                "ids": {"f" * 32: [0]},
            }
        )
    )
    assert _find(tmp_path, "f" * 32)[1] == []
    assert len(_find(tmp_path, _ids(0)[2])[1]) == PER_TRACE
    assert not old.exists()


def test_an_update_cut_short_is_cut_off(tmp_path: Path) -> None:
    live = tmp_path / "gateway.jsonl"
    live.write_text(_lines(_ids(0)[:3]))
    index_traces(tmp_path)
    shard = tmp_path / INDEX_DIR / "gateway.jsonl" / "0"
    bogus = "0" + "e" * 31
    with shard.open("a") as f:  # appended, and then the update died before its meta.json
        f.write(f"{bogus} 0\n")
    assert _find(tmp_path, bogus)[1] == []
    with live.open("a") as f:
        f.write(_lines([_ids(0)[4]]))
    index_traces(tmp_path)
    assert bogus not in shard.read_text()


def test_where_no_index_can_be_written_the_files_are_scanned(tmp_path: Path) -> None:
    live = tmp_path / "gateway.jsonl"
    live.write_text(_lines(_ids(0)))
    (tmp_path / INDEX_DIR).write_text("not a folder")
    index_traces(tmp_path)  # quietly nothing
    index, names = _find(tmp_path, _ids(0)[42])
    assert len(names) == PER_TRACE
    assert index.scanned_bytes == live.stat().st_size and index.loaded_bytes == 0


def test_a_meta_that_is_not_one_is_rebuilt(tmp_path: Path) -> None:
    (tmp_path / "gateway.jsonl").write_text(_lines(_ids(0)[:4]))
    index_traces(tmp_path)
    meta = tmp_path / INDEX_DIR / "gateway.jsonl" / "meta.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "indexed_to": "12"}))
    assert len(_find(tmp_path, _ids(0)[1])[1]) == PER_TRACE
    assert json.loads(meta.read_text())["indexed_to"] == (tmp_path / "gateway.jsonl").stat().st_size
