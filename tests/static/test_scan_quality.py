"""The corpus scorer (benchmarks/corpus): label matching, manifest checks, checkouts, the CLI.

Everything runs on tiny projects written here, so CI tests the scorer without the corpus.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _package() -> str:
    # benchmarks/ is not an installed package: load benchmarks/corpus under a private name.
    name = "gk_bench_corpus"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name,
            BENCH / "corpus" / "__init__.py",
            submodule_search_locations=[str(BENCH / "corpus")],
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return name


def _load(module: str) -> ModuleType:
    return importlib.import_module(f"{_package()}.{module}")


scoring = _load("scoring")
manifest = _load("manifest")
split = _load("split")
checkout = _load("checkout")
cli = _load("cli")
Label, Reported = scoring.Label, scoring.Reported


def label(
    line: int, start: int, end: int, expect: str = "flag", rule: str = "GK101", path: str = "a.py"
) -> object:
    return Label(rule=rule, path=path, line=line, start=start, end=end, expect=expect, why="w")


def found(line: int, rule: str = "GK101", path: str = "a.py") -> object:
    return Reported(path=path, line=line, rule=rule)


def outcomes(
    findings: list[object], labels: list[object], reviewed: tuple[str, ...] = ("a.py",)
) -> list[str]:
    judged, _ = scoring.judge(findings, labels, lambda p: p in reviewed)
    return [j.outcome for j in judged]


# -- matching -------------------------------------------------------------------------------------


def test_a_finding_anywhere_in_a_flag_span_is_a_true_positive_and_a_second_one_a_duplicate() -> (
    None
):
    labels = [label(10, 10, 20)]
    assert outcomes([found(10), found(15)], labels) == ["tp", "duplicate"]
    assert outcomes([found(21)], labels) == ["fp_unlabelled"]


def test_exact_line_wins_over_an_enclosing_span_then_the_innermost_span() -> None:
    outer, inner = label(10, 10, 40, expect="either"), label(12, 12, 20)
    assert outcomes([found(12)], [outer, inner]) == ["tp"]
    assert outcomes([found(10)], [outer, inner]) == ["accepted"]
    # a nested helper labelled clean inside a flagged tool: the helper's line is a false positive
    tool, helper = label(1, 1, 30, rule="GK201"), label(5, 5, 9, expect="clean", rule="GK201")
    assert outcomes([found(6, rule="GK201")], [tool, helper]) == ["fp_decoy"]
    assert outcomes([found(1, rule="GK201")], [tool, helper]) == ["tp"]


def test_rules_and_paths_must_agree() -> None:
    labels = [label(10, 10, 20, rule="GK201")]
    assert outcomes([found(10, rule="GK202")], labels) == ["fp_unlabelled"]
    assert outcomes([found(10, path="b.py")], labels) == ["unjudged"]


def test_test_modules_count_against_exhaustive_rules_only() -> None:
    findings = [found(3, path="tests/test_x.py"), found(3, rule="GK102", path="pkg/conftest.py")]
    assert outcomes(findings, []) == ["unjudged", "fp_test"]  # judged in path order


def test_recall_only_and_unscored_rules_never_count_as_false_positives() -> None:
    labels = [label(5, 5, 5, rule="GK102"), label(9, 9, 9, expect="clean", rule="GK102")]
    assert outcomes(
        [found(5, rule="GK102"), found(9, rule="GK102"), found(7, rule="GK102")], labels
    ) == [
        "tp",
        "unjudged",
        "unjudged",
    ]
    assert outcomes([found(5, rule="GK301")], labels) == ["unjudged"]


def test_missed_labels_and_tallies() -> None:
    labels = [label(10, 10, 20), label(30, 30, 35), label(40, 40, 45, expect="clean")]
    judged, missed = scoring.judge([found(11), found(41), found(50)], labels, lambda _: True)
    assert [m.line for m in missed] == [30]
    t = scoring.tally(judged, missed, "GK101")
    assert (t.tp, t.fp, t.fp_decoy, t.fp_unlabelled, t.fn) == (1, 2, 1, 1, 1)
    assert t.precision("GK101") == pytest.approx(1 / 3)
    assert t.recall() == pytest.approx(1 / 2)
    empty = scoring.Tally()
    assert empty.precision("GK101") is None
    assert empty.recall() is None
    assert scoring.tally(judged, missed, "GK102").precision("GK102") is None


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("tests/a.py", True),
        ("src/pkg/test/helpers.py", True),
        ("pkg/test_agent.py", True),
        ("pkg/agent_test.py", True),
        ("conftest.py", True),
        ("pkg/testing.py", False),
        ("contest/agent.py", False),
        ("latest_tools.py", False),
    ],
)
def test_is_test_path(path: str, is_test: bool) -> None:
    assert scoring.is_test_path(path) is is_test


# -- a tiny corpus written here -------------------------------------------------------------------

AGENT = """\
import anthropic

