"""What Go's encoding/json refuses, the embedded server refuses: 400 in Toxiproxy's error shape.

Toxiproxy decodes attributes into int64 (int for slicer) and toxicity into float32; numbers that
do not fit, NaN and Infinity (not JSON at all) and nesting deeper than 10000 never get in, so
nothing that can break a connection or the JSON we send back is ever stored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpc_resilience_mesh.embedded_toxiproxy.errors import ApiError
from grpc_resilience_mesh.embedded_toxiproxy.json_reader import _Reader, parse_body
from tests.integration.embedded_toxiproxy.toxiproxy_helpers import (
    RunningServer,
    connect,
    error_of,
    http,
    round_trip_ms,
)

pytestmark = pytest.mark.timeout(30)

INT64_MAX = (1 << 63) - 1


def _strict_json(body: bytes) -> Any:
    """Parse as Go would: NaN, Infinity and -Infinity are not JSON."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(body, parse_constant=refuse)


def _proxy(server: RunningServer, upstream_port: int) -> int:
    body = {"name": "p", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{upstream_port}"}
    status, _, data = http(server, "POST", "/proxies", body)
    assert status == 201
    return int(json.loads(data)["listen"].rsplit(":", 1)[1])


def _refused(server: RunningServer, method: str, path: str, raw: bytes) -> str:
    status, headers, body = http(server, method, path, raw=raw)
    assert status == 400, body
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    return str(error_of(400, body)["error"])


def test_latency_of_ten_to_the_400_is_refused_and_connections_keep_working(
    toxiproxy: RunningServer, echo_port: int
) -> None:
    port = _proxy(toxiproxy, echo_port)
    huge = "1" + "0" * 400
    raw = f'{{"type": "latency", "attributes": {{"latency": {huge}}}}}'.encode()
    assert _refused(toxiproxy, "POST", "/proxies/p/toxics", raw) == (
        f"bad request body: json: cannot unmarshal number {huge} into Go struct field "
        "LatencyToxic.attributes.latency of type int64"
    )
    assert _strict_json(http(toxiproxy, "GET", "/proxies/p/toxics")[2]) == []
    with connect(port) as sock:
        round_trip_ms(sock, b"still relayed")


@pytest.mark.parametrize(
    ("toxic_type", "field", "literal"),
    [
        ("latency", "latency", "9223372036854775808"),
        ("latency", "jitter", "-9223372036854775809"),
        ("latency", "latency", "1e400"),
        ("latency", "latency", "1.0"),
        ("latency", "latency", "1e3"),
        ("bandwidth", "rate", "18446744073709551616"),
        ("limit_data", "bytes", "1" + "0" * 5000),
    ],
    ids=["int64-max+1", "int64-min-1", "1e400", "1.0", "1e3", "2^64", "5001-digits"],
)
def test_attributes_outside_int64_are_refused_like_go(
    toxiproxy: RunningServer, echo_port: int, toxic_type: str, field: str, literal: str
) -> None:
    _proxy(toxiproxy, echo_port)
    raw = f'{{"type": "{toxic_type}", "attributes": {{"{field}": {literal}}}}}'.encode()
    struct = {"latency": "Latency", "bandwidth": "Bandwidth", "limit_data": "LimitData"}
    assert _refused(toxiproxy, "POST", "/proxies/p/toxics", raw) == (
        f"bad request body: json: cannot unmarshal number {literal} into Go struct field "
        f"{struct[toxic_type]}Toxic.attributes.{field} of type int64"
    )
    assert _strict_json(http(toxiproxy, "GET", "/proxies/p/toxics")[2]) == []


def test_slicer_attributes_are_go_ints(toxiproxy: RunningServer, echo_port: int) -> None:
    _proxy(toxiproxy, echo_port)
    raw = b'{"type": "slicer", "attributes": {"delay": 0.5}}'
    assert _refused(toxiproxy, "POST", "/proxies/p/toxics", raw) == (
        "bad request body: json: cannot unmarshal number 0.5 into Go struct field "
        "SlicerToxic.attributes.delay of type int"
    )


def test_int64_extremes_are_accepted_and_do_not_break_the_connection(
    toxiproxy: RunningServer, echo_port: int
) -> None:
    port = _proxy(toxiproxy, echo_port)
    attributes = {"latency": INT64_MAX, "jitter": INT64_MAX}
    status, _, data = http(
        toxiproxy, "POST", "/proxies/p/toxics", {"type": "latency", "attributes": attributes}
    )
    assert status == 200 and _strict_json(data)["attributes"] == attributes
    with connect(port, timeout_s=5.0) as sock:
        sock.sendall(b"held")
        # Removing the toxic releases the chunk it holds: the connection survived the toxic.
        assert http(toxiproxy, "DELETE", "/proxies/p/toxics/latency_downstream")[0] == 204
        assert sock.recv(16) == b"held"


@pytest.mark.parametrize(
    ("toxicity", "detail"),
    [
        ("NaN", "invalid character 'N' looking for beginning of value"),
        ("Infinity", "invalid character 'I' looking for beginning of value"),
        ("-Infinity", "invalid character 'I' in numeric literal"),
        (
            "1e39",
            "json: cannot unmarshal number 1e39 into Go struct field "
            "ToxicWrapper.toxicity of type float32",
        ),
    ],
)
def test_toxicity_that_is_not_a_float32_is_refused(
    toxiproxy: RunningServer, echo_port: int, toxicity: str, detail: str
) -> None:
    _proxy(toxiproxy, echo_port)
    raw = f'{{"type": "latency", "toxicity": {toxicity}}}'.encode()
    assert _refused(toxiproxy, "POST", "/proxies/p/toxics", raw) == f"bad request body: {detail}"
    assert http(toxiproxy, "POST", "/proxies/p/toxics", {"type": "latency"})[0] == 200
    raw = f'{{"toxicity": {toxicity}}}'.encode()
    assert _refused(toxiproxy, "PATCH", "/proxies/p/toxics/latency_downstream", raw).startswith(
        "bad request body: "
    )
    # Every listing stays JSON, and the refused update changed nothing.
    toxics = _strict_json(http(toxiproxy, "GET", "/proxies/p/toxics")[2])
    assert [t["toxicity"] for t in toxics] == [1]
    assert _strict_json(http(toxiproxy, "GET", "/proxies")[2])["p"]["toxics"] == toxics


def test_populate_with_nan_is_refused_in_its_own_shape(toxiproxy: RunningServer) -> None:
    raw = b'[{"name": "a", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:1", "enabled": NaN}]'
    status, _, body = http(toxiproxy, "POST", "/populate", raw=raw)
    assert status == 400
    assert _strict_json(body) == {
        "error": "bad request body: invalid character 'N' looking for beginning of value",
        "status": 400,
        "proxies": None,
    }
    assert _strict_json(http(toxiproxy, "GET", "/proxies")[2]) == {}


@pytest.mark.parametrize("depth", [10001, 100_000])
def test_nesting_deeper_than_go_allows_is_a_400(toxiproxy: RunningServer, depth: int) -> None:
    for path in ("/proxies", "/populate"):
        status, _, body = http(toxiproxy, "POST", path, raw=b"[" * depth + b"]" * depth)
        assert status == 400, body
        assert json.loads(body)["error"] == (
            "bad request body: invalid character '[' exceeded max depth"
        )


def test_nesting_go_allows_is_decoded(toxiproxy: RunningServer, echo_port: int) -> None:
    # Go skips unknown fields whatever their depth; the deepest it reads is 10000 levels.
    deep = "[" * 9999 + "]" * 9999
    raw = f'{{"name": "p", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:1", "x": {deep}}}'
    status, _, body = http(toxiproxy, "POST", "/proxies", raw=raw.encode())
    assert status == 201, body
    raw = "[" * 5000 + "]" * 5000
    assert _refused(toxiproxy, "POST", "/proxies/p/toxics", raw.encode()) == (
        "bad request body: json: cannot unmarshal array into Go value of type toxics.ToxicWrapper"
    )


def test_large_bodies_are_answered_in_toxiproxy_shape(toxiproxy: RunningServer) -> None:
    # Above 64 KiB the body is decoded off the event loop; the answer is the same.
    unterminated = b"[" + b"0," * 100_000 + b"0"
    assert _refused(toxiproxy, "POST", "/proxies", unterminated) == (
        "bad request body: unexpected EOF"
    )
    status, _, body = http(toxiproxy, "POST", "/proxies", raw=b" " * (1 << 20) + b"{}")
    assert error_of(status, body) == {
        "error": "bad request body: http: request body too large",
        "status": 413,
    }


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        (b"{", "unexpected EOF"),
        (b'{"name": "p",}', "invalid character '}' looking for beginning of object key string"),
        (b'{"name" "p"}', "invalid character '\"' after object key"),
        (b'{"name": "p" "x"}', "invalid character '\"' after object key:value pair"),
        (b'{"name": tru}', "invalid character '}' in literal true (expecting 'e')"),
        (b'{"name": "\\x"}', "invalid character 'x' in string escape code"),
        (b'{"name": 01}', "invalid character '1' after object key:value pair"),
    ],
)
def test_syntax_errors_use_go_wording(toxiproxy: RunningServer, raw: bytes, detail: str) -> None:
    assert _refused(toxiproxy, "POST", "/proxies", raw) == f"bad request body: {detail}"


