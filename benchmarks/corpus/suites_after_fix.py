"""Test-half repositories' own test suites and linters, before and after ``guardkit fix --write``.

Usage (from the repository root; each repository takes a minute or two, most of it pip):
    python benchmarks/corpus/suites_after_fix.py --corpus /work/corpus --work /tmp/suites \
        [--repo owner/name ...] [--keep]

For each repository in ``SUITES`` (the test-half ones whose suites run offline) the checkout is
copied to ``WORK/<name>`` (the checkout itself is never touched) and a fresh virtualenv is made
at ``WORK/venv-<name>`` with the running interpreter (Python 3.11 here); then:

1. the repository is installed as its manifest ``tests`` says and its suite runs: *before*;
2. the repository's own linters (the ones its configuration declares, installed from the
   registry) run on the files ``fix`` is about to change, in their original state;
3. guardkit (this checkout, ``pip install``) goes into the same virtualenv,
   ``guardkit fix --write`` runs on the manifest's scan targets, then ``guardkit scan``; the
   extras fix added to the dependencies (``guardkit[langchain]>=0.1``) are installed next;
4. the suite runs three times: with no configuration (a guarded call then fails closed, which
   shows whether the suite reaches the fixed code), with the one line docs/scan.md gives a
   fixed project's tests (``-o usefixtures=guard_agent``), and with the run-time step
   (``GUARDKIT_AGENT``, ``GUARDKIT_DB``, ``GUARDKIT_POLICY=guardkit-policy.toml``, the skeleton
   fix wrote);
5. the linters run again on the changed files; a finding after that is not among the ones before
   (compared without line numbers, which the fix moves; mypy's by file and error code, since its
   messages quote argument types a fix may add to) is one the fix introduced.

Prints one row per repository; exit status 0 when every suite passes as it did before with the
fixture line and no linter finding is new. ``--keep`` keeps existing copies and virtualenvs
(re-running fix on an already fixed copy is not a fresh measurement: leave it off for figures).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "corpus"

from .manifest import load_manifest, verify_checkout

__all__ = ["SUITES", "Suite", "main"]

ROOT = Path(__file__).resolve().parents[2]
RULES = ("GK101", "GK201", "GK202")
#: A suite run longer than this is stopped: with the skeleton policy a tool it marks
#: ``requires_approval`` waits for a human (300 s a call), and nobody approves here.
SUITE_TIMEOUT = 240
_SKIP = frozenset({".git", "__pycache__", ".guardkit_cache"})
_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected)")
#: ``path:line:col:`` or ``path:line:`` at the start of a linter's line: the line moves, the
#: finding does not.
_LOCATION = re.compile(r"^([^:\s]+\.py):\d+(?::\d+)?:")
_UNLINED = r"\1:"
_MYPY_MESSAGE = re.compile(r"^(\S+: error:) .*\[([\w-]+)\]$")
_EXTRAS = re.compile(r"^Added guardkit\[([\w,-]+)\]", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Suite:
    """How one repository installs, tests and lints (from its manifest entry and its config)."""

    repo: str
    install: tuple[str, ...]
    pytest: tuple[str, ...]
    #: The linters its configuration declares: ``ruff``, ``ruff-format``, ``black``, ``isort``,
    #: ``mypy``; each is installed as the spec beside it.
    linters: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.repo.split("/", 1)[1]


SUITES: tuple[Suite, ...] = (
    Suite(
        "tumf/mcp-shell-server",
        ("-e", ".[test]"),
        ("tests", "-q", "--no-cov"),
        {"ruff": "ruff", "black": "black", "isort": "isort", "mypy": "mypy"},
    ),
    Suite(
        "MladenSU/cli-mcp-server",
        ("-e", ".", "pytest", "pytest-asyncio", "mcp<2"),
        ("tests", "-q"),
    ),
    Suite(
        "ktanaka101/mcp-server-duckdb",
        ("-e", ".", "pytest", "pytest-asyncio"),
        ("tests", "-q"),
        {"ruff": "ruff", "ruff-format": "ruff"},
    ),
    Suite(
        "designcomputer/mysql_mcp_server",
        ("-e", ".", "mcp<2", "pytest", "pytest-asyncio"),
        ("tests", "-q"),
        {"black": "black>=24.0.0", "isort": "isort>=5.12.0", "mypy": "mypy>=1.0.0"},
    ),
    Suite(
        "pab1it0/prometheus-mcp-server",
        ("-e", ".", "pytest", "pytest-asyncio", "pytest-mock", "pytest-cov"),
        ("tests", "-q", "--no-cov", "--ignore", "tests/test_docker_integration.py"),
    ),
    Suite(
        "anthropics/anthropic-sdk-python",
        (
            "-e",
            ".",
            "respx",
            "pytest",
            "pytest-asyncio",
            "pytest-xdist",
            "time-machine",
            "dirty-equals",
            "rich",
            "inline-snapshot",
            "http-snapshot[httpx]==0.1.9",
        ),
        ("tests/lib/tools", "-q", "-n", "0"),
        {"ruff": "ruff", "ruff-format": "ruff", "mypy": "mypy==1.17"},
    ),
    Suite(
        "langchain-ai/langgraph-codeact",
        ("-e", ".", "pytest"),
        ("tests", "-q"),
        {"ruff": "ruff>=0.9.4", "ruff-format": "ruff>=0.9.4", "mypy": "mypy>=1.8.0"},
    ),
    Suite(
        "langchain-ai/langgraph-bigtool",
        ("-e", ".", "pytest", "pytest-asyncio", "numpy", "pytest-socket"),
        ("tests/unit_tests", "-q"),
        {"ruff": "ruff>=0.9.4", "ruff-format": "ruff>=0.9.4", "mypy": "mypy>=1.8.0"},
    ),
    Suite(
        "langchain-ai/langgraph-swarm-py",
        ("-e", ".", "pytest", "langchain", "langchain-openai"),
        ("tests", "-q"),
        {"ruff": "ruff>=0.9,<1", "ruff-format": "ruff>=0.9,<1", "mypy": "mypy>=1,<2"},
    ),
    Suite(
        "langchain-ai/langgraph-supervisor-py",
        ("-e", ".", "pytest", "langchain"),
        ("tests", "-q"),
        {"ruff": "ruff>=0.9.4", "ruff-format": "ruff>=0.9.4", "mypy": "mypy>=1.8.0"},
    ),
)


@dataclass(slots=True)
class Outcome:
    repo: str
    before: str = ""
    no_config: str = ""
    fixture: str = ""
    runtime: str = ""
    changed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    lint_before: Counter[str] = field(default_factory=Counter)
    lint_after: Counter[str] = field(default_factory=Counter)
    error: str = ""

    @property
    def new_lint(self) -> list[str]:
        return sorted((self.lint_after - self.lint_before).elements())

    @property
    def ok(self) -> bool:
        return not self.error and self.fixture == self.before and not self.new_lint


def _run(
    cmd: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: int = 1800
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    try:
        return subprocess.run(
            list(cmd),
            cwd=cwd,
            env=full,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, -1, "", f"timed out after {timeout} s")


def _summary(done: subprocess.CompletedProcess[str]) -> str:
    """pytest's closing counts (``242 passed, 4 skipped``), or why there are none."""
    for line in reversed(done.stdout.splitlines()):
        counts = _SUMMARY.findall(line)
        if counts and (" in " in line or line.startswith("=")):
            return ", ".join(f"{n} {word}" for n, word in counts)
    tail = (done.stderr or done.stdout).strip().splitlines()
    return f"no summary (exit {done.returncode}): {tail[-1] if tail else ''}"


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not _SKIP.intersection(p.relative_to(root).parts)
    }


