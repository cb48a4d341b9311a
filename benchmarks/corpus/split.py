"""Which half of the corpus a repository belongs to: ``dev`` (tune on it) or ``test`` (sealed).

The rule and its seed live in ``split.toml`` and depend on the repository's name alone, so adding a
repository never moves another one and no scan result can choose a repository's half. Run
``python -m corpus.split`` from ``benchmarks/`` to print the assignment of every manifest entry.
"""

from __future__ import annotations

import hashlib
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .manifest import CORPUS_DIR, CorpusError, load_manifest

__all__ = ["Half", "Split", "load_split"]

Half = Literal["dev", "test"]


@dataclass(frozen=True, slots=True)
class Split:
    seed: str
    test_share: float
    tuned_before_split: frozenset[str]

    def half(self, repo: str) -> Half:
        if repo in self.tuned_before_split:
            return "dev"
        digest = hashlib.sha256(f"{self.seed}:{repo}".encode()).hexdigest()
        return "test" if int(digest[:8], 16) / 16**8 < self.test_share else "dev"


def load_split(path: Path | None = None) -> Split:
    source = path or CORPUS_DIR / "split.toml"
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CorpusError(f"cannot read {source}: {exc}") from exc
    seed, share, tuned = data.get("seed"), data.get("test_share"), data.get("tuned_before_split")
    if not isinstance(seed, str) or not seed:
        raise CorpusError(f"{source}: 'seed' must be a non-empty string")
    if not isinstance(share, float) or not 0.0 <= share <= 1.0:
        raise CorpusError(f"{source}: 'test_share' must be a number between 0 and 1")
    if not isinstance(tuned, list) or not all(isinstance(r, str) for r in tuned):
        raise CorpusError(f"{source}: 'tuned_before_split' must be a list of owner/name")
    return Split(seed=seed, test_share=share, tuned_before_split=frozenset(tuned))


def main() -> int:
    split = load_split()
    for entry in load_manifest():
        print(f"{split.half(entry.repo):4}  {entry.repo}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
