"""A file that is not a policy (or an experiment) is refused without quoting its contents."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.services.policy.loading import PolicyError, load_policy

SHADOW = "".join(
    f"{user}:$6$salt{n}$hashhashhash{n}:19000:0:99999:7:::\n"
    for n, user in enumerate(["root", "daemon", "bin", "sys", "sync", "games", "alice"])
)
"""Parses as a mapping whose keys are the lines (each ends in ':' before the newline)."""
PASSWD = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n"
"""Parses as one multi-line string."""

SECRETS = ("root", "alice", "daemon", "19000", "hashhash", "$6$", "/bin/bash")


def refusal(text: str, tmp_path: Path, environ: dict[str, str] | None = None) -> str:
    path = tmp_path / "shadow"
    path.write_text(text)
    with pytest.raises(PolicyError) as caught:
        if environ is None:
            load_policy(str(path), environ={})
        else:
            load_policy(environ={**environ, "MESH_POLICY": str(path)})
    return str(caught.value)


@pytest.mark.parametrize("text", [SHADOW, PASSWD])
def test_a_file_that_is_not_a_policy_is_named_not_quoted(text: str, tmp_path: Path) -> None:
    message = refusal(text, tmp_path)
    assert message.startswith(f"{tmp_path / 'shadow'}: not a policy: "), message
    assert not [s for s in SECRETS if s in message.replace(str(tmp_path), "")], message


def test_mesh_policy_pointing_at_such_a_file_says_so_without_its_lines(tmp_path: Path) -> None:
    message = refusal(SHADOW, tmp_path, environ={})
    assert message.startswith(f"MESH_POLICY: {tmp_path / 'shadow'}: not a policy: "), message
    assert "keys that are not names" in message
    assert not [s for s in SECRETS if s in message.replace(str(tmp_path), "")], message
    assert "more" not in message  # no list of keys, not even a count of them


def test_a_real_policy_with_a_few_bad_keys_still_names_them(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("edge_defaults: {retry: {max_attemps: 3}}\nedgez: {}\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(str(path), environ={})
    message = str(caught.value)
    assert "max_attemps" in message and "edgez" in message, message


def test_an_experiment_loader_given_such_a_file_does_not_quote_it(tmp_path: Path) -> None:
    path = tmp_path / "shadow.yaml"
    path.write_text(SHADOW)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(str(path))
    message = str(caught.value).replace(str(tmp_path), "")
    assert "not an experiment: the top level has keys that are not names" in message
    assert not [s for s in SECRETS if s in message], message
