"""The bench's load client gets the API key whatever its first character."""

from __future__ import annotations

from grpc_resilience_mesh.bench.mesh import client_command
from grpc_resilience_mesh.bench.mesh_client import KEY_ENV, parser


def test_a_key_starting_with_a_dash_reaches_the_client_through_the_environment() -> None:
    # a generated key is token_urlsafe: about 1 in 64 starts with '-', and as an argv value
    # argparse read it as an option and the client exited 2 (CI saw it)
    args, env = client_command(
        "127.0.0.1:1", requests=5, concurrency=2, warmup=0, api_key="-dash-first-key"
    )
    assert not any("dash-first" in arg for arg in args)
    assert env[KEY_ENV] == "-dash-first-key"
    parsed = parser().parse_args(args[3:])
    assert (parsed.target, parsed.requests, parsed.concurrency) == ("127.0.0.1:1", 5, 2)


def test_no_key_leaves_none_in_the_environment() -> None:
    _, env = client_command("127.0.0.1:1", requests=1, concurrency=1, warmup=0, api_key=None)
    assert KEY_ENV not in env
