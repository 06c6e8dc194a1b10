"""The declared worker pool is the mesh's, beside the library's ServerPolicy: it still loads
from a policy file under `servers.<name>.pool`, and it is admission's first expected service
time unless the policy sets the library's own `expected_service_s`."""

from __future__ import annotations

import dataclasses

from grpc_aio_resilience import EventBus, OptionError, ServerPolicy, SystemClock, from_dict
from grpc_aio_resilience.admission import Admission
from grpc_resilience_mesh.services.policy.loading import PolicyError, load_policy
from grpc_resilience_mesh.services.policy.pool import MeshServerPolicy, PoolPolicy

POOL = {"MESH_POLICY__RECOMMENDATION__POOL": "{workers: 4, service_time_s: 0.02}"}


def expected_s(policy: ServerPolicy) -> float | None:
    return Admission("recommendation", policy, SystemClock(), EventBus()).expected_s


def test_a_declared_pool_is_admissions_first_expected_time_unless_the_policy_sets_one() -> None:
    assert expected_s(load_policy("full", POOL).server("recommendation")) == 0.02
    own = {**POOL, "MESH_POLICY__RECOMMENDATION__EXPECTED_SERVICE_S": "0.5"}
    assert expected_s(load_policy("full", own).server("recommendation")) == 0.5
    assert expected_s(load_policy("full", {}).server("recommendation")) is None


def test_a_changed_pool_changes_the_expected_time_it_gives() -> None:
    server = load_policy("full", POOL).server("recommendation")
    slower = dataclasses.replace(server, pool=PoolPolicy(workers=4, service_time_s=0.2))
    assert expected_s(slower) == 0.2
    assert expected_s(dataclasses.replace(server, pool=PoolPolicy())) is None


def test_the_pool_is_not_the_librarys_and_a_bad_one_names_its_key() -> None:
    assert "pool" not in {f.name for f in dataclasses.fields(ServerPolicy)}
    assert isinstance(load_policy("full", {}).server("recommendation"), MeshServerPolicy)
    bad = {"MESH_POLICY__RECOMMENDATION__POOL": "{workers: 4, distribution: normal}"}
    try:
        load_policy("full", bad)
    except PolicyError as err:
        assert "servers.recommendation.pool.distribution: " in str(err)
    else:
        raise AssertionError("an unknown distribution must be refused")
    try:
        from_dict(MeshServerPolicy, {"pool": {"workers": -1}})
    except OptionError as err:
        assert (err.path, err.rule) == ("pool.workers", "-1 is not in [0, 10000]")
    else:
        raise AssertionError("a negative pool must be refused")
