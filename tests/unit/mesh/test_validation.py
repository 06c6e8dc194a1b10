"""Field-level validation of requests, and the seeded customers it checks against."""

import pytest
from pydantic import ValidationError

from grpc_resilience_mesh.chaos.experiment.model import Variant
from grpc_resilience_mesh.embedded_toxiproxy.addresses import split_host_port
from grpc_resilience_mesh.embedded_toxiproxy.errors import ApiError
from grpc_resilience_mesh.services.contracts.charge_ids import charge_id_for, check_charge_lookup
from grpc_resilience_mesh.services.contracts.fields import (
    FieldError,
    check_amount,
    check_currency,
    check_idempotency_key,
    check_limit,
    check_user_id,
)
from grpc_resilience_mesh.services.contracts.receipt_job import BadPayload, Receipt
from grpc_resilience_mesh.services.customers import CATEGORIES, customers, user_id
from grpc_resilience_mesh.services.runtime.config import ConfigError, ServiceConfig


@pytest.mark.parametrize(
    ("check", "value", "field", "words"),
    [
        (check_user_id, "", "user_id", "required"),
        (check_user_id, "alice", "user_id", "not a user id"),
        (check_amount, 0, "amount_cents", "positive"),
        (check_amount, -5, "amount_cents", "positive"),
        (check_amount, 10**12, "amount_cents", "exceeds"),
        (check_currency, "XXX", "currency", "not one of"),
        (check_currency, "", "currency", "(empty)"),
        (check_idempotency_key, "", "idempotency_key", "required"),
        (check_idempotency_key, "short", "idempotency_key", "8..128"),
        (check_idempotency_key, "bad key with spaces", "idempotency_key", "8..128"),
        (check_limit, 51, "limit", "outside"),
        (check_limit, -1, "limit", "outside"),
    ],
)
def test_bad_values_name_the_field(check, value, field, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FieldError) as info:
        check(value)
    assert info.value.field == field
    assert words in str(info.value)


NOT_EXACTLY = [
    "u-0001\n",  # `$` matches before a trailing newline
    "u-\u0661\u0662\u0663\u0664",  # Arabic-Indic digits are `\\d` too
    "u-\uff10\uff10\uff10\uff11",  # fullwidth digits
    "u-00012",
    " u-0001",
]


@pytest.mark.parametrize("value", NOT_EXACTLY)
def test_user_ids_match_whole_and_ascii_only(value: str) -> None:
    with pytest.raises(FieldError, match="not a user id"):
        check_user_id(value)


@pytest.mark.parametrize(
    "value", ["order-0001\n", "order-0001\r", "order-\u0661\u0662\u0663\u0664", "ordér-0001"]
)
def test_idempotency_keys_match_whole_and_ascii_only(value: str) -> None:
    with pytest.raises(FieldError, match=r"8\.\.128"):
        check_idempotency_key(value)


def test_charge_lookup_is_validated_like_every_other_request() -> None:
    key = "order-0001"
    assert check_charge_lookup(charge_id_for(key), "") == (charge_id_for(key), "")
    assert check_charge_lookup("", key) == ("", key)
    assert check_charge_lookup(charge_id_for(key), key) == (charge_id_for(key), key)
    bad = [
        ("", ""),
        (charge_id_for(key) + "\n", ""),
        (charge_id_for(key).upper(), ""),
        ("ch_" + "\u0661" * 24, ""),
        ("x" * 10_000, ""),
        ("", key + "\n"),
        ("", "short"),
        (charge_id_for("another-key"), key),
    ]
    for charge_id, idem in bad:
        with pytest.raises(FieldError) as info:
            check_charge_lookup(charge_id, idem)
        assert info.value.field in ("charge_id", "idempotency_key")


def test_receipt_jobs_match_whole_and_ascii_only() -> None:
    good = {
        "charge_id": charge_id_for("order-0001"),
        "user_id": "u-0001",
        "amount_cents": 100,
        "currency": "USD",
        "created_at": 1.0,
    }
    assert Receipt.from_data(good).user_id == "u-0001"
    for name, value in [
        ("user_id", "u-0001\n"),
        ("user_id", "u-\u0661\u0662\u0663\u0664"),
        ("currency", "USD\n"),
        ("charge_id", "ch_abc\n"),
    ]:
        with pytest.raises(BadPayload, match=name):
            Receipt.from_data({**good, name: value})


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("LISTEN_ADDR", "127.0.0.1:\u0665\u0660\u0660\u0665\u0661"),
        ("LISTEN_ADDR", "127.0.0.1:\u00b2"),  # isdigit() but int() raises
        ("MAX_MESSAGE_BYTES", "\u00b9\u00b2"),
        ("MAX_MESSAGE_BYTES", "\u0661\u0662"),
    ],
)
def test_config_numbers_are_ascii_digits(var: str, value: str) -> None:
    with pytest.raises(ConfigError, match=var):
        ServiceConfig.from_env("profile", {var: value})


def test_good_values_pass() -> None:
    assert check_user_id("u-0001") == "u-0001"
    assert check_amount(1250) == 1250
    assert check_currency("UZS") == "UZS"
    assert check_limit(0) == 10
    assert check_idempotency_key("order:2026-11-30_a") == "order:2026-11-30_a"


def test_customers_are_deterministic_and_complete() -> None:
    c = customers()
    assert len(c.users) == 200
    assert user_id(1) in c.users and user_id(200) in c.users
    first = c.users[user_id(1)]
    assert first.display_name == "Jasur Hasanova"  # pinned: the seed must not drift
    assert set(first.interests) <= set(CATEGORIES)
    pops = [p.popularity for p in c.products]
    assert pops == sorted(pops, reverse=True)
    assert {p.category for p in c.products} == set(CATEGORIES)


@pytest.mark.parametrize("port", ["\u0668\u0660", " 80", "8_0", "+80", "9" * 5000])
def test_toxiproxy_ports_are_ascii_digits(port: str) -> None:
    """The embedded Toxiproxy parses ports as Go does: ASCII digits only (int() takes more)."""
    with pytest.raises(ApiError):
        split_host_port(f"127.0.0.1:{port}")
    assert split_host_port("127.0.0.1:8080") == ("127.0.0.1", 8080)


@pytest.mark.parametrize("name", ["baseline\n", "base\u0661", "Baseline"])
def test_experiment_variant_names_match_whole_and_ascii_only(name: str) -> None:
    with pytest.raises(ValidationError):
        Variant(name=name)
    assert Variant(name="baseline-2").name == "baseline-2"
