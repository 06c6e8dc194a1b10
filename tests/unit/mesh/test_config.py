"""Configuration from the environment fails at start-up naming the variable."""

import math
import random
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from grpc_resilience_mesh.services.contracts.receipt_job import QUEUE
from grpc_resilience_mesh.services.faults.injection import (
    FaultSpec,
    FaultTable,
    FaultValidationError,
)
from grpc_resilience_mesh.services.gateway.ratelimit import RateLimitPolicy
from grpc_resilience_mesh.services.notification.config import NotificationConfig
from grpc_resilience_mesh.services.runtime.config import ConfigError, ServiceConfig
from grpc_resilience_mesh.services.telemetry.tracing import setup_tracing


def test_defaults_come_from_the_topology() -> None:
    cfg = ServiceConfig.from_env("recommendation", {})
    assert cfg.listen_addr == "127.0.0.1:50053"
    assert cfg.dependencies == {"profile": "127.0.0.1:50052"}
    assert cfg.admin_addr.startswith("127.0.0.1:")


def test_gateway_has_three_dependencies() -> None:
    cfg = ServiceConfig.from_env("gateway", {"PAYMENT_ADDR": "toxiproxy:26054"})
    assert set(cfg.dependencies) == {"payment", "profile", "recommendation"}
    assert cfg.dependencies["payment"] == "toxiproxy:26054"


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"LISTEN_ADDR": "nonsense"}, "LISTEN_ADDR"),
        ({"PROFILE_ADDR": "host:notaport"}, "PROFILE_ADDR"),
        ({"SHUTDOWN_GRACE_S": "-1"}, "SHUTDOWN_GRACE_S"),
        ({"MAX_MESSAGE_BYTES": "lots"}, "MAX_MESSAGE_BYTES"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigError, match=var):
        ServiceConfig.from_env("recommendation", env)


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"SHUTDOWN_GRACE_S": "nan"}, "SHUTDOWN_GRACE_S"),
        ({"SHUTDOWN_GRACE_S": "inf"}, "SHUTDOWN_GRACE_S"),
        ({"SHUTDOWN_GRACE_S": "1e9"}, "SHUTDOWN_GRACE_S"),
        ({"MAX_MESSAGE_BYTES": "0"}, "MAX_MESSAGE_BYTES"),
        ({"MAX_MESSAGE_BYTES": "9" * 40}, "MAX_MESSAGE_BYTES"),
    ],
)
def test_numbers_must_be_finite_and_in_range(env: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{var}=.* within "):
        ServiceConfig.from_env("recommendation", env)


def test_a_long_value_is_quoted_short() -> None:
    with pytest.raises(ConfigError) as caught:
        ServiceConfig.from_env("recommendation", {"LISTEN_ADDR": "x" * 5000})
    assert len(str(caught.value)) < 120


# One rule per kind of value (grpc_resilience_mesh.services.settings): every parser names the
# variable the same way.


@pytest.mark.parametrize(
    ("read", "env", "words"),
    [
        (RateLimitPolicy.from_env, {"MESH_RATE_LIMIT_RPS": "nan"}, "is not a number >= 0"),
        (RateLimitPolicy.from_env, {"MESH_RATE_LIMIT_BURST": "-1"}, "is not a number >= 0"),
        (FaultTable.from_env, {"MESH_FAULT_SEED": "1" * 5000}, "is not an integer"),
        (FaultTable.from_env, {"MESH_FAULT_SEED": "٣"}, "is not an integer"),
        (lambda env: setup_tracing("profile", env), {"MESH_TRACING": "nope"}, "is not a flag"),
    ],
)
def test_each_parser_quotes_the_variable_short_and_says_the_rule(
    read: Callable[[dict[str, str]], object], env: dict[str, str], words: str
) -> None:
    [var] = env
    with pytest.raises(ConfigError) as caught:
        read(env)
    message = str(caught.value)
    assert message.startswith(f"{var}=") and words in message, message
    assert len(message) < 120


def test_blank_means_unset_for_every_variable() -> None:
    blank = {
        v: " " for v in ("LISTEN_ADDR", "SHUTDOWN_GRACE_S", "MAX_MESSAGE_BYTES", "PROFILE_ADDR")
    }
    cfg = ServiceConfig.from_env("recommendation", blank)
    assert (cfg.listen_addr, cfg.grace_s, cfg.max_message_bytes) == ("127.0.0.1:50053", 5.0, 2**20)
    assert cfg.dependencies == {"profile": "127.0.0.1:50052"}


def test_good_values_are_read() -> None:
    cfg = ServiceConfig.from_env(
        "recommendation", {"SHUTDOWN_GRACE_S": " 0.5 ", "MAX_MESSAGE_BYTES": "4096"}
    )
    assert (cfg.grace_s, cfg.max_message_bytes) == (0.5, 4096)
    assert RateLimitPolicy.from_env({"MESH_RATE_LIMIT_RPS": "0"}).rate_per_s == 0.0
    assert FaultTable.from_env({"MESH_FAULT_SEED": "-3"}).rng.random() == random.Random(-3).random()
    assert setup_tracing("profile", {"MESH_TRACING": "Off"}) is None


@pytest.mark.parametrize(
    ("var", "value", "words"),
    [
        ("NOTIFY_SENT_TTL_S", "nan", "is not a number > 0"),
        ("NOTIFY_SMTP_TIMEOUT_S", "inf", "is not a number > 0"),
        ("NOTIFY_SMTP_TIMEOUT_S", "0", "is not a number > 0"),
        ("NOTIFY_LOCK_MS", "99", "is not an integer >= 100"),
        ("NOTIFY_CONCURRENCY", "1" * 5000, "is not an integer >= 1"),
        ("NOTIFY_DRILLS", "yes", "is not one of 0, 1"),
    ],
)
def test_the_worker_settings_follow_the_same_rules(var: str, value: str, words: str) -> None:
    service = ServiceConfig.from_env("notification", {})
    with pytest.raises(ConfigError) as caught:
        NotificationConfig.from_env(service, {var: value})
    message = str(caught.value)
    assert message.startswith(f"{var}=") and message.endswith(words), message
    assert len(message) < 120


def test_the_worker_defaults_and_the_half_lock() -> None:
    service = ServiceConfig.from_env("notification", {})
    cfg = NotificationConfig.from_env(service, {"NOTIFY_LOCK_MS": "1000", "NOTIFY_QUEUE": " "})
    assert (cfg.lock_ms, cfg.stalled_interval_ms, cfg.queue, cfg.drills) == (
        1000,
        500,
        QUEUE,
        False,
    )


# MESH_FAULTS: JSON with the limits safe_yaml puts on YAML; a ConfigError names the variable.


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ('[{"method": "*", "error_rate": NaN}]', "NaN is not a number"),
        ('[{"method": "*", "delay_s": Infinity}]', "Infinity is not a number"),
        ('[{"method": "*", "delay_s": 1e999}]', "a number out of range"),
        ('[{"method": "*", "pushback_ms": 1e999}]', "a number out of range"),
        ('[{"method": "*", "error_rate": "nan"}]', "error_rate: must be a number, got str"),
        ('[{"method": "*", "delay_s": 86400}]', "delay_s: must be within 0..600"),
        ('[{"method": "*", "pushback_ms": 10000000000}]', "pushback_ms: must be within -1.."),
        ('[{"method": "*", "pushback_ms": 1.5}]', "pushback_ms: must be an integer"),
        ('[{"method": "*", "error_rate": true}]', "error_rate: must be a number, got bool"),
        ('[{"method": {"a": [1, 2]}}]', "method: must be a string, got dict"),
        ('[{"method": "*", "colour": 1}]', "fault: unknown fields: colour"),
        ('[{"method": "*"}, 7]', "fault: must be an object, got int (fault 2 of 2)"),
        ('{"method": "*"}', "must be a JSON list of fault objects"),
        ("[" * 50_000, "nesting too deep"),
        ('[{"method": "*", "pushback_ms": ' + "9" * 5000 + "}]", "an integer of 5000 digits"),
        ("[" + " " * 70_000 + "]", "more than the 65536 bytes"),
        ('[{"method": "*"', "not valid JSON: line 1, column 16"),
    ],
)
def test_bad_faults_name_the_variable_and_the_field(value: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        FaultTable.from_env({"MESH_FAULTS": value})
    message = str(caught.value)
    assert message.startswith("MESH_FAULTS: ") and words in message, message
    assert len(message) < 200


def test_good_faults_and_seed_load() -> None:
    table = FaultTable.from_env(
        {
            "MESH_FAULTS": '[{"method": "*", "error_rate": 0.5, "code": "internal",'
            ' "delay_s": 30, "pushback_ms": 2000}]',
            "MESH_FAULT_SEED": "7",
        }
    )
    [spec] = table.list()
    assert (spec.error_rate, spec.code, spec.delay_s, spec.pushback_ms) == (
        0.5,
        grpc.StatusCode.INTERNAL,
        30.0,
        2000,
    )
    with pytest.raises(ConfigError, match=r"^MESH_FAULT_SEED='seven' is not an integer"):
        FaultTable.from_env({"MESH_FAULT_SEED": "seven"})


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"delay_s": math.inf}, "delay_s"),
        ({"delay_s": math.nan}, "delay_s"),
        ({"error_rate": math.nan}, "error_rate"),
        ({"pushback_ms": 2**62}, "pushback_ms"),
        ({"method": "/" + "m" * 1000}, "method"),
    ],
)
def test_fault_admin_shares_the_rules(fields: dict[str, object], field: str) -> None:
    raw: dict[str, Any] = {
        "method": "*",
        "error_rate": 0.0,
        "code": "UNAVAILABLE",
        "delay_s": 0.0,
        "pushback_ms": -1,
    }
    with pytest.raises(FaultValidationError) as caught:
        FaultSpec.parse(**{**raw, **fields})
    assert caught.value.field == field and len(str(caught.value)) < 120


# A service with bad configuration: exit 2, one line on stderr naming the variable, no traceback.
