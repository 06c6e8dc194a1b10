"""The project's own files name only things that exist: package data globs and the repo paths
that .env's comments point a reader to."""

from __future__ import annotations

import re
import tomllib

from tests.unit.deploy.deploy_sources import DOTENV, ROOT

# Any relative path with a folder in it: a list of top-level names goes stale when one moves.
_PATH = re.compile(r"(?<![\w./-])[A-Za-z_][\w.-]*/[\w./-]*\w")


def test_every_package_data_glob_packages_at_least_one_file() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = config.get("package-dir", {})
    empty = [
        f"{package}: {pattern}"
        for package, patterns in config["package-data"].items()
        for pattern in patterns
        if not any((ROOT / folders.get(package, package.replace(".", "/"))).glob(pattern))
    ]
    assert not empty, f"package-data globs that match no file: {empty}"


def test_every_path_named_in_dotenv_exists() -> None:
    comments = [line for line in DOTENV.read_text().splitlines() if line.startswith("#")]
    named = {path.rstrip(".") for line in comments for path in _PATH.findall(line)}
    assert named, "the pattern found no path at all in .env's comments"
    assert sorted(p for p in named if not (ROOT / p).exists()) == []
