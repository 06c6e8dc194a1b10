"""A service started as a process with bad configuration: one line on stderr naming the
variable, exit 2, never a traceback."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]" for p, n in itertools.pairwise("abcdefghi")]
)


def test_a_service_with_bad_configuration_says_so_in_one_line(tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"name: caf\xe9\n")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    cases = {
        "MESH_POLICY__PROFILE__MAX_IN_FLIGHT": {"MESH_POLICY__PROFILE__MAX_IN_FLIGHT": "[oops"},
        "MESH_POLICY__EDGE_DEFAULTS__BREAKER__OPEN_S": {
            "MESH_POLICY__EDGE_DEFAULTS__BREAKER__OPEN_S": ".inf"
        },
        "MESH_POLICY: " + str(latin1): {"MESH_POLICY": str(latin1)},
        "MESH_POLICY: " + str(bomb): {"MESH_POLICY": str(bomb)},
        "MESH_FAULTS": {"MESH_FAULTS": '[{"method": "*", "error_rate": NaN}]'},
        "MESH_FAULTS: error_rate": {"MESH_FAULTS": '[{"method": "*", "error_rate": "nan"}]'},
        "SHUTDOWN_GRACE_S": {"SHUTDOWN_GRACE_S": "nan"},
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith("MESH_")}
    base.update(LISTEN_ADDR="127.0.0.1:0", ADMIN_ADDR="127.0.0.1:0", METRICS_ADDR="127.0.0.1:0")
    base.update(MESH_TRACING="0")
    procs = {
        named: subprocess.Popen(
            [sys.executable, "-m", "mesh.profile"],
            env={**base, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for named, env in cases.items()
    }
    try:
        errors = {named: proc.communicate(timeout=60)[1] for named, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()
    for named, err in errors.items():
        assert procs[named].returncode == 2, (named, err)
        assert "Traceback" not in err, err
        [line] = err.strip().splitlines()
        assert line.startswith(f"profile: configuration error: {named}"), line
