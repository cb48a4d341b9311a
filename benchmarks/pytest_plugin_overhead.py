"""What the guardkit pytest plugin adds to a test suite: absent, loaded but inactive, active.

Run: ``.venv/bin/python benchmarks/pytest_plugin_overhead.py [--tests N] [--repeat R]``.

It writes a project with N trivial tests (each calls a plain helper, and every tenth one calls a
tool the static pass finds, so an active recorder has something to count) and times a whole
``python -m pytest`` subprocess (its CPU time, user + system: less sensitive to other load on
the machine than wall time), best of R, in three variants:

* ``-p no:guardkit``: the floor;
* ``inactive``: the plugin loaded, nothing asked of it (the default in every project);
* ``active``: ``--guard-coverage``: discovery, the runtime recorder, the report.

Plugin autoloading is off and the plugin is loaded with ``-p`` so that the other installed
plugins' start-up does not blur the figures. Each variant also runs a one-test suite, which
splits its cost into a fixed start-up part and a part per test, and ``import guardkit`` is timed
on its own: the entry point ``guardkit.plugins.pytest_plugin`` makes Python import the ``guardkit``
package first, before any plugin code runs. Target: inactive adds nothing per test and nothing
at start-up beyond that import; active a small multiple at most.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

PLUGIN = "guardkit.plugins.pytest_plugin"

APP = """
TOOL_SCHEMAS = [{"name": "search", "input_schema": {"type": "object"}}]


def do_search(query: str) -> str:
    return "found " + query


TOOLS = {"search": do_search}


def dispatch(agent, name, args):
    if agent.request(name, args)["decision"] != "allowed":
        return "denied"
    return TOOLS[name](**args)
"""

HELPERS = """
def add(a: int, b: int) -> int:
    return a + b
"""

VARIANTS: dict[str, tuple[str, ...]] = {
    "-p no:guardkit": (),
    "inactive": ("-p", PLUGIN),
    "active (--guard-coverage)": ("-p", PLUGIN, "--guard-coverage"),
}


def _test(index: int) -> str:
    if index % 10 == 0:
        return f"def test_{index}():\n    assert app.do_search('q{index}') == 'found q{index}'\n"
    return f"def test_{index}():\n    assert helpers.add({index}, 1) == {index + 1}\n"


def write_suite(folder: Path, tests: int) -> None:
    """A project of ``tests`` trivial tests, 100 per module."""
    (folder / "app.py").write_text(APP)
    (folder / "helpers.py").write_text(HELPERS)
    for start in range(0, tests, 100):
        body = "\n\n".join(_test(i) for i in range(start, min(tests, start + 100)))
        module = folder / f"test_suite_{start // 100}.py"
        module.write_text(f"import app\nimport helpers\n\n{body}")


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users have bytecode caches; the first run warms
    return env


IMPORT_PROBE = (
    "import time, pytest\n"
    "start = time.process_time()\n"
    "import guardkit\n"
    "print(time.process_time() - start)\n"
)


def import_cost(repeat: int) -> float:
    """CPU seconds of ``import guardkit`` after pytest's own imports, best of ``repeat``."""
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", IMPORT_PROBE],
                env=_env(),
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(repeat + 1)
    ]
    return min(runs[1:])


def _time(folder: Path, args: tuple[str, ...]) -> tuple[float, str]:
    env = _env()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {folder}:\n{done.stdout}{done.stderr}")
    return elapsed, done.stdout


def measure(tests: int, repeat: int) -> dict[str, tuple[float, float]]:
    """``{variant: (one-test seconds, N-test seconds)}``, best of ``repeat`` runs each."""
    out: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as small, tempfile.TemporaryDirectory() as big:
        write_suite(Path(small), 1)
        write_suite(Path(big), tests)
        best = {name: [float("inf"), float("inf")] for name in VARIANTS}
        # the first round warms the caches; interleaved, so a burst of load hits every variant
        for round_ in range(repeat + 1):
            warm = round_ > 0
            for name, args in VARIANTS.items():
                for slot, folder in enumerate((small, big)):
                    elapsed, stdout = _time(Path(folder), args)
                    if warm:
                        best[name][slot] = min(best[name][slot], elapsed)
                    if "--guard-coverage" in args and "TOTAL 1/1 tools guarded" not in stdout:
                        raise SystemExit(f"the active run found no tool:\n{stdout}")
        for name, (one, many) in best.items():
            out[name] = (one, many)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    figures = measure(options.tests, options.repeat)
    floor_one, floor_many = figures["-p no:guardkit"]
    print(
        f"pytest subprocess CPU seconds, best of {options.repeat}; {options.tests} trivial tests "
        f"(1 in 10 calls a tool); Python {sys.version.split()[0]}"
    )
    print(
        f"{'variant':<26} {'1 test':>8} {'ratio':>6} {f'{options.tests} tests':>11} {'ratio':>6} "
        f"{'start-up':>9} {'per test':>9}"
    )
    for name, (one, many) in figures.items():
        startup = (one - floor_one) * 1e3
        per_test = ((many - one) - (floor_many - floor_one)) / max(1, options.tests - 1) * 1e6
        print(
            f"{name:<26} {one:>7.3f}s {one / floor_one:>6.2f} {many:>10.3f}s "
            f"{many / floor_many:>6.2f} {startup:>+7.0f}ms {per_test:>+7.0f}us"
        )
    print("start-up and per test: added to the floor (-p no:guardkit)")
    print(
        f"of the start-up, `import guardkit` (the entry point's parent package, imported before "
        f"any plugin code runs): {import_cost(options.repeat) * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    main()
