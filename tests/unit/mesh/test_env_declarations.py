"""Every variable is read through its declaration (a grpc_resilience_mesh.services.settings.Var)
from an injected environ: a bad value is a ConfigError naming the variable and what it must be."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.launch.log_rotation import LogLimits
from grpc_resilience_mesh.launch.real_toxiproxy import binary_path
from grpc_resilience_mesh.launch.wiring import control_token
from grpc_resilience_mesh.loadgen.in_process import generator_command
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.contracts.receipt_job import ReceiptRetention, ReceiptRetry
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.gateway.auth import ApiKeys
from grpc_resilience_mesh.services.payment.servicer import ledger_path
from grpc_resilience_mesh.services.runtime.logging import setup_logging
from grpc_resilience_mesh.services.runtime.tls import MeshTls, tls_enabled
from grpc_resilience_mesh.services.telemetry.tracing import setup_tracing
from grpc_resilience_mesh.services.telemetry.tracing.spans import SpanFactory

FLAG = "is not a flag (1, true, yes, on or 0, false, no, off)"


def _refused(message: str) -> pytest.RaisesExc[ConfigError]:
    return pytest.raises(ConfigError, match="^" + re.escape(message))


def test_a_var_takes_its_default_when_unset_or_blank_and_names_itself_when_bad() -> None:
    var = settings.Var("TEST_ONLY_COUNT", lambda raw: settings.integer(raw, 1), 3, "a count")
    assert var.module == __name__
    assert var in settings.declared()
    assert var.read({}) == 3
    assert var.read({"TEST_ONLY_COUNT": "  "}) == 3
    assert var.read({"TEST_ONLY_COUNT": "7"}) == 7
    with _refused("TEST_ONLY_COUNT='0' is not an integer >= 1"):
        var.read({"TEST_ONLY_COUNT": "0"})


def test_mesh_tls_maybe_is_refused_not_silently_off(tmp_path: Path) -> None:
    with _refused(f"MESH_TLS='maybe' {FLAG}"):
        MeshTls.from_env({"MESH_TLS": "maybe"})
    assert MeshTls.from_env({"MESH_TLS": "off"}) is None
    assert tls_enabled({"MESH_TLS": "Yes"})
    with pytest.raises(ConfigError, match=r"has no ca\.crt"):
        MeshTls.from_env({"MESH_TLS": "1", "MESH_TLS_DIR": str(tmp_path)})


def test_api_keys_and_mesh_auth(tmp_path: Path) -> None:
    with _refused("MESH_AUTH='maybe' is not one of on, off"):
        ApiKeys.from_env({"MESH_AUTH": "maybe"})
    assert not ApiKeys.from_env({"MESH_AUTH": "OFF"}).enabled
    keys = tmp_path / "keys"
    keys.write_text("# ours\nk2\n")
    assert ApiKeys.from_env({"MESH_API_KEYS": "k1, ", "MESH_API_KEYS_FILE": str(keys)}).keys == (
        b"k1",
        b"k2",
    )
    with pytest.raises(ConfigError, match="needs API keys"):
        ApiKeys.from_env({"MESH_API_KEYS": " , "})


def test_log_level_is_read_from_the_injected_environ() -> None:
    root = logging.getLogger()
    before_level, before_handlers = root.level, list(root.handlers)
    try:
        setup_logging("profile", {"MESH_LOG_LEVEL": "Debug"})
        assert root.level == logging.DEBUG
        with _refused("MESH_LOG_LEVEL='loud' is not one of debug, info, warning, error, critical"):
            setup_logging("profile", {"MESH_LOG_LEVEL": "loud"})
    finally:
        root.handlers[:] = before_handlers
        root.setLevel(before_level)


def test_receipt_retry_and_retention_name_the_variable() -> None:
    assert ReceiptRetry.from_env({}) == ReceiptRetry()
    assert ReceiptRetry.from_env({"RECEIPT_ATTEMPTS": "2"}).attempts == 2
    with _refused("RECEIPT_ATTEMPTS='0' is not an integer >= 1"):
        ReceiptRetry.from_env({"RECEIPT_ATTEMPTS": "0"})
    with _refused("RECEIPT_BACKOFF_S='-1' is not a number of seconds >= 0"):
        ReceiptRetry.from_env({"RECEIPT_BACKOFF_S": "-1"})
    with _refused("RECEIPT_BACKOFF_JITTER='1.5' is not a number within 0..1"):
        ReceiptRetry.from_env({"RECEIPT_BACKOFF_JITTER": "1.5"})
    with _refused("RECEIPT_KEEP_COMPLETED_S='x' is not an integer >= 1"):
        ReceiptRetention.from_env({"RECEIPT_KEEP_COMPLETED_S": "x"})


def test_payment_ledger_and_faults_read_the_injected_environ(tmp_path: Path) -> None:
    assert ledger_path({"PAYMENT_DB_PATH": str(tmp_path / "l.db")}) == tmp_path / "l.db"
    assert ledger_path({}) == Path("var/payment/ledger.sqlite3")
    with _refused("MESH_FAULT_SEED='one' is not an integer"):
        FaultTable.from_env({"MESH_FAULT_SEED": "one"})
    assert FaultTable.from_env({"MESH_FAULTS": ""}).list() == []


def test_tracing_variables_are_refused_when_bad() -> None:
    with _refused(f"MESH_TRACING='maybe' {FLAG}"):
        setup_tracing("profile", {"MESH_TRACING": "maybe"})
    with _refused(f"OTEL_SDK_DISABLED='perhaps' {FLAG}"):
        setup_tracing("profile", {"OTEL_SDK_DISABLED": "perhaps"})
    with _refused("OTEL_TRACES_EXPORTER='zipkin' is not one of otlp, none"):
        setup_tracing("profile", {"OTEL_TRACES_EXPORTER": "zipkin"})
    assert setup_tracing("profile", {"OTEL_SDK_DISABLED": "true"}) is None


def test_the_propagators_come_from_the_injected_environ() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("mesh")
    assert SpanFactory(tracer, environ={}).w3c_only
    assert not SpanFactory(tracer, environ={"OTEL_PROPAGATORS": "b3"}).w3c_only


def test_the_tooling_reads_through_the_same_declarations(tmp_path: Path) -> None:
    with _refused("MESH_LOG_MAX_BYTES='10' is not an integer >= 65536"):
        LogLimits.from_env({"MESH_LOG_MAX_BYTES": "10"})
    with _refused("MESH_ADMIN_AUTH='nope' is not one of on, off"):
        control_token({"MESH_ADMIN_AUTH": "nope"})
    assert control_token({"MESH_ADMIN_AUTH": "off"}) is None
    assert binary_path({"MESH_TOXIPROXY_BIN": "/x/toxiproxy"}) == Path("/x/toxiproxy")
    with _refused("MESH_LOADGEN='rust' is not one of python, go"):
        generator_command({"MESH_LOADGEN": "rust"})
    with pytest.raises(Exception, match=re.escape(str(tmp_path))):
        Target.parse("running", {"MESH_STATE_DIR": str(tmp_path)})


def test_a_mesh_command_refuses_a_bad_variable_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "MESH_GATEWAY": "nope", "MESH_STATE_DIR": str(tmp_path)}
    probe = "from grpc_resilience_mesh.cli.app import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", probe, "call", "home", "--user", "u-0001"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == "mesh: MESH_GATEWAY='nope' is not HOST:PORT (e.g. 127.0.0.1:50052)\n"
