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
        # issue 26: every variable goes through one settings path, so none is silently ignored
        "MESH_TLS='maybe' is not a flag (1, true, yes, on or 0, false, no, off)": {
            "MESH_TLS": "maybe"
        },
        "MESH_LOG_LEVEL='loud' is not one of debug, info": {"MESH_LOG_LEVEL": "loud"},
        "MESH_TRACING='maybe' is not a flag": {"MESH_TRACING": "maybe"},
        "OTEL_TRACES_EXPORTER='zipkin' is not one of otlp, none": {
            "MESH_TRACING": "1",
            "OTEL_TRACES_EXPORTER": "zipkin",
        },
        "MESH_FAULT_SEED='x' is not an integer": {"MESH_FAULT_SEED": "x"},
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith("MESH_")}
    base.update(LISTEN_ADDR="127.0.0.1:0", ADMIN_ADDR="127.0.0.1:0", METRICS_ADDR="127.0.0.1:0")
    base.update(MESH_TRACING="0")
    procs = {
        named: subprocess.Popen(
            [sys.executable, "-m", "grpc_resilience_mesh.services.profile"],
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


def test_the_gateway_and_payment_refuse_their_own_bad_variables(tmp_path: Path) -> None:
    """Variables only one service reads (API keys, receipts) fail its start the same way."""
    cases = {
        ("gateway", "MESH_AUTH='maybe' is not one of on, off"): {"MESH_AUTH": "maybe"},
        ("payment", "RECEIPT_ATTEMPTS='0' is not an integer >= 1"): {"RECEIPT_ATTEMPTS": "0"},
        ("payment", "RECEIPT_BACKOFF_JITTER='2' is not a number within 0..1"): {
            "RECEIPT_BACKOFF_JITTER": "2"
        },
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MESH_", "RECEIPT_"))}
    base.update(LISTEN_ADDR="127.0.0.1:0", ADMIN_ADDR="127.0.0.1:0", METRICS_ADDR="127.0.0.1:0")
    base.update(MESH_TRACING="0", PAYMENT_DB_PATH=str(tmp_path / "ledger.sqlite3"))
    procs = {
        (service, named): subprocess.Popen(
            [sys.executable, "-m", f"grpc_resilience_mesh.services.{service}"],
            env={**base, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for (service, named), env in cases.items()
    }
    try:
        errors = {key: proc.communicate(timeout=60)[1] for key, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()
    for (service, named), err in errors.items():
        assert procs[(service, named)].returncode == 2, (named, err)
        assert "Traceback" not in err, err
        [line] = err.strip().splitlines()
        assert line.startswith(f"{service}: configuration error: {named}"), line
