"""Per-rule and per-repository tables (text) and the same figures as JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from .manifest import CheckoutState, RepoEntry
from .scoring import Judged, Label, Tally, tally

__all__ = ["RepoResult", "render_gap", "render_json", "render_text", "totals"]


@dataclass(slots=True)
class RepoResult:
    entry: RepoEntry
    state: CheckoutState
    problems: list[str] = field(default_factory=list)
    judged: list[Judged] = field(default_factory=list)
    missed: list[Label] = field(default_factory=list)
    scan_errors: list[str] = field(default_factory=list)

    def tally(self, rule: str) -> Tally:
        return tally(self.judged, self.missed, rule)


def totals(results: Sequence[RepoResult], rules: Sequence[str]) -> dict[str, Tally]:
    summed = {rule: Tally() for rule in rules}
    for result in results:
        if result.state == "ok":
            for rule in rules:
                summed[rule].add(result.tally(rule))
    return summed


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _rule_rows(summed: dict[str, Tally]) -> list[list[str]]:
    rows = []
    for rule, t in summed.items():
        rows.append(
            [
                rule,
                str(t.tp),
                str(t.fp),
                f"{t.fp_decoy}/{t.fp_unlabelled}/{t.fp_test}",
                str(t.fn),
                str(t.duplicate),
                str(t.accepted),
                _ratio(t.precision(rule)),
                _ratio(t.recall()),
            ]
        )
    return rows


def _repo_rows(results: Sequence[RepoResult], rules: Sequence[str]) -> list[list[str]]:
    rows = []
    for result in results:
        if result.state != "ok":
            rows.append([result.entry.repo, result.entry.style, result.state, *["" for _ in rules]])
            continue
        scored = [j for j in result.judged if j.outcome != "unjudged"]
        cells = []
        for rule in rules:
            t = result.tally(rule)
            cells.append(f"{t.tp}/{t.fp}/{t.fn}")
        rows.append([result.entry.repo, result.entry.style, str(len(scored)), *cells])
    return rows


def _details(results: Sequence[RepoResult], rules: Sequence[str]) -> list[str]:
    lines = []
    for result in results:
        for lab in result.missed:
            if lab.rule in rules:
                lines.append(
                    f"  missed {lab.rule} {result.entry.repo}:{lab.path}:{lab.line} "
                    f"{lab.symbol} ({lab.kind or '-'}) - {lab.why}"
                )
        for item in result.judged:
            if item.outcome.startswith("fp") and item.finding.rule in rules:
                f, why = item.finding, (item.label.why if item.label else "")
                lines.append(
                    f"  {item.outcome} {f.rule} {result.entry.repo}:{f.path}:{f.line} "
                    f"{f.symbol}{' - ' + why if why else ''}"
                )
    return lines


def render_text(results: Sequence[RepoResult], rules: Sequence[str], *, detail: bool) -> str:
    summed = totals(results, rules)
    out = [
        "Per rule (FP = on a decoy / unlabelled in a reviewed file / in a test module):",
        _table(
            ["rule", "TP", "FP", "FP d/u/t", "FN", "dup", "either", "precision", "recall"],
            _rule_rows(summed),
        ),
        "",
        "Per repository (findings judged; TP/FP/FN per rule):",
        _table(["repository", "style", "findings", *rules], _repo_rows(results, rules)),
    ]
    broken = [r for r in results if r.state != "ok"]
    for result in broken:
        out.append(f"{result.entry.repo}: {result.state}: " + "; ".join(result.problems[:5]))
    for result in results:
        for error in result.scan_errors[:5]:
            out.append(f"{result.entry.repo}: scan error: {error}")
    if detail:
        out += ["", "Misses and false positives:", *_details(results, rules)]
    return "\n".join(out) + "\n"


def _tally_json(t: Tally, rule: str) -> dict[str, object]:
    return {
        "tp": t.tp,
        "fp": t.fp,
        "fp_decoy": t.fp_decoy,
        "fp_unlabelled": t.fp_unlabelled,
        "fp_test": t.fp_test,
        "fn": t.fn,
        "duplicate": t.duplicate,
        "accepted": t.accepted,
        "precision": t.precision(rule),
        "recall": t.recall(),
    }


def render_gap(dev: Sequence[RepoResult], test: Sequence[RepoResult], rules: Sequence[str]) -> str:
    """Dev and test precision and recall side by side, and how far test falls below dev."""
    dev_t, test_t = totals(dev, rules), totals(test, rules)

    def gap(d: float | None, t: float | None) -> str:
        return "-" if d is None or t is None else f"{d - t:+.2f}"

    rows = []
    for rule in rules:
        d, t = dev_t[rule], test_t[rule]
        dp, tp, dr, tr = d.precision(rule), t.precision(rule), d.recall(), t.recall()
        rows.append(
            [rule, _ratio(dp), _ratio(tp), gap(dp, tp), _ratio(dr), _ratio(tr), gap(dr, tr)]
        )
    header = ["rule", "dev P", "test P", "P gap", "dev R", "test R", "R gap"]
    return "Dev against sealed test (gap = dev - test):\n" + _table(header, rows) + "\n"


def render_json(halves: dict[str, Sequence[RepoResult]], rules: Sequence[str]) -> str:
    report = {half: _half_json(results, rules) for half, results in halves.items()}
    return json.dumps(report, indent=2) + "\n"


def _half_json(results: Sequence[RepoResult], rules: Sequence[str]) -> dict[str, object]:
    summed = totals(results, rules)
    repos = []
    for result in results:
        repos.append(
            {
                "repo": result.entry.repo,
                "commit": result.entry.commit,
                "style": result.entry.style,
                "state": result.state,
                "problems": result.problems,
                "scan_errors": result.scan_errors,
                "rules": {r: _tally_json(result.tally(r), r) for r in rules}
                if result.state == "ok"
                else {},
                "missed": [
                    {"rule": m.rule, "path": m.path, "line": m.line, "symbol": m.symbol}
                    for m in result.missed
                    if m.rule in rules
                ],
                "false_positives": [
                    {
                        "rule": j.finding.rule,
                        "path": j.finding.path,
                        "line": j.finding.line,
                        "kind": j.outcome,
                    }
                    for j in result.judged
                    if j.outcome.startswith("fp") and j.finding.rule in rules
                ],
            }
        )
    return {"rules": {r: _tally_json(t, r) for r, t in summed.items()}, "repos": repos}
