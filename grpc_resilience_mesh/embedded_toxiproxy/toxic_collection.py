"""The toxics of one proxy, per stream, and the live links that must follow every change."""

from __future__ import annotations

from typing import Any, Protocol

from grpc_resilience_mesh.embedded_toxiproxy.decoding import (
    check_name_length,
    expect_object,
    get_float32,
    get_int,
    get_str,
)
from grpc_resilience_mesh.embedded_toxiproxy.errors import (
    INVALID_STREAM,
    INVALID_TOXIC_TYPE,
    TOXIC_ALREADY_EXISTS,
    TOXIC_NOT_FOUND,
)
from grpc_resilience_mesh.embedded_toxiproxy.toxics import TOXIC_TYPES, Direction, Toxic

_WRAPPER = "toxics.ToxicWrapper"
_WRAPPER_STRUCT = "ToxicWrapper"  # Go names a struct field's type without its package


class ToxicListener(Protocol):
    """A link: told to re-read the chain whenever toxics are added, updated or removed."""

    direction: Direction

    def sync_toxics(self, removed: tuple[Toxic, ...]) -> None: ...


def _parse_direction(stream: str) -> Direction:
    try:
        return Direction(stream.lower())
    except ValueError:
        raise INVALID_STREAM from None


def _apply_attributes(toxic: Toxic, raw: Any) -> dict[str, int]:
    """Validate every attribute before changing any, so a bad update leaves the toxic intact."""
    if raw is None:
        return dict(toxic.attributes)
    struct = f"{type(toxic).__name__}.attributes"
    # Go decodes attributes through an anonymous struct, hence the empty struct name.
    attributes = expect_object(raw, f"toxics.{type(toxic).__name__}", "struct field .attributes")
    merged = dict(toxic.attributes)
    for name in toxic.attribute_names:
        merged[name] = get_int(attributes, name, struct, merged[name], toxic.go_int_type)
    return merged


class ToxicCollection:
    """Ordered toxic chains for the upstream and downstream links of one proxy."""

    def __init__(self) -> None:
        self._chains: dict[Direction, tuple[Toxic, ...]] = {d: () for d in Direction}
        self._links: set[ToxicListener] = set()

    def chain(self, direction: Direction) -> tuple[Toxic, ...]:
        return self._chains[direction]

    def attach(self, link: ToxicListener) -> None:
        self._links.add(link)
        link.sync_toxics(())

    def detach(self, link: ToxicListener) -> None:
        self._links.discard(link)

    def _changed(self, direction: Direction, removed: tuple[Toxic, ...] = ()) -> None:
        for link in list(self._links):
            if link.direction is direction:
                link.sync_toxics(removed)

    def all(self) -> list[Toxic]:
        # Toxiproxy lists the upstream chain first, then the downstream one.
        return [t for d in (Direction.UPSTREAM, Direction.DOWNSTREAM) for t in self._chains[d]]

    def get(self, name: str) -> Toxic:
        for toxic in self.all():
            if toxic.name == name:
                return toxic
        raise TOXIC_NOT_FOUND

    def _exists(self, name: str) -> bool:
        return any(toxic.name == name for toxic in self.all())

    def add_json(self, body: Any) -> Toxic:
        """POST /proxies/{proxy}/toxics, checked in Toxiproxy's order."""
        obj = expect_object(body, _WRAPPER)
        name = get_str(obj, "name", _WRAPPER_STRUCT, "")
        type_name = get_str(obj, "type", _WRAPPER_STRUCT, "")
        stream = get_str(obj, "stream", _WRAPPER_STRUCT, "downstream")
        toxicity = get_float32(obj, "toxicity", _WRAPPER_STRUCT, 1.0)
        direction = _parse_direction(stream)
        if not name:
            name = f"{type_name}_{stream}"
        check_name_length(name, "toxic name")
        toxic_type = TOXIC_TYPES.get(type_name)
        if toxic_type is None:
            raise INVALID_TOXIC_TYPE
        if self._exists(name):
            raise TOXIC_ALREADY_EXISTS
        toxic = toxic_type(name, stream, direction, toxicity)
        toxic.attributes = _apply_attributes(toxic, obj.get("attributes"))
        self._chains[direction] = (*self._chains[direction], toxic)
        self._changed(direction)
        return toxic

    def update_json(self, name: str, body: Any) -> Toxic:
        """PATCH/POST /proxies/{proxy}/toxics/{toxic}: attributes merge, toxicity optional."""
        toxic = self.get(name)
        obj = expect_object(body, "struct { Attributes interface {}; Toxicity float32 }")
        toxicity = get_float32(obj, "toxicity", "", toxic.toxicity)
        attributes = _apply_attributes(toxic, obj.get("attributes"))
        toxic.attributes = attributes
        toxic.toxicity = toxicity
        toxic.version += 1
        self._changed(toxic.direction)
        return toxic

    def remove(self, name: str) -> None:
        toxic = self.get(name)
        chain = self._chains[toxic.direction]
        self._chains[toxic.direction] = tuple(t for t in chain if t is not toxic)
        self._changed(toxic.direction, (toxic,))

    def reset(self) -> None:
        for direction in Direction:
            removed = self._chains[direction]
            self._chains[direction] = ()
            if removed:
                self._changed(direction, removed)
