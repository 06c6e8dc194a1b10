"""Options: frozen dataclasses whose fields carry their range and their documentation.

Every strategy's settings are a plain dataclass a user builds with keywords
(`RetryPolicy(max_attempts=2)`). A field declared with `option(...)` states its default, its
range and one line of why; `check(self)` in the class's `__post_init__` enforces the ranges and
the types, so a bad value fails where it is written, as an `OptionError` naming the field.
`from_dict` builds options from plain data (YAML, JSON, a config service), naming the full path
of a bad or unknown key (`retry.budget.max_tokens`); `to_dict` is its inverse. `option_rows`
gives the table the docs print for each class, so the docs cannot drift from the code.

No validation library: the library's only dependency is grpcio.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from typing import Any, Literal, TypeVar, Union

import grpc

T = TypeVar("T")

QUOTE_CHARS = 60
"""An error quotes at most this much of a bad value."""


class OptionError(ValueError):
    """An option's value is outside its range or of the wrong kind. `path` names the option
    (`retry.max_attempts`), `rule` says what it must be; the message is `path: rule`."""

    def __init__(self, path: str, rule: str) -> None:
        super().__init__(f"{path}: {rule}" if path else rule)
        self.path = path
        self.rule = rule


@dataclass(frozen=True, slots=True)
class Rule:
    """What an option's value may be, beyond its type, and why it exists."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    max_length: int | None = None
    min_length: int | None = None
    doc: str = ""

    def range_text(self) -> str:
        """`[1, 10]`, `(0, 60]`, `>= 0`: the range as the docs and errors write it."""
        low = f"[{_num(self.ge)}" if self.ge is not None else None
        low = f"({_num(self.gt)}" if self.gt is not None else low
        high = f"{_num(self.le)}]" if self.le is not None else None
        high = f"{_num(self.lt)})" if self.lt is not None else high
        if low and high:
            return f"{low}, {high}"
        if low:
            return f"{'>=' if self.ge is not None else '>'} {low[1:]}"
        if high:
            return f"{'<=' if self.le is not None else '<'} {high[:-1]}"
        if self.max_length is not None:
            return f"{self.min_length or 0} to {self.max_length} items"
        return ""


def option(
    default: Any = MISSING,
    *,
    factory: Callable[[], Any] | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    doc: str = "",
) -> Any:
    """A dataclass field with its range and documentation (a nested options class: `factory`)."""
    rule = Rule(ge, gt, le, lt, max_length, min_length, doc)
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={"option": rule})
    return dataclasses.field(default=default, metadata={"option": rule})


@dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    kind: Any
    rule: Rule


_SPECS: dict[type, dict[str, _Spec]] = {}


def _specs(cls: type) -> dict[str, _Spec]:
    specs = _SPECS.get(cls)
    if specs is None:
        hints = typing.get_type_hints(cls)
        specs = {
            f.name: _Spec(f.name, hints[f.name], f.metadata.get("option", Rule()))
            for f in dataclasses.fields(cls)
        }
        _SPECS[cls] = specs
    return specs


def check(options: Any) -> None:
    """Enforce each field's type and range (call it first in `__post_init__`): ints where an
    int is due, finite numbers, names from a Literal's choices, sequences made tuples."""
    for spec in _specs(type(options)).values():
        value = getattr(options, spec.name)
        checked = _checked(spec.kind, value, spec.rule, spec.name)
        if checked is not value:
            object.__setattr__(options, spec.name, checked)


def at_most(options: Any, low: str, high: str, *, strict: bool = False, why: str = "") -> None:
    """The cross-field rule `low <= high` (`low < high` when strict), naming both fields."""
    lo, hi = getattr(options, low), getattr(options, high)
    if lo > hi or (strict and lo == hi):
        raise OptionError(
            low, f"{_num(lo)} must be {'<' if strict else '<='} {high} ({_num(hi)}){why}"
        )


def code_names(options: Any, name: str, allowed: tuple[str, ...] | None = None) -> None:
    """Field `name` (a tuple of gRPC status code names) in upper case, each a code other than
    OK (and one of `allowed`, when given)."""
    names = tuple(
        code_name(f"{name}[{i}]", c, allowed) for i, c in enumerate(getattr(options, name))
    )
    object.__setattr__(options, name, names)


def code_name(path: str, name: str, allowed: tuple[str, ...] | None = None) -> str:
    """`name` as a gRPC status code name in upper case (not OK; one of `allowed`, if given)."""
    upper = name.upper()
    if upper not in grpc.StatusCode.__members__ or upper == "OK":
        raise OptionError(path, f"{quote(name)} is not a gRPC error code name")
    if allowed is not None and upper not in allowed:
        raise OptionError(path, f"{upper} is not one of {', '.join(allowed)}")
    return upper