def test_unpaired_surrogates_become_replacement_characters(
    toxiproxy: RunningServer, echo_port: int
) -> None:
    # As in Go: the name stays valid UTF-8, so a client can put it in a URL and delete it.
    raw = b'{"name": "a\\ud800", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:1"}'
    status, _, body = http(toxiproxy, "POST", "/proxies", raw=raw)
    assert status == 201 and json.loads(body)["name"] == "a\ufffd"
    assert http(toxiproxy, "DELETE", "/proxies/a%EF%BF%BD")[0] == 204


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


# The C decoder with its fallback, and the Go-rules reader alone.
_DECODERS: tuple[Callable[[str], Any], ...] = (
    lambda body: parse_body(body.encode()),
    lambda body: _Reader(body).read(),
)


@settings(max_examples=300, deadline=None)
@given(
    value=_JSON_VALUES,
    cut=st.integers(min_value=0, max_value=200),
    insert=st.sampled_from(["", "NaN", "\\ud800", ",", "]", "}", '"', "-", "1e", "\x01", "[[["]),
)
def test_both_decoding_paths_agree(value: Any, cut: int, insert: str) -> None:
    # parse_body tries the C decoder first and falls back to _Reader: they must agree on every
    # body, valid or not, so the fast path never accepts or reads what Go's rules would not.
    text = json.dumps(value, allow_nan=True)
    for body in (text, text[:cut] + insert + text[cut:], text[:cut]):
        outcomes = []
        for decode in _DECODERS:
            try:
                outcomes.append(("value", decode(body)))
            except ApiError as exc:
                outcomes.append(("error", exc.message))
        assert outcomes[0] == outcomes[1], body
