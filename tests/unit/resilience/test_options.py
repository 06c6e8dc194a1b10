"""The library's options: plain frozen dataclasses whose bad values fail where they are written,
naming the field (and, from plain data, the full dotted path), and which read back what
`to_dict` wrote. No validation library behind them."""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any

import pytest

import grpc_aio_resilience as resilience
from grpc_aio_resilience import (
    BreakerPolicy,
    DeadlinePolicy,
    EdgePolicy,
    HedgingOptionError,
    HedgingOptions,
    LimitPolicy,
    NativeRetryPolicy,
    OptionError,
    RetryPolicy,
    ServerPolicy,
    XdsFaultPolicy,
    XdsPolicy,
    from_dict,
    option_rows,
    to_dict,
)

OPTION_CLASSES = sorted(
    (
        getattr(resilience, name)
        for name in resilience.__all__
        if isinstance(getattr(resilience, name), type)
        and dataclasses.is_dataclass(getattr(resilience, name))
        and (name.endswith("Policy") or name.endswith("Options"))
    ),
    key=lambda cls: cls.__name__,
)


def refusal(cls: type, **values: Any) -> OptionError:
    with pytest.raises(OptionError) as caught:
        cls(**values)
    return caught.value


@pytest.mark.parametrize(
    ("cls", "values", "path", "rule"),
    [
        (RetryPolicy, {"max_attempts": 0}, "max_attempts", "0 is not in [1, 10]"),
        (RetryPolicy, {"max_attempts": 11}, "max_attempts", "11 is not in [1, 10]"),
        (RetryPolicy, {"base_backoff_s": 0}, "base_backoff_s", "0 is not in (0, 60]"),
        (DeadlinePolicy, {"total_s": 301}, "total_s", "301 is not in [0.001, 300]"),
        (ServerPolicy, {"max_in_flight": -1}, "max_in_flight", "-1 is not in [0, 100000]"),
        (ServerPolicy, {"expected_service_s": 0}, "expected_service_s", "is not in (0, 60]"),
    ],
)
def test_a_number_outside_its_range_is_refused_naming_the_field_and_range(
    cls: type, values: dict[str, Any], path: str, rule: str
) -> None:
    err = refusal(cls, **values)
    assert (err.path, str(err)) == (path, f"{path}: {err.rule}")
    assert rule in err.rule


@pytest.mark.parametrize(
    ("values", "rule"),
    [
        ({"max_attempts": 2.5}, "2.5 is not an integer"),
        ({"max_attempts": "3"}, "'3' is not an integer"),
        ({"max_attempts": True}, "True is not an integer"),
        ({"base_backoff_s": "fast"}, "'fast' is not a number"),
        ({"base_backoff_s": math.nan}, "nan is not a finite number"),
        ({"base_backoff_s": math.inf}, "inf is not a finite number"),
    ],
)
def test_values_of_the_wrong_kind_and_nan_are_refused(values: dict[str, Any], rule: str) -> None:
    assert refusal(RetryPolicy, **values).rule == rule


def test_an_int_for_a_float_is_taken_as_a_float_and_none_only_where_allowed() -> None:
    assert RetryPolicy(max_backoff_s=2).max_backoff_s == 2.0
    assert isinstance(RetryPolicy(max_backoff_s=2).max_backoff_s, float)
    assert BreakerPolicy(failure_rate=None).failure_rate is None
    assert refusal(BreakerPolicy, window_size=None).rule == "None is not an integer"
    assert refusal(BreakerPolicy, enabled="yes").rule == "'yes' is not true or false"


def test_a_literal_takes_only_its_choices() -> None:
    assert BreakerPolicy(scope="dependency").scope == "dependency"
    err = refusal(BreakerPolicy, scope="edge")
    assert (err.path, err.rule) == ("scope", "'edge' is not one of method, dependency")
    assert refusal(EdgePolicy, order="random").path == "order"
    assert refusal(LimitPolicy, algorithm="bbr").path == "algorithm"


def test_sequences_become_tuples_and_code_names_are_checked_and_upper_cased() -> None:
    native = NativeRetryPolicy(retryable_codes=["unavailable", "Internal"])  # type: ignore[arg-type]
    assert native.retryable_codes == ("UNAVAILABLE", "INTERNAL")
    assert refusal(NativeRetryPolicy, retryable_codes="UNAVAILABLE").rule == (
        "'UNAVAILABLE' is not a list"
    )
    assert refusal(NativeRetryPolicy, retryable_codes=[]).rule.startswith("needs at least 1")
    err = refusal(NativeRetryPolicy, retryable_codes=["UNAVAILABLE", "OK"])
    assert (err.path, err.rule) == ("retryable_codes[1]", "'OK' is not a gRPC error code name")
    assert refusal(XdsPolicy, faults=[{}] * 17).rule.startswith("takes at most 16")


def test_cross_field_rules_name_both_fields() -> None:
    err = refusal(DeadlinePolicy, total_s=0.2, attempt_s=0.3)
    assert str(err).startswith("attempt_s: 0.3 must be <= total_s (0.2)")
    err = refusal(BreakerPolicy, min_calls=30, window_size=20)
    assert str(err).startswith("min_calls: 30 must be <= window_size (20)")
    with pytest.raises(OptionError, match=r"native_retry\.enabled needs retry\.max_attempts: 1"):
        EdgePolicy(native_retry=NativeRetryPolicy(enabled=True))


