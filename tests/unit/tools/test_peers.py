"""tools.peers: a stamped binary is skipped; a refused version falls back to the nearest served."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from tools import peers

PEER = peers.Peer("toxiproxy-server", "github.com/Shopify/toxiproxy/v2", "cmd/server", "v2.12.0")
SERVED = "github.com/Shopify/toxiproxy/v2 v2.9.0 v2.11.0 v2.12.1 v2.13.0-rc1 v3.0.0"


class FakeGo:
    """Stands in for the go command: refuses the pinned version, lists SERVED, builds the rest."""

    def __init__(self, refuse: str) -> None:
        self.refuse = refuse
        self.calls: list[list[str]] = []

    def __call__(
        self, args: Sequence[str], cwd: Path, env: dict[str, str]
    ) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(args))
        if args[:3] == ["list", "-m", "-versions"]:
            return subprocess.CompletedProcess(list(args), 0, SERVED + "\n", "")
        if args[-1].endswith("@" + self.refuse):
            error = f"go: {args[-1]}: invalid version: unknown revision {self.refuse}"
            return subprocess.CompletedProcess(list(args), 1, "", error)
        (Path(env["GOBIN"]) / "server").write_text("binary")
        return subprocess.CompletedProcess(list(args), 0, "", "")


def test_refused_version_builds_the_nearest_served_and_records_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeGo(refuse="v2.12.0")
    monkeypatch.setattr(peers, "_go", fake)
    assert peers.ensure(PEER, tmp_path, {})
    assert (tmp_path / "toxiproxy-server").read_text() == "binary"
    stamp = (tmp_path / "toxiproxy-server.version").read_text().splitlines()
    assert stamp == ["v2.12.1", "refused v2.12.0, used v2.12.1"]
    assert "refused" in capsys.readouterr().out


def test_a_stamped_binary_is_not_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGo(refuse="none")
    monkeypatch.setattr(peers, "_go", fake)
    assert peers.ensure(PEER, tmp_path, {})
    assert len(fake.calls) == 1
    assert peers.ensure(PEER, tmp_path, {})
    assert len(fake.calls) == 1


def test_a_stamp_for_another_version_rebuilds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeGo(refuse="none")
    monkeypatch.setattr(peers, "_go", fake)
    (tmp_path / "toxiproxy-server").write_text("old")
    (tmp_path / "toxiproxy-server.version").write_text("v2.11.0\n")
    assert peers.ensure(PEER, tmp_path, {})
    assert (tmp_path / "toxiproxy-server.version").read_text() == "v2.12.0\n"


def test_compose_pins_the_versions_make_peers_builds() -> None:
    from tests.unit.deploy.deploy_sources import read_dotenv

    built = {peer.name: peer.version for peer in peers.PEERS}
    images = {
        key: value.rsplit(":", 1)[1] for key, value in read_dotenv().items() if "IMAGE" in key
    }
    assert images["TOXIPROXY_IMAGE"] == built["toxiproxy-server"].removeprefix("v")
    assert images["MAILPIT_IMAGE"] == built["mailpit"]
    # Jaeger's module v1.(63+N).0 is its image 2.N.0 (deploy/README.md has the table).
    major, minor, patch = (int(part) for part in built["jaeger"].removeprefix("v").split("."))
    assert major == 1
    assert images["JAEGER_IMAGE"] == f"2.{minor - 63}.{patch}"


class FakeGoBuild:
    """Stands in for `go build -o OUT .`: writes OUT and counts builds."""

    def __init__(self) -> None:
        self.builds: list[Path] = []

    def __call__(
        self, args: Sequence[str], cwd: Path, env: dict[str, str]
    ) -> subprocess.CompletedProcess[str]:
        assert args[0] == "build"
        self.builds.append(cwd)
        Path(args[args.index("-o") + 1]).write_text("binary")
        return subprocess.CompletedProcess(list(args), 0, "", "")


def test_the_load_generator_is_rebuilt_when_its_source_changes_and_only_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (loadgen,) = [peer for peer in peers.PEERS if peer.name == "mesh-loadgen"]
    source = tmp_path / "repo" / "grpc_resilience_mesh" / "loadgen" / "go"
    source.mkdir(parents=True)
    (source / "main.go").write_text("package main\n")
    (source / "go.mod").write_text("module mesh/tools/loadgen\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = FakeGoBuild()
    monkeypatch.setattr(peers, "ROOT", tmp_path / "repo")
    monkeypatch.setattr(peers, "_go", fake)
    assert peers.ensure(loadgen, bin_dir, {})
    assert fake.builds == [source] and (bin_dir / "mesh-loadgen").read_text() == "binary"
    first = (bin_dir / "mesh-loadgen.version").read_text().strip()
    assert first.startswith("src-")
    assert peers.ensure(loadgen, bin_dir, {})  # up to date: skipped
    (source / "README").write_text("not a source")
    assert peers.ensure(loadgen, bin_dir, {})  # nor does a file that is not built
    assert len(fake.builds) == 1
    (source / "main.go").write_text("package main // edited\n")
    assert peers.ensure(loadgen, bin_dir, {})
    assert len(fake.builds) == 2
    assert (bin_dir / "mesh-loadgen.version").read_text().strip() not in ("", first)


class FakeMvn:
    """Stands in for `mvn package -Dlimits.build.dir=OUT`: fails offline once if told to, then
    writes OUT/NAME.jar and OUT/NAME-lib/."""

    def __init__(self, offline_fails: bool) -> None:
        self.offline_fails = offline_fails
        self.calls: list[list[str]] = []

    def __call__(
        self, args: Sequence[str], cwd: Path, env: dict[str, str]
    ) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(args))
        if "-o" in args and self.offline_fails:
            self.offline_fails = False
            return subprocess.CompletedProcess(list(args), 1, "offline: artifact not cached", "")
        out = Path(next(a for a in args if a.startswith("-Dlimits.build.dir=")).split("=", 1)[1])
        (out / "limits-differential-lib").mkdir(parents=True, exist_ok=True)
        (out / "limits-differential-lib" / "core.jar").write_text("library")
        (out / "limits-differential.jar").write_text(f"jar {len(self.calls)}")
        return subprocess.CompletedProcess(list(args), 0, "", "")


def maven_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[peers.Peer, Path]:
    (driver,) = [peer for peer in peers.PEERS if peer.builder == "maven"]
    source = tmp_path / "repo" / driver.package
    (source / "src").mkdir(parents=True)
    (source / "pom.xml").write_text("<project/>")
    (source / "src" / "Main.java").write_text("class Main {}")
    (tmp_path / "bin").mkdir()
    monkeypatch.setattr(peers, "ROOT", tmp_path / "repo")
    return driver, source


def test_the_maven_driver_builds_offline_first_then_online_and_only_when_its_sources_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver, source = maven_project(tmp_path, monkeypatch)
    fake = FakeMvn(offline_fails=True)
    monkeypatch.setattr(peers, "_mvn", fake)
    bin_dir = tmp_path / "bin"
    assert peers.ensure(driver, bin_dir, {})
    assert ["-o" in call for call in fake.calls] == [True, False]  # the cold build went online
    assert (bin_dir / "limits-differential.jar").read_text() == "jar 2"
    assert (bin_dir / "limits-differential-lib" / "core.jar").read_text() == "library"
    assert (bin_dir / "limits-differential.jar.version").read_text().startswith("src-")
    (source / "README.md").write_text("not a source")
    assert peers.ensure(driver, bin_dir, {})
    assert len(fake.calls) == 2
    (source / "src" / "Main.java").write_text("class Main { int edited; }")
    assert peers.ensure(driver, bin_dir, {})
    assert fake.calls[-1][0] == "-o" and len(fake.calls) == 3  # warm: offline was enough


def test_without_mvn_the_driver_is_skipped_with_a_message_and_the_go_peers_still_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    driver, _ = maven_project(tmp_path, monkeypatch)
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "mvn" else tool)
    monkeypatch.setattr(peers, "_mvn", FakeMvn(offline_fails=False))
    fake = FakeGo(refuse="none")
    monkeypatch.setattr(peers, "_go", fake)
    monkeypatch.setattr(peers, "PEERS", (PEER, driver))
    bin_dir = tmp_path / "bin"
    assert peers.main(["--bin", str(bin_dir)]) == 0
    assert (bin_dir / "toxiproxy-server").is_file()
    assert not (bin_dir / "limits-differential.jar").exists()
    assert "no `mvn` on PATH: limits-differential.jar not built" in capsys.readouterr().err


def test_a_long_build_says_it_is_still_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A build that outlasts the heartbeat prints a line each beat (make demo sat silent 212 s
    after "building mesh-loadgen ...")."""
    beats = 0

    def slow_build(*args: object) -> tuple[bool, str]:
        nonlocal beats
        for _ in range(400):  # until a beat was printed, at most ~4 s
            beats = capsys.readouterr().out.count("still building")  # drains: count the rest
            if beats:
                break
            threading.Event().wait(0.01)
        return True, ""

    monkeypatch.setattr(peers, "HEARTBEAT_S", 0.02)
    monkeypatch.setattr(peers, "_build", slow_build)
    assert peers.ensure(PEER, tmp_path, {})
    assert beats >= 1
    assert "peers: built toxiproxy-server" in capsys.readouterr().out


def test_ghz_is_pinned_at_the_version_the_proxy_serves_not_latest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `ghz@latest` resolves to v0.93.0 (2021): the peer must name v0.120.0, and build its
    # command package with `go install ...@v0.120.0`, stamping main.version.
    (ghz,) = [p for p in peers.PEERS if p.name == "ghz"]
    calls: list[list[str]] = []

    def go(args: Sequence[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        calls.append(list(args))
        (Path(env["GOBIN"]) / "ghz").write_text("binary")
        return subprocess.CompletedProcess(list(args), 0, "", "")

    monkeypatch.setattr(peers, "_go", go)
    assert peers.ensure(ghz, tmp_path, {})
    assert calls == [
        ["install", "-ldflags=-X main.version=v0.120.0", "github.com/bojand/ghz/cmd/ghz@v0.120.0"]
    ]
    assert (tmp_path / "ghz.version").read_text() == "v0.120.0\n"