def _lint(suite: Suite, venv: Path, copy: Path, files: Sequence[str]) -> Counter[str]:
    """The linters' findings on ``files``, one string each, without line numbers."""
    found: Counter[str] = Counter()
    if not files:
        return found
    bin_ = venv / "bin"
    cache = copy.parent / f"lint-cache-{suite.name}"
    for linter in suite.linters:
        if linter == "ruff":
            cmd = [str(bin_ / "ruff"), "check", "--no-cache", "--output-format", "concise"]
        elif linter == "ruff-format":
            cmd = [str(bin_ / "ruff"), "format", "--no-cache", "--check"]
        elif linter == "black":
            cmd = [str(bin_ / "black"), "--check"]
        elif linter == "isort":
            cmd = [str(bin_ / "isort"), "--check-only"]
        else:
            cmd = [
                str(bin_ / "mypy"),
                "--cache-dir",
                str(cache),
                "--no-error-summary",
                "--no-pretty",
            ]
        done = _run([*cmd, *files], copy)
        for raw in (done.stdout + done.stderr).splitlines():
            line = raw.strip()
            if not line or line.startswith(("All done", "Found ", "Success", "Skipped", "[*]")):
                continue
            if re.match(r"^\d+ files? (would be|left|already)", line) or "file would be" in line:
                continue
            if linter == "mypy" and ": note:" in line:
                continue
            line = _LOCATION.sub(_UNLINED, line)
            if linter == "mypy":
                # The message quotes the call's argument types, which change when fix adds an
                # argument to a call mypy already rejected: a finding is its file and its code.
                line = _MYPY_MESSAGE.sub(r"\1 [\2]", line)
            found[f"{linter}: {line}"] += 1
    return found


def _pytest(
    suite: Suite, venv: Path, copy: Path, *extra: str, env: Mapping[str, str] | None = None
) -> str:
    cmd = [str(venv / "bin" / "python"), "-m", "pytest", *suite.pytest, "-p", "no:cacheprovider"]
    return _summary(_run([*cmd, *extra], copy, env, timeout=SUITE_TIMEOUT))


def _install_guardkit(pip: Sequence[str], copy: Path, extras: str) -> str:
    # installed as a user installs it (README: ``pip install /path/to/guardkit``), not
    # editable: mypy cannot follow setuptools' editable import hook
    installed = _run([*pip, f"{ROOT}{extras}"], copy)
    if installed.returncode:
        return f"guardkit{extras} install failed: {installed.stderr.strip().splitlines()[-1:]}"
    return ""