def test_hedging_errors_stay_hedging_option_errors_with_their_field() -> None:
    with pytest.raises(HedgingOptionError) as caught:
        HedgingOptions(non_fatal_codes=("UNAVAILABLE", "NOPE"))
    assert isinstance(caught.value, OptionError)
    assert (caught.value.field, caught.value.path) == ("non_fatal_codes", "non_fatal_codes[1]")


@pytest.mark.parametrize(
    ("data", "path", "rule"),
    [
        ({"retry": {"budget": {"max_tokens": 0}}}, "retry.budget.max_tokens", "is not in"),
        ({"retry": {"budget": {"tokens": 1}}}, "retry.budget.tokens", "is not an option of"),
        ({"retries": {}}, "retries", "is not an option of EdgePolicy; known: order, deadline"),
        ({"retry": 3}, "retry", "3 is not a RetryPolicy (or a mapping)"),
        ({"deadline": {"total_s": 0.1}}, "deadline.attempt_s", "must be <= total_s (0.1)"),
        ({"xds": {"faults": [{"method": "a b"}]}}, "xds.faults[0].method", "not a method name"),
        ({"xds": {"retry": {"retryable_codes": ["UNKNOWN"]}}}, "xds.retry.retryable_codes[0]", ""),
        ({"hedging": {"max_attempts": 9}}, "hedging.max_attempts", "9 is not in [2, 5]"),
    ],
)
def test_from_dict_names_the_full_path_of_a_bad_or_unknown_key(
    data: dict[str, Any], path: str, rule: str
) -> None:
    with pytest.raises(OptionError) as caught:
        from_dict(EdgePolicy, data)
    assert caught.value.path == path
    assert rule in caught.value.rule


def test_from_dict_keeps_the_defaults_of_keys_left_out_and_builds_nested_options() -> None:
    policy = from_dict(EdgePolicy, {"retry": {"max_attempts": 2}, "xds": {"retry": None}})
    assert policy.retry == RetryPolicy(max_attempts=2)
    assert policy.breaker == BreakerPolicy()
    with pytest.raises(OptionError, match="must be a mapping of EdgePolicy's options"):
        from_dict(EdgePolicy, [("retry", {})])  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", OPTION_CLASSES, ids=lambda cls: cls.__name__)
def test_every_options_class_reads_back_what_to_dict_wrote(cls: type) -> None:
    default = cls()
    plain = to_dict(default)
    assert from_dict(cls, plain) == default
    assert all(not isinstance(v, tuple) for v in plain.values()), "lists, as JSON has"
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(default, dataclasses.fields(cls)[0].name, None)


def test_a_changed_policy_round_trips_through_plain_data() -> None:
    policy = EdgePolicy(
        retry=RetryPolicy(max_attempts=2, max_backoff_s=1),
        hedging=HedgingOptions(enabled=True, methods=("/kv.KeyValue/Get",)),
        xds=XdsPolicy(timeout_s=2, faults=(XdsFaultPolicy(method="Get", abort_percent=5),)),
    )
    assert from_dict(EdgePolicy, to_dict(policy)) == policy
    assert to_dict(policy)["hedging"]["methods"] == ["/kv.KeyValue/Get"]


def test_every_options_class_is_found() -> None:
    names = {cls.__name__ for cls in OPTION_CLASSES}
    assert {"EdgePolicy", "ServerPolicy", "HedgingOptions", "XdsFaultPolicy"} <= names
    assert len(names) >= 18


def test_rows_flatten_nested_options_with_type_default_range_and_doc() -> None:
    rows = {row.name: row for row in option_rows(RetryPolicy)}
    assert list(rows) == [
        "max_attempts",
        "base_backoff_s",
        "max_backoff_s",
        "budget.enabled",
        "budget.max_tokens",
        "budget.token_ratio",
    ]
    attempts = rows["max_attempts"]
    assert (attempts.kind, attempts.default, attempts.range) == ("int", "3", "[1, 10]")
    assert attempts.doc == "attempts per call; 1 = no retries"
    assert (rows["budget.max_tokens"].range, rows["budget.max_tokens"].default) == (
        "(0, 1000]",
        "10",
    )
    server = {row.name: row for row in option_rows(ServerPolicy)}
    assert server["expected_service_s"].kind == "float \\| null"
    assert server["expected_service_s"].default == "null"


@pytest.mark.parametrize("cls", OPTION_CLASSES, ids=lambda cls: cls.__name__)
def test_every_number_has_a_range_and_every_option_a_doc(cls: type) -> None:
    for row in option_rows(cls):
        assert row.doc, (cls.__name__, row.name)
        if {"int", "float"} & set(row.kind.split(" \\| ")):
            assert row.range.startswith(("[", "(")), (cls.__name__, row.name, row.range)


def test_the_hints_of_every_options_class_resolve() -> None:
    for cls in OPTION_CLASSES:
        assert typing.get_type_hints(cls), cls.__name__
