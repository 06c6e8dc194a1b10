"""The toxic types as data (what clients check a toxic against) say what the classes do."""

from __future__ import annotations

from grpc_resilience_mesh.embedded_toxiproxy.toxic_types import TOXIC_ATTRIBUTES
from grpc_resilience_mesh.embedded_toxiproxy.toxics import TOXIC_TYPES


def test_the_table_names_every_toxic_and_its_attributes_in_order() -> None:
    assert list(TOXIC_ATTRIBUTES) == list(TOXIC_TYPES)
    for name, cls in TOXIC_TYPES.items():
        assert cls.type_name == name
        assert TOXIC_ATTRIBUTES[name] == cls.attribute_names, name