def run(
    suite: Suite,
    checkout: Path,
    work: Path,
    targets: Sequence[str],
    files: Mapping[str, str],
    *,
    keep: bool,
) -> Outcome:
    out = Outcome(suite.repo)
    copy = work / suite.name
    venv = work / f"venv-{suite.name}"
    if not keep:
        shutil.rmtree(copy, ignore_errors=True)
        shutil.rmtree(venv, ignore_errors=True)
    if not copy.exists():
        shutil.copytree(checkout, copy, symlinks=True)
    if not venv.exists():
        _run([sys.executable, "-m", "venv", str(venv)], work)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    installed = _run([*pip, *suite.install, *sorted(set(suite.linters.values()))], copy)
    if installed.returncode:
        out.error = f"install failed: {installed.stderr.strip().splitlines()[-1:]}"
        return out
    out.before = _pytest(suite, venv, copy)
    if error := _install_guardkit(pip, copy, ""):
        out.error = error
        return out
    original = {p: (copy / p).read_bytes() for p in _digests(copy)}
    before = _digests(copy)
    guardkit = str(venv / "bin" / "guardkit")
    fixed = _run([guardkit, "fix", "--write", *targets], copy)
    if fixed.returncode not in (0, 1):
        out.error = f"fix exited {fixed.returncode}: {fixed.stderr.strip().splitlines()[-1:]}"
        return out
    # the extras fix added to the dependencies (``guardkit[langchain]>=0.1``), as a user's
    # next ``pip install`` would bring them
    extras = sorted({x for m in _EXTRAS.findall(fixed.stdout) for x in m.split(",") if x})
    if extras and (error := _install_guardkit(pip, copy, f"[{','.join(extras)}]")):
        out.error = error
        return out
    after = _digests(copy)
    out.changed = sorted(p for p, h in after.items() if before.get(p) != h)
    scanned = _run([guardkit, "scan", "--format", "json", *targets], copy)
    report = json.loads(scanned.stdout or "{}")
    out.left = [
        f"{f['rule']} {f['path']}:{f['line']}"
        for f in report.get("findings", [])
        if f["rule"] in RULES and f["path"] in files
    ]
    # Lint the changed Python files as they were, then as fix left them.
    py = [p for p in out.changed if p.endswith(".py") and p in original]
    fixed_text = {p: (copy / p).read_bytes() for p in out.changed}
    for p in out.changed:
        if p in original:
            (copy / p).write_bytes(original[p])
        else:
            (copy / p).unlink()
    out.lint_before = _lint(suite, venv, copy, py)
    for p, text in fixed_text.items():
        (copy / p).write_bytes(text)
    out.lint_after = _lint(suite, venv, copy, py)
    out.no_config = _pytest(suite, venv, copy)
    out.fixture = _pytest(suite, venv, copy, "-o", "usefixtures=guard_agent")
    ledger = work / f"ledger-{suite.name}.db"
    ledger.unlink(missing_ok=True)
    runtime = {"GUARDKIT_AGENT": f"{suite.name}-suite", "GUARDKIT_DB": str(ledger)}
    if (copy / "guardkit-policy.toml").exists():
        runtime["GUARDKIT_POLICY"] = str(copy / "guardkit-policy.toml")
    out.runtime = _pytest(suite, venv, copy, env=runtime)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="suites_after_fix.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--corpus", required=True, type=Path)
    parser.add_argument("--work", default=Path("/tmp/suites"), type=Path)
    parser.add_argument("--repo", action="append", default=[])
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    entries = {e.repo: e for e in load_manifest()}
    args.work.mkdir(parents=True, exist_ok=True)
    results = []
    for suite in SUITES:
        if args.repo and suite.repo not in args.repo:
            continue
        entry = entries[suite.repo]
        checkout = args.corpus / entry.dirname
        if verify_checkout(entry, checkout)[0] != "ok":
            results.append(Outcome(suite.repo, error="checkout missing or drifted"))
            continue
        result = run(suite, checkout, args.work, entry.scan, entry.files, keep=args.keep)
        results.append(result)
        _print(result)
    return 0 if results and all(r.ok for r in results) else 1


def _print(r: Outcome) -> None:
    print(f"## {r.repo}{'' if r.ok else '  (NOT OK)'}")
    if r.error:
        print(f"  error: {r.error}")
        return
    print(f"  before:                 {r.before}")
    print(f"  after fix, no config:   {r.no_config}")
    print(f"  after fix, guard_agent: {r.fixture}")
    print(f"  after fix, GUARDKIT_*:  {r.runtime}")
    print(f"  changed: {', '.join(r.changed) or 'nothing'}")
    print(f"  left (GK101/201/202 in reviewed files): {len(r.left)}")
    for line in r.left:
        print(f"    {line}")
    was, now = sum(r.lint_before.values()), sum(r.lint_after.values())
    print(f"  lint on changed .py: {was} before, {now} after, {len(r.new_lint)} new")
    for line in r.new_lint:
        print(f"    new: {line}")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