client = anthropic.Anthropic()
TOOLS = {}


def run(messages):
    while True:
        reply = client.messages.create(model="m", messages=messages)
        for block in reply.content:
            TOOLS[block.name](**block.input)
"""

HELPER = "def add(a, b):\n    return a + b\n"


LABELS = [
    ("GK101", "flag", "pkg/agent.py", 8, (8, 11), "while True around the model call"),
    ("GK202", "flag", "pkg/agent.py", 11, (11, 11), "TOOLS[name](**args)"),
    ("GK201", "clean", "pkg/helper.py", 1, (1, 2), "plain helper"),
]


def _label_toml(
    rule: str, expect: str, path: str, line: int, span: tuple[int, int], why: str
) -> str:
    return (
        f'\n[[label]]\nrule = "{rule}"\nexpect = "{expect}"\npath = "{path}"\n'
        f'line = {line}\nspan = [{span[0]}, {span[1]}]\nwhy = "{why}"\n'
    )


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def corpus(tmp_path: Path) -> dict[str, Path]:
    """A git project `acme/agent` checked out under corpus/, its manifest and its labels."""
    repo = tmp_path / "corpus" / "acme+agent"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg" / "agent.py").write_text(AGENT)
    (repo / "pkg" / "helper.py").write_text(HELPER)
    (repo / "tests" / "test_agent.py").write_text(AGENT)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "fixture")
    commit = _git(repo, "rev-parse", "HEAD")
    (tmp_path / "manifest.toml").write_text(
        f"""
[[repo]]
repo = "acme/agent"
commit = "{commit}"
licence = "MIT"
style = "raw-sdk"
scope = ["pkg/*"]
has_tests = true

[[repo.file]]
path = "pkg/agent.py"
sha256 = "{_sha(AGENT)}"

