"""Precision and recall of `guardkit scan` on the labelled real-world corpus.

Usage:
    python benchmarks/corpus/checkout.py --mirrors /work/.mirror --corpus /work/corpus
    python benchmarks/scan_quality.py --corpus /work/corpus [--rules GK101,GK201,GK202]
        [--json] [--detail] [--scan-cmd 'guardkit scan --format json'] [--repo owner/name]

For each repository of benchmarks/corpus/manifest.toml, expects a checkout at
CORPUS/<owner>+<name> at the pinned commit (HEAD and every reviewed file's SHA-256 are checked),
scans it, matches the findings to benchmarks/corpus/labels/<owner>+<name>.toml and prints a
per-rule table (TP, FP, FN, precision, recall) and a per-repository table. See
benchmarks/corpus/README.md for the labelling rules and the baseline.
"""

from __future__ import annotations

from corpus.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
