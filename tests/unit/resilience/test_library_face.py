"""grpc_aio_resilience has a face: `__all__` names the pipeline, the strategies, errors, events,
the interceptor and the channel, each the object its module defines, loaded on first use."""

from __future__ import annotations

import importlib
import subprocess
import sys

import grpc_aio_resilience as resilience


def test_every_public_name_is_the_object_its_module_defines() -> None:
    assert len(resilience.__all__) == len(set(resilience.__all__)) > 20
    for name in resilience.__all__:
        where, _, attribute = resilience._WHERE[name].partition(":")  # module:attribute: renamed
        module = importlib.import_module(f"grpc_aio_resilience.{where}")
        assert getattr(resilience, name) is getattr(module, attribute or name), name
    for wanted in (
        "build_pipeline",
        "Retry",
        "BreakerStrategy",
        "Bulkhead",
        "ResilienceError",
        "EventBus",
        "ResilienceInterceptor",
        "resilient_channel",
        "EdgePolicy",
    ):
        assert wanted in resilience.__all__


def test_star_import_gives_the_face_and_an_unknown_name_is_an_attribute_error() -> None:
    namespace: dict[str, object] = {}
    exec("from grpc_aio_resilience import *", namespace)
    assert set(resilience.__all__) <= set(namespace)
    try:
        resilience.NoSuchThing  # noqa: B018
    except AttributeError as err:
        assert "NoSuchThing" in str(err)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_importing_one_small_module_does_not_load_the_library() -> None:
    code = (
        "import sys, grpc_aio_resilience.classify; "
        "print(sorted(m for m in sys.modules if m.startswith('grpc_aio_resilience.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "grpc_aio_resilience.pipeline" not in out.stdout
    assert "grpc_aio_resilience.channel" not in out.stdout