def _checked(kind: Any, value: Any, rule: Rule, path: str) -> Any:
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        arms = [a for a in typing.get_args(kind) if a is not type(None)]
        if value is None:
            if len(arms) == len(typing.get_args(kind)):
                raise OptionError(path, "must be set (null is not allowed)")
            return None
        return _checked(arms[0], value, rule, path)
    if origin is Literal:
        choices = typing.get_args(kind)
        if value not in choices:
            raise OptionError(path, f"{_quote(value)} is not one of {', '.join(map(str, choices))}")
        return value
    if origin is tuple:
        return _sequence(typing.get_args(kind)[0], value, rule, path)
    if kind is bool:
        if not isinstance(value, bool):
            raise OptionError(path, f"{_quote(value)} is not true or false")
        return value
    if kind is int or kind is float:
        return _number(kind, value, rule, path)
    if kind is str:
        if not isinstance(value, str):
            raise OptionError(path, f"{_quote(value)} is not text")
        _length(value, rule, path)
        return value
    if isinstance(kind, type) and dataclasses.is_dataclass(kind) and not isinstance(value, kind):
        if isinstance(value, Mapping):
            return from_dict(kind, value, path=path)
        raise OptionError(path, f"{_quote(value)} is not a {kind.__name__} (or a mapping)")
    return value


def _number(kind: type, value: Any, rule: Rule, path: str) -> Any:
    whole = kind is int
    if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
        raise OptionError(path, f"{_quote(value)} is not {'an integer' if whole else 'a number'}")
    if not whole:
        if not math.isfinite(value):
            raise OptionError(path, f"{_quote(value)} is not a finite number")
        value = float(value)
    low_ok = (rule.ge is None or value >= rule.ge) and (rule.gt is None or value > rule.gt)
    high_ok = (rule.le is None or value <= rule.le) and (rule.lt is None or value < rule.lt)
    if not (low_ok and high_ok):
        raise OptionError(path, f"{_num(value)} is not in {rule.range_text()}")
    return value


def _sequence(item: Any, value: Any, rule: Rule, path: str) -> tuple[Any, ...]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, list | tuple):
        raise OptionError(path, f"{_quote(value)} is not a list")
    _length(value, rule, path)
    return tuple(_checked(item, v, Rule(), f"{path}[{i}]") for i, v in enumerate(value))


def _length(value: Any, rule: Rule, path: str) -> None:
    if rule.min_length is not None and len(value) < rule.min_length:
        raise OptionError(path, f"needs at least {rule.min_length} item(s) or character(s)")
    if rule.max_length is not None and len(value) > rule.max_length:
        raise OptionError(path, f"takes at most {rule.max_length} item(s) or character(s)")


def from_dict(cls: type[T], data: Mapping[str, Any], *, path: str = "") -> T:
    """Options of `cls` from plain data (nested mappings for nested options); an unknown key or
    a bad value raises OptionError with its full path. Keys left out keep their defaults."""
    if not isinstance(data, Mapping):
        raise OptionError(path, f"must be a mapping of {cls.__name__}'s options")
    specs = _specs(cls)
    values: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{path}.{key}" if path else str(key)
        spec = specs.get(key) if isinstance(key, str) else None
        if spec is None:
            raise OptionError(
                where, f"is not an option of {cls.__name__}; known: {', '.join(specs)}"
            )
        values[key] = _checked(spec.kind, value, spec.rule, where)
    try:
        return cls(**values)
    except OptionError as err:
        if not path or err.path.startswith(f"{path}."):
            raise
        raise OptionError(f"{path}.{err.path}" if err.path else path, err.rule) from None


def to_dict(options: Any) -> dict[str, Any]:
    """`options` as plain data `from_dict` reads back (tuples as lists)."""
    return {name: _plain(getattr(options, name)) for name in _specs(type(options))}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class OptionRow:
    """One option as the docs' table prints it."""

    name: str
    kind: str
    default: str
    range: str
    doc: str


def option_rows(cls: type, *, prefix: str = "") -> list[OptionRow]:
    """`cls`'s options, nested classes flattened to dotted names, for a docs table."""
    rows: list[OptionRow] = []
    for field in dataclasses.fields(cls):
        spec = _specs(cls)[field.name]
        name = f"{prefix}{field.name}"
        if isinstance(spec.kind, type) and dataclasses.is_dataclass(spec.kind):
            rows.extend(option_rows(spec.kind, prefix=f"{name}."))
            continue
        if field.default is not MISSING:
            default = _shown(field.default)
        elif field.default_factory is not MISSING:
            default = _shown(field.default_factory())
        else:
            default = "(required)"
        rows.append(
            OptionRow(name, _kind(spec.kind), default, spec.rule.range_text(), spec.rule.doc)
        )
    return rows


def _kind(kind: Any) -> str:
    origin = typing.get_origin(kind)
    if origin is Literal:
        return " \\| ".join(repr(c) for c in typing.get_args(kind))
    if origin in (Union, types.UnionType):
        return " \\| ".join(_kind(a) for a in typing.get_args(kind))
    if origin is tuple:
        return f"list of {_kind(typing.get_args(kind)[0])}"
    if kind is type(None):
        return "null"
    return getattr(kind, "__name__", str(kind))


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if dataclasses.is_dataclass(value):
        return type(value).__name__ + "()"
    return _num(value) if isinstance(value, float) else str(value)


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def quote(value: Any) -> str:
    """`value` as an error may quote it: its repr on one line, at most QUOTE_CHARS long."""
    return _quote(value)


def _quote(value: Any) -> str:
    shown = " ".join(repr(value).split())
    return shown if len(shown) <= QUOTE_CHARS else shown[: QUOTE_CHARS - 3] + "..."
