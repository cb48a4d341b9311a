"""The wheel installs codemods/ and plugins/ inside the guardkit namespace, every subpackage."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("guardkit-*.whl")
    return built


def _source_packages() -> set[str]:
    found = set()
    for folder, namespace in (
        ("guardkit", "guardkit"),
        ("codemods", "guardkit/codemods"),
        ("plugins", "guardkit/plugins"),
    ):
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(f"{namespace}/{relative}".removesuffix("/."))
    return found


def test_every_subpackage_is_in_the_wheel(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    packages = {name.rsplit("/", 1)[0] for name in names if name.endswith("/__init__.py")}
    assert _source_packages() <= packages
    assert "guardkit/py.typed" in names
    assert not any(name.startswith(("codemods/", "plugins/", "tests/")) for name in names)


def test_the_installed_wheel_imports_both_namespaces(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    # -S skips site processing, so the editable install's path hook does not load; the
    # dependencies come from this venv's site-packages, guardkit only from the wheel.
    code = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; "
        "import guardkit, guardkit.codemods, guardkit.plugins; "
        "print(guardkit.__file__); print(guardkit.codemods.__file__); "
        "print(guardkit.plugins.__file__)"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code, str(target), sysconfig.get_paths()["purelib"]],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    for line in done.stdout.splitlines():
        assert line.startswith(str(target)), line
