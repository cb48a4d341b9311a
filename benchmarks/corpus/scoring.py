"""Match a scanner's findings to hand labels and count true/false positives and misses.

Pure functions over plain values (no I/O), so the scorer is tested without the corpus.

A label says where a finding of one rule should (``flag``), may (``either``) or must not
(``clean``) appear: a 1-based ``line`` plus an accepted ``[start, end]`` span. A finding matches
the labels of its rule and path whose span holds its line; among those, a label on exactly that
line wins, then the innermost span, then ``flag`` over ``either`` over ``clean``. Then:

* ``flag`` label: a true positive (a second finding on the same label is a ``duplicate``);
* ``either`` label: ``accepted``, counted neither way (borderline places a reviewer accepts);
* ``clean`` label: a false positive on a decoy;
* no label, in a reviewed file, for a rule labelled exhaustively: an unlabelled false positive;
* in a test module (tests are excluded by default): a false positive of its own kind;
* anything else (an unreviewed file, a rule not scored): ``unjudged``.

Flag labels no finding matched are misses. Rules in ``RECALL_ONLY`` were labelled where easy, not
exhaustively: their false positives are never counted, so they get a recall and no precision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

__all__ = [
    "EXHAUSTIVE",
    "RECALL_ONLY",
    "Expect",
    "Judged",
    "Label",
    "Outcome",
    "Reported",
    "Tally",
    "is_test_path",
    "judge",
    "tally",
]

Expect = Literal["flag", "clean", "either"]
Outcome = Literal["tp", "duplicate", "accepted", "fp_decoy", "fp_unlabelled", "fp_test", "unjudged"]

EXHAUSTIVE: tuple[str, ...] = ("GK101", "GK201", "GK202")
RECALL_ONLY: tuple[str, ...] = ("GK102",)
_PREFERENCE: dict[Expect, int] = {"flag": 0, "either": 1, "clean": 2}


@dataclass(frozen=True, slots=True, kw_only=True)
class Label:
    """One hand label: where a finding of ``rule`` should, may or must not be reported."""

    rule: str
    path: str
    line: int
    start: int
    end: int
    expect: Expect
    symbol: str = ""
    why: str = ""
    kind: str = ""

    def covers(self, line: int) -> bool:
        return self.start <= line <= self.end


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class Reported:
    """A scanner finding reduced to what matching needs; ``path`` is repository-relative POSIX."""

    path: str
    line: int
    rule: str
    symbol: str = ""


@dataclass(frozen=True, slots=True)
class Judged:
    finding: Reported
    outcome: Outcome
    label: Label | None = None


@dataclass(slots=True)
class Tally:
    """Counts for one rule (and one repository, or summed over many)."""

    tp: int = 0
    fn: int = 0
    fp_decoy: int = 0
    fp_unlabelled: int = 0
    fp_test: int = 0
    duplicate: int = 0
    accepted: int = 0
    missed: list[Label] = field(default_factory=list)

    @property
    def fp(self) -> int:
        return self.fp_decoy + self.fp_unlabelled + self.fp_test

    def precision(self, rule: str) -> float | None:
        """``None`` for recall-only rules and when nothing was reported."""
        if rule in RECALL_ONLY or self.tp + self.fp == 0:
            return None
        return self.tp / (self.tp + self.fp)

    def recall(self) -> float | None:
        return None if self.tp + self.fn == 0 else self.tp / (self.tp + self.fn)

    def add(self, other: Tally) -> None:
        self.tp += other.tp
        self.fn += other.fn
        self.fp_decoy += other.fp_decoy
        self.fp_unlabelled += other.fp_unlabelled
        self.fp_test += other.fp_test
        self.duplicate += other.duplicate
        self.accepted += other.accepted
        self.missed.extend(other.missed)


def is_test_path(path: str) -> bool:
    """Test modules as the scan excludes them by default: tests/ or test/ folders, test_*.py,
    *_test.py and conftest.py."""
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
        return True
    return any(part in {"tests", "test"} for part in parts[:-1])


def _best(candidates: list[Label], line: int) -> Label:
    return min(
        candidates,
        key=lambda lab: (lab.line != line, lab.end - lab.start, _PREFERENCE[lab.expect]),
    )


def _judge_one(
    finding: Reported, labels: list[Label], reviewed: Callable[[str], bool], used: set[Label]
) -> Judged:
    scored = finding.rule in EXHAUSTIVE or finding.rule in RECALL_ONLY
    if not scored:
        return Judged(finding, "unjudged")
    if is_test_path(finding.path):
        return Judged(finding, "fp_test" if finding.rule in EXHAUSTIVE else "unjudged")
    candidates = [
        lab
        for lab in labels
        if lab.rule == finding.rule and lab.path == finding.path and lab.covers(finding.line)
    ]
    if not candidates:
        exhaustive = finding.rule in EXHAUSTIVE and reviewed(finding.path)
        return Judged(finding, "fp_unlabelled" if exhaustive else "unjudged")
    label = _best(candidates, finding.line)
    if label.expect == "either":
        return Judged(finding, "accepted", label)
    if label.expect == "clean":
        return Judged(finding, "fp_decoy" if finding.rule in EXHAUSTIVE else "unjudged", label)
    if label in used:
        return Judged(finding, "duplicate", label)
    used.add(label)
    return Judged(finding, "tp", label)


def judge(
    findings: Iterable[Reported], labels: Iterable[Label], reviewed: Callable[[str], bool]
) -> tuple[list[Judged], list[Label]]:
    """Judge every finding; return the judgements (in path/line order) and the missed labels.

    ``reviewed(path)`` says whether a file was reviewed (every label of an exhaustive rule is in
    it), so that an unmatched finding there is a false positive rather than unjudged.
    """
    label_list = list(labels)
    used: set[Label] = set()
    judged = [_judge_one(f, label_list, reviewed, used) for f in sorted(findings)]
    missed = [lab for lab in label_list if lab.expect == "flag" and lab not in used]
    return judged, missed


def tally(judged: Iterable[Judged], missed: Iterable[Label], rule: str) -> Tally:
    """The counts of one rule."""
    result = Tally()
    for item in judged:
        if item.finding.rule != rule or item.outcome == "unjudged":
            continue
        if item.outcome == "tp":
            result.tp += 1
        elif item.outcome == "duplicate":
            result.duplicate += 1
        elif item.outcome == "accepted":
            result.accepted += 1
        elif item.outcome == "fp_decoy":
            result.fp_decoy += 1
        elif item.outcome == "fp_unlabelled":
            result.fp_unlabelled += 1
        else:
            result.fp_test += 1
    result.missed = [lab for lab in missed if lab.rule == rule]
    result.fn = len(result.missed)
    return result
