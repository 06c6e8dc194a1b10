"""An experiment's app_fault can cut a stream: `after_messages` and `first_attempt_only` are
checked when the file loads and reach the service's FaultAdmin."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import AppFault, ExperimentError
from grpc_resilience_mesh.chaos.run.faults import Injector
from grpc_resilience_mesh.services.faults.admin import FaultAdminServicer
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.v1 import admin_pb2_grpc
from tests.integration.resilience.servers import serving

EXPERIMENT = """
title: t
hypothesis: h
faults:
  - {{type: app_fault, service: recommendation, method: StreamRecommend, {fields}}}
load: {{rpc: [home], requests: 10, concurrency: 2}}
variants: [{{name: full}}]
expectations: [{{variant: full, metric: ok, min: 10}}]
"""


def app_fault(tmp_path: Path, fields: str) -> AppFault:
    path = tmp_path / "exp.yaml"
    path.write_text(EXPERIMENT.format(fields=fields))
    [fault] = load_experiment(str(path))[1].faults
    assert isinstance(fault, AppFault)
    return fault


@pytest.mark.parametrize(
    "fields", ["after_messages: -1", "after_messages: 2000000", "first_attempt_only: maybe"]
)
def test_bad_stream_fields_are_refused_at_load(tmp_path: Path, fields: str) -> None:
    with pytest.raises(ExperimentError, match=fields.split(":")[0]):
        app_fault(tmp_path, fields)


async def test_the_stream_fields_reach_the_services_fault_table(tmp_path: Path) -> None:
    fault = app_fault(tmp_path, "after_messages: 3, first_attempt_only: true")
    table = FaultTable()
    register = partial(admin_pb2_grpc.add_FaultAdminServicer_to_server, FaultAdminServicer(table))
    async with serving(register) as admin:
        injector = Injector(None, {"recommendation": admin})
        await injector.set(0, fault, True)
        [spec] = table.list()
        assert spec.method == "/mesh.v1.RecommendationService/StreamRecommend"
        assert (spec.after_messages, spec.first_attempt_only) == (3, True)
        await injector.set(0, fault, False)
    assert table.list() == []
