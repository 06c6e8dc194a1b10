"""Reading a request body as Go's json.Decoder does: one value, its limits and its error texts.

Python's json module differs from Go's where it hurts a server: it accepts `NaN` and
`Infinity`, turns every integer into an unbounded int (and refuses 4301 digits with a
ValueError), and recurses, so nesting of about 1000 raises RecursionError. Here numbers are kept
as written (`Number`) so that each field converts them with Go's rules for its own type, and
`_Reader`, an iterative reader, accepts nesting up to Go's 10000 and refuses what Go's scanner
refuses in its words. It is about 50 times slower than the C decoder, which would stall every
proxied connection for seconds on a 1 MiB body, so bodies go through the C decoder first (with
hooks that make it agree with `_Reader`) and reach `_Reader` only when that one gives up.
"""

from __future__ import annotations

import json
import re
from _json import scanstring  # the C string scanner json.decoder uses; typed, unlike it
from dataclasses import dataclass
from typing import Any

from grpc_resilience_mesh.embedded_toxiproxy.errors import BAD_REQUEST_BODY, ApiError

MAX_DEPTH = 10000  # Go's encoding/json scanner: deeper nesting "exceeded max depth"

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LITERALS: dict[str, tuple[str, Any]] = {
    "t": ("true", True),
    "f": ("false", False),
    "n": ("null", None),
}


@dataclass(frozen=True, slots=True)
class Number:
    """A JSON number exactly as written; Go converts it only once it knows the target type."""

    literal: str


class _NotJson(ValueError):
    """NaN, Infinity or -Infinity: Python's decoder accepts them, Go's does not."""


def _refuse_constant(name: str) -> Any:
    raise _NotJson(name)


_FAST = json.JSONDecoder(parse_int=Number, parse_float=Number, parse_constant=_refuse_constant)


def parse_body(raw: bytes) -> Any:
    """Decode the first JSON value of a body (Go ignores what follows it); ApiError 400 if bad."""
    # Go replaces invalid UTF-8 with U+FFFD inside strings and refuses it elsewhere; so do we.
    text = raw.decode("utf-8", errors="replace")
    # Surrogate escapes need _Reader's U+FFFD rule; everything else agrees in both decoders.
    if _SURROGATE_ESCAPE.search(text) is None:
        start = _WHITESPACE.match(text)
        try:
            value, _ = _FAST.raw_decode(text, start.end() if start else 0)
        except (ValueError, RecursionError):
            pass  # not JSON, or nested deeper than C recursion allows: _Reader decides
        else:
            # A bare number is left to _Reader: Python stops before a "1." or "1e" that Go reads
            # on into (and refuses).
            if not isinstance(value, Number):
                return value
    return _Reader(text).read()


def _quote_char(char: str) -> str:
    """Go's quoteChar: how its scanner names the offending character."""
    if char == "'":
        return "'\\''"
    if char == '"':
        return "'\"'"
    return "'" + json.dumps(char)[1:-1] + "'"


def _is_hex(text: str, index: int) -> bool:
    return text[index : index + 1] in _HEX_DIGITS


class _Reader:
    """A recursive-descent JSON reader made iterative: an explicit stack of open containers."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def _error(self, detail: str) -> ApiError:
        return BAD_REQUEST_BODY.joined(detail)

    def _invalid(self, context: str, at: int | None = None) -> ApiError:
        at = self.pos if at is None else at
        if at >= len(self.text):
            return self._error("unexpected EOF")
        return self._error(f"invalid character {_quote_char(self.text[at])} {context}")

    def _skip(self) -> str:
        """Skip whitespace; the next character, or "" at the end."""
        match = _WHITESPACE.match(self.text, self.pos)
        self.pos = match.end() if match else self.pos
        return self.text[self.pos : self.pos + 1]

    def read(self) -> Any:
        if self._skip() == "":
            raise self._error("EOF")
        # Each open container with, for an object, the key whose value is being read.
        stack: list[tuple[dict[str, Any] | list[Any], str]] = []
        while True:
            char = self._skip()
            value: Any
            if char in ("[", "{"):
                if len(stack) >= MAX_DEPTH:
                    raise self._invalid("exceeded max depth")
                self.pos += 1
                container: dict[str, Any] | list[Any] = {} if char == "{" else []
                if self._skip() != ("}" if char == "{" else "]"):
                    stack.append((container, self._key() if char == "{" else ""))
                    continue
                self.pos += 1
                value = container
            else:
                value = self._scalar("looking for beginning of value")
            while True:
                if not stack:
                    return value
                container, key = stack[-1]
                if isinstance(container, dict):
                    container[key] = value
                    closing, context = "}", "after object key:value pair"
                else:
                    container.append(value)
                    closing, context = "]", "after array element"
                char = self._skip()
                self.pos += 1
                if char == ",":
                    self._skip()
                    if isinstance(container, dict):
                        stack[-1] = (container, self._key())
                    break
                if char != closing:
                    raise self._invalid(context, self.pos - 1)
                stack.pop()
                value = container

    def _key(self) -> str:
        if self.text[self.pos : self.pos + 1] != '"':
            raise self._invalid("looking for beginning of object key string")
        key = self._string()
        if self._skip() != ":":
            raise self._invalid("after object key")
        self.pos += 1
        return key

    def _scalar(self, context: str) -> Any:
        char = self.text[self.pos : self.pos + 1]
        if char == '"':
            return self._string()
        if char and char in "-0123456789":
            return self._number()
        if char in _LITERALS:
            word, value = _LITERALS[char]
            for offset, expected in enumerate(word):
                if self.text[self.pos + offset : self.pos + offset + 1] != expected:
                    detail = f"in literal {word} (expecting {_quote_char(expected)})"
                    raise self._invalid(detail, self.pos + offset)
            self.pos += len(word)
            return value
        # NaN, Infinity and anything else that is not JSON, as Go's scanner reports it.
        raise self._invalid(context)

    def _number(self) -> Number:
        match = _NUMBER.match(self.text, self.pos)
        if match is None:  # a "-" not followed by a digit
            raise self._invalid("in numeric literal", self.pos + 1)
        literal, end = match.group(), match.end()
        following = self.text[end : end + 1]
        if following == "." and "." not in literal and not re.search("[eE]", literal):
            raise self._invalid("after decimal point in numeric literal", end + 1)
        if following in ("e", "E") and not re.search("[eE]", literal):
            sign = 1 if self.text[end + 1 : end + 2] in ("+", "-") else 0
            raise self._invalid("in exponent of numeric literal", end + 1 + sign)
        self.pos = end
        return Number(literal)

    def _string(self) -> str:
        try:
            value, self.pos = scanstring(self.text, self.pos + 1, True)
        except json.JSONDecodeError as exc:
            if exc.msg.startswith("Unterminated"):
                raise self._error("unexpected EOF") from None
            if exc.msg.startswith("Invalid control"):
                raise self._invalid("in string literal", exc.pos) from None
            if exc.msg.startswith("Invalid \\u"):
                digits = range(exc.pos + 1, exc.pos + 5)
                bad = next((i for i in digits if not _is_hex(self.text, i)), exc.pos)
                raise self._invalid("in \\u hexadecimal character escape", bad) from None
            raise self._invalid("in string escape code", exc.pos + 1) from None
        # Go decodes an unpaired surrogate escape as U+FFFD; the text stays valid UTF-8.
        return _SURROGATE.sub("\ufffd", value)
