"""Field-level validation of requests, and the seeded catalogue it checks against."""

import pytest

from mesh.catalogue import CATEGORIES, catalogue, user_id
from mesh.runtime.validation import (
    FieldError,
    check_amount,
    check_currency,
    check_idempotency_key,
    check_limit,
    check_user_id,
)


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


def test_good_values_pass() -> None:
    assert check_user_id("u-0001") == "u-0001"
    assert check_amount(1250) == 1250
    assert check_currency("UZS") == "UZS"
    assert check_limit(0) == 10
    assert check_idempotency_key("order:2026-11-30_a") == "order:2026-11-30_a"


def test_catalogue_is_deterministic_and_complete() -> None:
    c = catalogue()
    assert len(c.users) == 200
    assert user_id(1) in c.users and user_id(200) in c.users
    first = c.users[user_id(1)]
    assert first.display_name == "Jasur Hasanova"  # pinned: the seed must not drift
    assert set(first.interests) <= set(CATEGORIES)
    pops = [p.popularity for p in c.products]
    assert pops == sorted(pops, reverse=True)
    assert {p.category for p in c.products} == set(CATEGORIES)
