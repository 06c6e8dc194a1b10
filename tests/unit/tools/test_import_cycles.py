"""tools/import_cycles.py, which `make lint` runs over services/mesh and chaos."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.import_cycles import cycles, graph, main


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_three_module_circle_is_found_and_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "a.py": "from pkg import b\n",
            "b.py": "import pkg.c\n",
            "c.py": "def late() -> None:\n    from pkg.a import thing\n",
            "d.py": "from pkg import a\n",  # points into the circle, is not on it
        },
    )
    assert cycles(graph({pkg: "pkg"})) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
    assert main([f"{pkg}=pkg"]) == 1
    assert "import cycle: pkg.a -> pkg.b -> pkg.c -> pkg.a" in capsys.readouterr().out


def test_relative_imports_and_packages_resolve(tmp_path: Path) -> None:
    pkg = write(
        tmp_path / "pkg",
        {
            "__init__.py": "from .sub import x\n",
            "sub/__init__.py": "from .leaf import x\n",
            "sub/leaf.py": "from .. import other\nx = 1\n",
            "other.py": "from . import sub\n",
        },
    )
    g = graph({pkg: "pkg"})
    assert g["pkg"] == {"pkg.sub"}
    assert g["pkg.sub"] == {"pkg.sub.leaf"}
    assert g["pkg.sub.leaf"] == {"pkg.other"}
    assert cycles(g) == [["pkg.other", "pkg.sub", "pkg.sub.leaf", "pkg.other"]]


def test_outside_packages_make_no_edge_and_type_checking_imports_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "a.py": "import os\nimport yaml\nfrom pkg import b\n",
            "b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.a import A\nelse:\n    import pkg.c\n"
            ),
            "c.py": "",
        },
    )
    g = graph({pkg: "pkg"})
    assert g["pkg.a"] == {"pkg.b"} and g["pkg.b"] == {"pkg.a", "pkg.c"}
    # A cycle behind `if TYPE_CHECKING:` is still a cycle: the two files cannot be read apart.
    assert main([f"{pkg}=pkg"]) == 1
    assert "import cycle: pkg.a -> pkg.b -> pkg.a" in capsys.readouterr().out


def test_a_cycle_across_two_packages_is_found(tmp_path: Path) -> None:
    one = write(tmp_path / "one", {"__init__.py": "", "x.py": "import two.y\n"})
    two = write(tmp_path / "two", {"__init__.py": "", "y.py": "from one.x import f\n"})
    assert cycles(graph({one: "one", two: "two"})) == [["one.x", "two.y", "one.x"]]


def test_bad_arguments_are_a_usage_error() -> None:
    assert main([]) == 2
    assert main(["services/mesh"]) == 2
