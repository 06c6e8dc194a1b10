"""Settings from the environment: one rule per kind of value, and every variable declared once.

The rules (each a function of the raw text, raising RuleError with what a value must be):
- `address`: HOST:PORT, the port 0..65535 in ASCII digits (`addresses`: several, or xds:///NAME);
- `integer_in(lo, hi)`: an integer in ASCII digits (a sign only when `lo` < 0) within lo..hi;
- `number_in(lo, hi, above=, unit=)`: a finite number >= lo (or > lo when `above`), <= hi;
- `flag`: 1/true/yes/on or 0/false/no/off, any case;
- `one_of(*words)`: one of `words`, exactly; `text`: anything.
A variable that is unset, empty or blank takes its default. A bad value is a `ConfigError`
whose message starts with `NAME='value'` (quoted short, on one line) and says the rule.

Every variable is declared once, as a `Var(name, rule, default, help)`, and `var.read(environ)`
reads it (docs/reference/environment.md is generated from these declarations). Only a name known at
run time (a caller's `<CALLEE>_ADDR`) is read with `read(environ, name, ...)`.
`grpc_resilience_mesh.services.runtime.server.run` turns a ConfigError into one line and exit 2.
Plain functions, no pydantic: a `mesh` command and a service read their variables before anything
heavy is imported.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from grpc_resilience_mesh.services.config_error import ConfigError

__all__ = [
    "RuleError",
    "Var",
    "address",
    "addresses",
    "declared",
    "env_or_os",
    "flag",
    "integer_in",
    "number_in",
    "one_of",
    "read",
    "shown",
    "text",
]

QUOTE_CHARS = 40
_MAX_DIGITS = 40
_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"0", "false", "no", "off"})

T = TypeVar("T")
D = TypeVar("D")


class RuleError(ValueError):
    """A value broke its rule; the message is the rule, e.g. 'is not HOST:PORT (...)'."""


def shown(raw: str) -> str:
    """A variable's value as an error quotes it: short, one line."""
    flat = " ".join(raw.split())
    return repr(flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 3] + "...")


def _n(bound: float) -> str:
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


def _span(lo: float | None, hi: float | None, above: bool = False) -> str:
    if lo is not None and hi is not None:
        return f"within {_n(lo)}..{_n(hi)}"
    if lo is not None:
        return f"{'>' if above else '>='} {_n(lo)}"
    return f"<= {_n(hi)}" if hi is not None else ""


def address(raw: str) -> str:
    value = raw.strip()
    host, sep, port = value.rpartition(":")
    if not sep or not host or not _digits(port) or not 0 <= int(port) <= 65535:
        raise RuleError("is not HOST:PORT (e.g. 127.0.0.1:50052)")
    return value


XDS_SCHEME = "xds:///"
"""A dependency gRPC's xDS client finds (`mesh up --xds`): xds:///NAME, NAME its listener."""

XDS_EXTRA = "pip install 'grpc-resilience-mesh[xds]'"
"""What installs grpcio-csds, which a service dialling xds:/// needs (it serves CSDS): the base
install leaves it out, since its xds-protos overwrites opentelemetry-proto's files."""


def addresses(raw: str) -> str:
    """HOST:PORT, or several separated by commas (a dependency's replicas), at most 16; or
    xds:///NAME (the control plane says where the replicas are)."""
    if raw.strip().startswith(XDS_SCHEME):
        name = raw.strip().removeprefix(XDS_SCHEME)
        if not name or not all(c.isalnum() or c in "-._" for c in name):
            raise RuleError("is not xds:///NAME (letters, digits, '-', '.', '_')")
        return raw.strip()
    parts = [p.strip() for p in raw.split(",")]
    if len(parts) > 16:
        raise RuleError("lists more than 16 addresses")
    try:
        return ",".join(address(p) for p in parts)
    except RuleError:
        raise RuleError("is not HOST:PORT[,HOST:PORT...] (e.g. 127.0.0.1:50052)") from None


def _digits(text: str) -> bool:
    """0-9 only: str.isdigit() also passes '²' (int() then raises) and other scripts' digits."""
    return text.isascii() and text.isdigit() and len(text) <= _MAX_DIGITS


def integer(raw: str, lo: int | None = None, hi: int | None = None) -> int:
    text = raw.strip()
    magnitude = text[1:] if text[:1] == "-" and (lo is None or lo < 0) else text
    value = int(text) if _digits(magnitude) else None
    if value is None or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise RuleError(f"is not an integer {_span(lo, hi)}".rstrip())
    return value


def number(
    raw: str, lo: float | None = None, hi: float | None = None, above: bool = False, unit: str = ""
) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    low_ok = lo is None or (value > lo if above else value >= lo)
    if not math.isfinite(value) or not low_ok or (hi is not None and value > hi):
        raise RuleError(f"is not a number{f' of {unit}' if unit else ''} {_span(lo, hi, above)}")
    return value


def flag(raw: str) -> bool:
    word = raw.strip().lower()
    if word not in _ON | _OFF:
        raise RuleError("is not a flag (1, true, yes, on or 0, false, no, off)")
    return word in _ON


def choice(raw: str, choices: tuple[str, ...]) -> str:
    word = raw.strip()
    if word not in choices:
        raise RuleError(f"is not one of {', '.join(choices)}")
    return word


def lower_choice(*choices: str) -> Callable[[str], str]:
    """`choice` ignoring case: the value is lowered (choices are lower case)."""
    return lambda raw: choice(raw.lower(), choices)


def text(raw: str) -> str:
    """Any text, as given (a path, a name, a secret)."""
    return raw


def integer_in(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """The rule of an integer within lo..hi."""
    return lambda raw: integer(raw, lo, hi)


def number_in(
    lo: float | None = None, hi: float | None = None, *, above: bool = False, unit: str = ""
) -> Callable[[str], float]:
    """The rule of a number >= lo (> lo when `above`), <= hi."""
    return lambda raw: number(raw, lo, hi, above, unit)


def one_of(*choices: str) -> Callable[[str], str]:
    """The rule of one of `choices`, exactly."""
    return lambda raw: choice(raw, choices)


def env_or_os(given: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """`given`, or the process's environment when None."""
    return os.environ if given is None else given


def read(environ: Mapping[str, str], var: str, parse: Callable[[str], T], default: D) -> T | D:
    """One variable whose name is known only at run time, by the same rules as `load`."""
    raw = environ.get(var, "")
    if not raw.strip():
        return default
    try:
        return parse(raw)
    except RuleError as err:
        raise ConfigError(f"{var}={shown(raw)} {err}") from None


_DECLARED: list[Var[Any]] = []


@dataclass(frozen=True)
class Var(Generic[T]):
    """One environment variable declared once: its name, its rule (which is its type: a
    function of the raw text raising RuleError), its default when unset or blank, what it does.
    Declaring it registers it (`declared()`), for the generated reference."""

    name: str
    rule: Callable[[str], T]
    default: T
    help: str
    module: str = field(default="", compare=False)
    """Where it is declared (found from the caller when not given)."""

    def __post_init__(self) -> None:
        if not self.module:
            caller = sys._getframe(2).f_globals.get("__name__", "")
            object.__setattr__(self, "module", caller)
        _DECLARED.append(self)

    def read(self, environ: Mapping[str, str] | None = None) -> T:
        """The value in `environ` (default os.environ); a bad one is a ConfigError naming it."""
        return read(env_or_os(environ), self.name, self.rule, self.default)


def declared() -> tuple[Var[Any], ...]:
    """Every `Var` declared by the modules imported so far."""
    return tuple(_DECLARED)
