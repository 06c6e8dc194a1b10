"""`mesh env`: the running mesh's Toxiproxy address and token as lines a shell can eval, and
nothing on stdout when there is nothing to eval."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.client.state import MeshState


def _state(state_dir: Path, toxiproxy: str | None, token: str | None) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    MeshState(
        gateway="127.0.0.1:1",
        toxiproxy=toxiproxy,
        services={},
        proxies={},
        pids={},
        policy="full",
        state_dir=str(state_dir),
        admin_token=token,
    ).save(state_dir)


def _eval(lines: str) -> dict[str, str]:
    """What a POSIX shell has after `eval "$(mesh env)"`."""
    script = f'eval {_quote(lines)}\nprintf \'%s\\n%s\' "$TOXIPROXY_URL" "$MESH_TOXIPROXY_TOKEN"'
    env = {
        k: v for k, v in os.environ.items() if k not in ("TOXIPROXY_URL", "MESH_TOXIPROXY_TOKEN")
    }
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env, check=True)
    url, _, token = out.stdout.partition("\n")
    return {"url": url, "token": token}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_env_prints_the_address_and_the_token_a_shell_can_eval(tmp_path: Path) -> None:
    _state(tmp_path, "http://127.0.0.1:18474", "tok-en_with.odd~chars/+=")
    result = CliRunner().invoke(app, ["env", "--state-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert _eval(result.stdout) == {
        "url": "http://127.0.0.1:18474",
        "token": "tok-en_with.odd~chars/+=",
    }


def test_env_without_admin_auth_gives_an_empty_token(tmp_path: Path) -> None:
    _state(tmp_path, "http://127.0.0.1:8474", None)
    result = CliRunner().invoke(app, ["env", "--state-dir", str(tmp_path)])
    assert result.exit_code == 0
    assert _eval(result.stdout) == {"url": "http://127.0.0.1:8474", "token": ""}


def test_env_with_nothing_to_eval_says_why_on_stderr_only(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["env", "--state-dir", str(tmp_path / "none")])
    assert missing.exit_code == 2 and missing.stdout == ""
    assert "no running mesh" in missing.stderr
    _state(tmp_path, None, "token-of-a-direct-mesh")
    direct = runner.invoke(app, ["env", "--state-dir", str(tmp_path)])
    assert direct.exit_code == 2 and direct.stdout == ""
    assert "--direct" in direct.stderr
