"""`mesh fault add` checks the edge, toxic type and attributes by the experiment schema's rules
before it contacts anything: a typo exits 2 with the close name, never a toxic that does
nothing (`-a latnecy=300` used to add a 0 ms latency and report it added)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.client.state import MeshState


def add(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["fault", "add", *args, "--state-dir", str(tmp_path)])
    return result.exit_code, " ".join(result.output.split())


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["gateway_to_profile", "-t", "latency", "-a", "latnecy=300"], "did you mean 'latency'?"),
        (["gateway_to_profile", "-t", "latncy", "-a", "latency=300"], "did you mean 'latency'?"),
        (["gateway_to_profil", "-t", "latency"], "did you mean 'gateway_to_profile'?"),
        (["gateway_to_profile-9", "-t", "latency"], "unknown edge 'gateway_to_profile-9'"),
        (["gateway_to_profile", "-t", "timeout", "-a", "latency=5"], "a timeout toxic has timeout"),
        (["gateway_to_profile", "-t", "latency", "-a", "latency=-1"], "must be >= 0"),
        (["gateway_to_profile", "-t", "latency", "-a", "latency"], "expected KEY=INTEGER"),
    ],
)
def test_a_bad_toxic_exits_2_naming_the_close_name(
    tmp_path: Path, args: list[str], words: str
) -> None:
    code, output = add(tmp_path, *args)
    assert code == 2, output
    assert words in output, output
    assert "no running mesh" not in output, "checked before looking for the mesh"
    assert "Added" not in output


def test_every_wrong_name_is_named_at_once(tmp_path: Path) -> None:
    code, output = add(tmp_path, "gateway_to_profil", "-t", "latency", "-a", "latnecy=300")
    assert code == 2
    assert "'gateway_to_profile'?" in output and "-a latnecy: a latency toxic has" in output


def test_a_good_toxic_goes_on_to_the_mesh(tmp_path: Path) -> None:
    code, output = add(tmp_path, "gateway_to_profile-2", "-t", "latency", "-a", "latency=300")
    assert code == 2
    assert f"no running mesh: {tmp_path}" in output  # it got past the checks


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["gatway_to_recommendation", "--abort-code", "UNAVAILABLE"], "did you mean 'gateway_to"),
        (["payment_to_redis", "--abort-code", "UNAVAILABLE"], "is not dialled through xDS"),
        (["gateway_to_recommendation", "--abort-code", "OK"], "code 'OK' is no fault"),
        (["gateway_to_recommendation", "--abort-code", "UNAVAILBLE"], "did you mean 'UNAVAIL"),
        (
            ["gateway_to_recommendation", "--abort-code", "INTERNAL", "--percent", "130"],
            "--percent: 130 is not in [0, 100]",
        ),
        (["gateway_to_recommendation", "--delay-ms", "5", "--percent", "-1"], "-1 is not in"),
        (["gateway_to_recommendation", "--delay-ms", "0"], "--delay-ms: 0 is not in (0, 60000]"),
        (
            ["gateway_to_recommendation", "--method", "Recomend", "--delay-ms", "5"],
            "did you mean 'Recommend'?",
        ),
        (["gateway_to_recommendation"], "give --delay-ms MS, --abort-code CODE, or both"),
    ],
)
def test_a_bad_xds_fault_exits_2_naming_the_close_name(
    tmp_path: Path, args: list[str], words: str
) -> None:
    code, output = add(tmp_path, "--xds", *args)
    assert code == 2, output
    assert words in output, output
    assert "no running mesh" not in output, "checked before looking for the mesh"


def test_an_xds_fault_on_a_mesh_without_xds_exits_2_saying_so(tmp_path: Path) -> None:
    MeshState("127.0.0.1:1", None, {}, {}, {}, "full", str(tmp_path)).save(tmp_path)
    code, output = add(
        tmp_path, "--xds", "gateway_to_recommendation", "--abort-code", "UNAVAILABLE"
    )
    assert code == 2
    assert "runs without xDS" in output and "mesh up --xds" in output and "make peers" in output
