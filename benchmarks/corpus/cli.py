"""``scan_quality.py``: score guardkit's scan against the labelled corpus.

Exit status: 0 when every selected repository was scored; 2 when the manifest or labels are
malformed, the scanner cannot run, or a checkout is missing or drifted (use ``--partial`` to
score the rest and exit 0 anyway).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from .manifest import CorpusError, RepoEntry, load_labels, load_manifest, verify_checkout
from .report import RepoResult, render_gap, render_json, render_text
from .scanning import ScanError, scan_command, scan_inprocess
from .scoring import EXHAUSTIVE, RECALL_ONLY, judge
from .split import load_split

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scan_quality.py",
        description="Precision and recall of `guardkit scan` on the labelled corpus.",
    )
    parser.add_argument(
        "--corpus", required=True, type=Path, help="folder holding <owner>+<name> checkouts"
    )
    parser.add_argument(
        "--rules",
        default=",".join(EXHAUSTIVE + RECALL_ONLY),
        help="comma-separated rule ids to score (default: %(default)s)",
    )
    parser.add_argument("--repo", action="append", default=[], help="score only this owner/name")
    parser.add_argument(
        "--split",
        choices=("dev", "test", "both"),
        default="dev",
        help="which half of the corpus to score (split.toml): dev (default, the half to tune on), "
        "test (the sealed half: score it once per work item, never tune on it) or both, with "
        "the gap between them",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--scan-cmd",
        help="run this command (targets appended, in the checkout) instead of the in-process "
        "scan; it must print guardkit's JSON report, e.g. 'guardkit scan --format json'",
    )
    parser.add_argument("--detail", action="store_true", help="list every miss and false positive")
    parser.add_argument(
        "--partial", action="store_true", help="exit 0 even when some checkouts are missing"
    )
    parser.add_argument("--manifest", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--labels", type=Path, help=argparse.SUPPRESS)
    return parser


def _score(
    entry: RepoEntry, corpus: Path, labels_dir: Path | None, command: list[str] | None
) -> RepoResult:
    folder = corpus / entry.dirname
    state, problems = verify_checkout(entry, folder)
    result = RepoResult(entry=entry, state=state, problems=problems)
    if state != "ok":
        return result
    labels = load_labels(entry, labels_dir)
    run = (
        scan_command(command, folder, entry.scan) if command else scan_inprocess(folder, entry.scan)
    )
    result.judged, result.missed = judge(run.findings, labels, entry.files.__contains__)
    result.scan_errors = run.errors
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    unknown = [r for r in rules if r not in EXHAUSTIVE + RECALL_ONLY]
    if unknown:
        print(f"scan_quality: unknown rule(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    command = shlex.split(args.scan_cmd) if args.scan_cmd else None
    try:
        entries = load_manifest(args.manifest)
        if args.repo:
            missing = sorted(set(args.repo) - {e.repo for e in entries})
            if missing:
                raise CorpusError(f"not in the manifest: {', '.join(missing)}")
            entries = [e for e in entries if e.repo in args.repo]
        split = load_split()
        halves = ("dev", "test") if args.split == "both" else (args.split,)
        entries = [e for e in entries if split.half(e.repo) in halves]
        results = [_score(e, args.corpus, args.labels, command) for e in entries]
    except (CorpusError, ScanError) as exc:
        print(f"scan_quality: {exc}", file=sys.stderr)
        return 2
    by_half = {h: [r for r in results if split.half(r.entry.repo) == h] for h in halves}
    if args.json:
        print(render_json(by_half, rules), end="")
    else:
        for half, chosen in by_half.items():
            print(f"== {half} half: {len(chosen)} repositories ==")
            print(render_text(chosen, rules, detail=args.detail))
        if len(by_half) == 2:
            print(render_gap(by_half["dev"], by_half["test"], rules), end="")
    broken = [r for r in results if r.state != "ok"]
    if broken and not args.partial:
        names = ", ".join(f"{r.entry.repo} ({r.state})" for r in broken)
        print(f"scan_quality: corpus incomplete: {names}; run checkout.py", file=sys.stderr)
        return 2
    if not any(r.state == "ok" for r in results):
        print("scan_quality: no repository could be scored", file=sys.stderr)
        return 2
    return 0