[[repo.file]]
path = "pkg/helper.py"
sha256 = "{_sha(HELPER)}"
"""
    )
    labels = tmp_path / "labels"
    labels.mkdir()
    blocks = "".join(_label_toml(*spec) for spec in LABELS)
    (labels / "acme+agent.toml").write_text(f'repo = "acme/agent"\ncommit = "{commit}"\n{blocks}')
    return {
        "root": tmp_path,
        "repo": repo,
        "manifest": tmp_path / "manifest.toml",
        "labels": labels,
    }


def test_manifest_and_labels_load(corpus: dict[str, Path]) -> None:
    (entry,) = manifest.load_manifest(corpus["manifest"])
    assert entry.dirname == "acme+agent"
    assert entry.in_scope("pkg/agent.py")
    assert not entry.in_scope("tests/test_agent.py")
    labels = manifest.load_labels(entry, corpus["labels"])
    assert [(lab.rule, lab.line, lab.start, lab.end) for lab in labels] == [
        ("GK101", 8, 8, 11),
        ("GK202", 11, 11, 11),
        ("GK201", 1, 1, 2),
    ]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('sha256 = "', 'sha256 = "x', "64 lowercase hex"),
        ('path = "pkg/helper.py"', 'path = "docs/helper.py"', "outside the scope"),
        ('licence = "MIT"\n', "", "'licence' must be a non-empty string"),
        ('scope = ["pkg/*"]', "scope = []", "scope lists no pattern"),
    ],
)
def test_malformed_manifests_are_refused(
    corpus: dict[str, Path], old: str, new: str, message: str
) -> None:
    text = corpus["manifest"].read_text()
    corpus["manifest"].write_text(text.replace(old, new, 1))
    with pytest.raises(manifest.CorpusError, match=message):
        manifest.load_manifest(corpus["manifest"])


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("span = [8, 11]", "span = [9, 11]", "must hold line 8"),
        ('path = "pkg/helper.py"', 'path = "pkg/other.py"', "not a reviewed file"),
        ('rule = "GK201"', 'rule = "GK999"', "unknown rule"),
        ('expect = "clean"', 'expect = "maybe"', "expect must be one of"),
        ('repo = "acme/agent"', 'repo = "acme/other"', "disagree with the manifest"),
        ("line = 11\nspan = [11, 11]", "line = 8\nspan = [8, 11]", None),
    ],
)
def test_malformed_labels_are_refused(
    corpus: dict[str, Path], old: str, new: str, message: str | None
) -> None:
    path = corpus["labels"] / "acme+agent.toml"
    path.write_text(path.read_text().replace(old, new, 1))
    (entry,) = manifest.load_manifest(corpus["manifest"])
    if message is None:
        # moving the dispatch label onto the loop's line is fine: it is another rule
        assert len(manifest.load_labels(entry, corpus["labels"])) == 3
        path.write_text(path.read_text().replace('rule = "GK202"', 'rule = "GK101"', 1))
        message = "two flag labels"
    with pytest.raises(manifest.CorpusError, match=message):
        manifest.load_labels(entry, corpus["labels"])


def test_verify_checkout_states(corpus: dict[str, Path]) -> None:
    (entry,) = manifest.load_manifest(corpus["manifest"])
    repo = corpus["repo"]
    assert manifest.verify_checkout(entry, repo) == ("ok", [])
    assert manifest.verify_checkout(entry, repo.parent / "nope")[0] == "missing"
    (repo / "pkg" / "helper.py").write_text(HELPER + "# edited\n")
    (repo / "pkg" / "new.py").write_text("x = 1\n")
    (repo / "pkg" / "test_new.py").write_text("x = 1\n")  # test modules are never reviewed
    state, problems = manifest.verify_checkout(entry, repo)
    assert state == "drifted"
    assert problems == ["changed pkg/helper.py", "unlisted in-scope file pkg/new.py"]
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "move on")
    assert manifest.verify_checkout(entry, repo)[0] == "wrong-commit"


def test_checkout_materialises_from_a_bare_mirror(corpus: dict[str, Path], tmp_path: Path) -> None:
    mirrors = tmp_path / "mirrors"
    mirrors.mkdir()
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(corpus["repo"]), str(mirrors / "acme+agent" / "repo")],
        check=True,
    )
    target = tmp_path / "fresh"
    argv = [
        "--mirrors",
        str(mirrors),
        "--corpus",
        str(target),
        "--manifest",
        str(corpus["manifest"]),
    ]
    assert checkout.main(argv) == 0
    assert (target / "acme+agent" / "pkg" / "agent.py").read_text() == AGENT
    assert checkout.main(argv) == 0  # an existing checkout at the commit is kept
    elsewhere = ["--mirrors", str(tmp_path / "empty"), "--corpus", str(tmp_path / "other")]
    assert checkout.main([*elsewhere, "--manifest", str(corpus["manifest"])]) == 1


FAKE_SCANNER = """\
import json, sys
findings = [
    {"path": "pkg/agent.py", "line": 9, "rule": "GK101", "symbol": "run"},
    {"path": "pkg/helper.py", "line": 1, "rule": "GK201", "symbol": "add"},
    {"path": "tests/test_agent.py", "line": 8, "rule": "GK101", "symbol": "run"},
    {"path": "pkg/agent.py", "line": 9, "rule": "GK102", "symbol": "create"},
]
print(json.dumps({"version": 1, "files": 3, "findings": findings, "errors": []}))
"""


def test_cli_scores_a_scan_command(
    corpus: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scanner = tmp_path / "fake_scan.py"
    scanner.write_text(FAKE_SCANNER)
    argv = [
        "--corpus", str(corpus["root"] / "corpus"),
        "--manifest", str(corpus["manifest"]),
        "--labels", str(corpus["labels"]),
        "--scan-cmd", f"{sys.executable} {scanner}",
        "--split", "both",
    ]  # fmt: skip
    assert cli.main([*argv, "--json"]) == 0
    halves = json.loads(capsys.readouterr().out)
    half = split.load_split().half("acme/agent")
    assert halves["dev" if half == "test" else "test"]["repos"] == []
    report = halves[half]
    rules = report["rules"]
    assert (rules["GK101"]["tp"], rules["GK101"]["fp_test"], rules["GK101"]["fn"]) == (1, 1, 0)
    assert rules["GK101"]["precision"] == 0.5
    assert (rules["GK201"]["fp_decoy"], rules["GK201"]["precision"]) == (1, 0.0)
    assert (rules["GK202"]["fn"], rules["GK202"]["recall"]) == (1, 0.0)
    assert rules["GK102"]["precision"] is None
    assert report["repos"][0]["missed"] == [
        {"rule": "GK202", "path": "pkg/agent.py", "line": 11, "symbol": ""}
    ]
    assert cli.main([*argv, "--rules", "GK101", "--detail"]) == 0
    text = capsys.readouterr().out
    assert "acme/agent" in text
    assert "fp_test GK101 acme/agent:tests/test_agent.py:8" in text
    assert "GK202" not in text
    assert f"== {half} half: 1 repositories ==" in text
    assert "Dev against sealed test" in text


def test_split_depends_on_the_name_alone_and_keeps_tuned_repositories_in_dev() -> None:
    chosen = split.load_split()
    assert all(chosen.half(repo) == "dev" for repo in chosen.tuned_before_split)
    names = [f"owner{i}/repo{i}" for i in range(400)]
    halves = [chosen.half(name) for name in names]
    assert halves == [chosen.half(name) for name in names]
    share = halves.count("test") / len(halves)
    assert abs(share - chosen.test_share) < 0.06
    everything_dev = split.Split(seed=chosen.seed, test_share=0.0, tuned_before_split=frozenset())
    assert {everything_dev.half(name) for name in names} == {"dev"}


# The halves of the repositories added under the first rule (seed, 0.9), before any batch existed.
# A later batch or a change of split.toml must never move one of them.
FIRST_RULE_HALVES = {
    "tumf/mcp-shell-server": "test",
    "MladenSU/cli-mcp-server": "test",
    "ktanaka101/mcp-server-duckdb": "test",
    "Doriandarko/claude-engineer": "test",
    "ollama/ollama-python": "dev",
    "designcomputer/mysql_mcp_server": "test",
    "NousResearch/Hermes-Function-Calling": "test",
    "haris-musa/excel-mcp-server": "test",
    "openai/gpt-oss": "test",
    "pab1it0/prometheus-mcp-server": "test",
    "mistralai/client-python": "test",
    "muellerberndt/mini-agi": "test",
    "isaacwasserman/mcp-snowflake-server": "test",
    "snap-stanford/MLAgentBench": "test",
    "anthropics/anthropic-sdk-python": "test",
    "motherduckdb/mcp-server-motherduck": "test",
    "neo4j-contrib/mcp-neo4j": "test",
    "google-gemini/gemini-fullstack-langgraph-quickstart": "test",
    "langchain-ai/langgraph-codeact": "test",
    "FoundationAgents/OpenManus": "test",
    "OthersideAI/self-operating-computer": "dev",
    "stitionai/devika": "test",
    "run-llama/multi-agent-concierge": "test",
    "langchain-ai/local-deep-researcher": "test",
    "langchain-ai/langgraph-bigtool": "test",
    "langchain-ai/langgraph-swarm-py": "test",
    "coleam00/ai-agents-masterclass": "test",
    "browser-use/browser-use": "test",
    "langchain-ai/langgraph-supervisor-py": "test",
    "ag2ai/build-with-ag2": "dev",
}


def test_existing_assignments_never_change() -> None:
    chosen = split.load_split()
    assert {repo: chosen.half(repo) for repo in FIRST_RULE_HALVES} == FIRST_RULE_HALVES
    assert not any(chosen.batch_of(repo) for repo in FIRST_RULE_HALVES)
    assert {chosen.half(repo) for repo in chosen.tuned_before_split} == {"dev"}


def test_every_new_repository_is_listed_in_a_batch() -> None:
    chosen = split.load_split()
    known = chosen.tuned_before_split | FIRST_RULE_HALVES.keys()
    stray = [e.repo for e in manifest.load_manifest() if e.repo not in known]
    assert [repo for repo in stray if chosen.batch_of(repo) is None] == []


def test_a_batch_assigns_by_its_own_seed_and_share() -> None:
    chosen = split.load_split()
    names = [f"owner{i}/repo{i}" for i in range(400)]
    batch = split.Batch(id="b", seed="another-seed", test_share=0.5, repos=frozenset(names))
    batched = split.Split(
        seed=chosen.seed,
        test_share=chosen.test_share,
        tuned_before_split=chosen.tuned_before_split,
        batches=(batch,),
    )
    halves = [batched.half(name) for name in names]
    assert abs(halves.count("test") / len(halves) - 0.5) < 0.06
    first_rule = [chosen.half(name) for name in names]
    assert halves != first_rule
    assert [batched.half(r) for r in FIRST_RULE_HALVES] == list(FIRST_RULE_HALVES.values())


def test_split_toml_rejects_a_repository_in_two_batches(tmp_path: Path) -> None:
    source = tmp_path / "split.toml"
    source.write_text(
        'seed = "s"\ntest_share = 0.9\ntuned_before_split = []\n'
        '[[batch]]\nid = "a"\nseed = "x"\ntest_share = 0.5\nrepos = ["o/r"]\n'
        '[[batch]]\nid = "b"\nseed = "y"\ntest_share = 0.5\nrepos = ["o/r"]\n'
    )
    with pytest.raises(manifest.CorpusError, match="already in batch a"):
        split.load_split(source)
    source.write_text(
        'seed = "s"\ntest_share = 0.9\ntuned_before_split = ["o/r"]\n'
        '[[batch]]\nid = "a"\nseed = "x"\ntest_share = 0.5\nrepos = ["o/r"]\n'
    )
    with pytest.raises(manifest.CorpusError, match="always dev"):
        split.load_split(source)


def test_cli_scores_the_dev_half_unless_told(
    corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--corpus", str(corpus["root"] / "corpus"),
        "--manifest", str(corpus["manifest"]),
        "--labels", str(corpus["labels"]),
        "--json",
    ]  # fmt: skip
    half = split.load_split().half("acme/agent")
    code = cli.main(argv)
    report = json.loads(capsys.readouterr().out)
    assert list(report) == ["dev"]
    assert code == (0 if half == "dev" else 2)


def test_cli_in_process_scan_runs_guardkit(
    corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--corpus", str(corpus["root"] / "corpus"),
        "--manifest", str(corpus["manifest"]),
        "--labels", str(corpus["labels"]),
        "--json",
        "--split", split.load_split().half("acme/agent"),
    ]  # fmt: skip
    assert cli.main(argv) == 0
    (half,) = json.loads(capsys.readouterr().out).values()
    (repo,) = half["repos"]
    assert repo["state"] == "ok"
    assert set(repo["rules"]) == {"GK101", "GK201", "GK202", "GK102"}


def test_cli_exit_status_for_a_broken_corpus(
    corpus: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--manifest", str(corpus["manifest"]), "--labels", str(corpus["labels"])]
    base += ["--split", "both"]
    assert cli.main(["--corpus", str(tmp_path / "nowhere"), *base]) == 2
    assert "acme/agent (missing)" in capsys.readouterr().err
    assert (
        cli.main(["--corpus", str(tmp_path / "nowhere"), *base, "--partial"]) == 2
    )  # nothing scored
    assert cli.main(["--corpus", str(tmp_path), *base, "--rules", "GK999"]) == 2
    assert cli.main(["--corpus", str(tmp_path), *base, "--repo", "acme/other"]) == 2
    assert "not in the manifest" in capsys.readouterr().err
    failing = tmp_path / "fail_scan.py"
    failing.write_text("print('no json')\n")
    corpus_dir = str(corpus["root"] / "corpus")
    assert (
        cli.main(["--corpus", corpus_dir, *base, "--scan-cmd", f"{sys.executable} {failing}"]) == 2
    )
    assert "printed no JSON report" in capsys.readouterr().err


def test_the_committed_corpus_is_well_formed() -> None:
    entries = manifest.load_manifest()
    assert len(entries) >= 20
    for entry in entries:
        labels = manifest.load_labels(entry)
        assert any(lab.expect == "flag" for lab in labels), entry.repo
