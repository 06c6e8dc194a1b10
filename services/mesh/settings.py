"""Settings from the environment: one rule per kind of value, and the models built from them.

The rules (each a pydantic validator, and a plain function for names known only at run time):
- `Address`: HOST:PORT, the port 0..65535 in ASCII digits;
- `Int(lo, hi)`: an integer in ASCII digits (a sign only when `lo` < 0) within lo..hi;
- `Float(lo, hi, above=, unit=)`: a finite number >= lo (or > lo when `above`), <= hi;
- `Flag`: 1/true/yes/on or 0/false/no/off, any case;
- `Choice(*words)`: one of `words`, exactly (an enum).
A variable that is unset, empty or blank takes its default. A bad value is a `ConfigError`
whose message starts with `NAME='value'` (quoted short, on one line) and says the rule.

A model is an `EnvSettings` subclass whose fields carry the variable as `validation_alias`;
`load(Model, environ)` reads it through pydantic-settings' env source from `environ` (default
os.environ) and turns the first bad variable into a `ConfigError`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BeforeValidator, ValidationError
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict

from mesh.config_error import ConfigError

__all__ = [
    "Address",
    "Choice",
    "EnvSettings",
    "Flag",
    "Float",
    "Int",
    "env_or_os",
    "load",
    "read",
    "shown",
]

QUOTE_CHARS = 40
_MAX_DIGITS = 40
_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"0", "false", "no", "off"})

S = TypeVar("S", bound="EnvSettings")
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


def addresses(raw: str) -> str:
    """HOST:PORT, or several separated by commas (a dependency's replicas), at most 16."""
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


def _rule(parse: Callable[[str], T]) -> BeforeValidator:
    """A pydantic validator applying `parse` to the raw string (defaults pass through)."""

    def validate(value: Any) -> Any:
        return parse(value) if isinstance(value, str) else value

    return BeforeValidator(validate)


Address = _rule(address)
Flag = _rule(flag)


def Int(lo: int | None = None, hi: int | None = None) -> BeforeValidator:
    return _rule(lambda raw: integer(raw, lo, hi))


def Float(
    lo: float | None = None, hi: float | None = None, *, above: bool = False, unit: str = ""
) -> BeforeValidator:
    return _rule(lambda raw: number(raw, lo, hi, above, unit))


def Choice(*choices: str) -> BeforeValidator:
    return _rule(lambda raw: choice(raw, choices))


class EnvSettings(BaseSettings):
    """Base of every settings model: names as written, blank means unset, frozen once read."""

    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", frozen=True)


class _MappingEnv(EnvSettingsSource):
    """pydantic-settings' env source over a given mapping; blank values count as unset."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ: dict[str, str | None] = {k: v for k, v in environ.items() if v.strip()}
        super().__init__(settings_cls, case_sensitive=True)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return self._environ


def _variable(model: type[EnvSettings], field: object) -> str:
    info = model.model_fields.get(str(field))
    alias = info.validation_alias if info is not None else None
    return alias if isinstance(alias, str) else str(field)


def env_or_os(given: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """`given`, or the process's environment when None."""
    return os.environ if given is None else given


def load(model: type[S], environ: Mapping[str, str] | None = None) -> S:
    """`model` read from `environ` (default os.environ); a bad value is a ConfigError naming it."""
    env = env_or_os(environ)
    values = _MappingEnv(model, env)()
    try:
        return model.model_validate(values)
    except ValidationError as err:
        first = err.errors()[0]
        var = _variable(model, first["loc"][0]) if first["loc"] else model.__name__
        cause = first.get("ctx", {}).get("error")
        reason = str(cause) if isinstance(cause, RuleError) else first["msg"]
        raise ConfigError(f"{var}={shown(str(env.get(var, '')))} {reason}") from None


def read(environ: Mapping[str, str], var: str, parse: Callable[[str], T], default: D) -> T | D:
    """One variable whose name is known only at run time, by the same rules as `load`."""
    raw = environ.get(var, "")
    if not raw.strip():
        return default
    try:
        return parse(raw)
    except RuleError as err:
        raise ConfigError(f"{var}={shown(raw)} {err}") from None
