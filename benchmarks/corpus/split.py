"""Which half of the corpus a repository belongs to: ``dev`` (tune on it) or ``test`` (sealed).

The rules and their seeds live in ``split.toml`` and depend on the repository's name alone (and the
batch it is listed in, for repositories added after the first rule), so adding a
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

__all__ = ["Batch", "Half", "Split", "load_split"]

Half = Literal["dev", "test"]


def _hashed_half(seed: str, share: float, repo: str) -> Half:
    digest = hashlib.sha256(f"{seed}:{repo}".encode()).hexdigest()
    return "test" if int(digest[:8], 16) / 16**8 < share else "dev"


@dataclass(frozen=True, slots=True)
class Batch:
    """Repositories added together after the first rule, assigned by their own seed and share."""

    id: str
    seed: str
    test_share: float
    repos: frozenset[str]


@dataclass(frozen=True, slots=True)
class Split:
    seed: str
    test_share: float
    tuned_before_split: frozenset[str]
    batches: tuple[Batch, ...] = ()

    def batch_of(self, repo: str) -> Batch | None:
        return next((b for b in self.batches if repo in b.repos), None)

    def half(self, repo: str) -> Half:
        if repo in self.tuned_before_split:
            return "dev"
        batch = self.batch_of(repo)
        if batch is not None:
            return _hashed_half(batch.seed, batch.test_share, repo)
        return _hashed_half(self.seed, self.test_share, repo)


def _share(value: object, where: str) -> float:
    if not isinstance(value, float) or not 0.0 <= value <= 1.0:
        raise CorpusError(f"{where}: 'test_share' must be a number between 0 and 1")
    return value


def _batches(raw: object, source: Path, tuned: frozenset[str]) -> tuple[Batch, ...]:
    if not isinstance(raw, list):
        raise CorpusError(f"{source}: 'batch' must be an array of tables ([[batch]])")
    batches: list[Batch] = []
    seen: dict[str, str] = {}
    for index, item in enumerate(raw):
        where = f"{source} batch #{index + 1}"
        if not isinstance(item, dict):
            raise CorpusError(f"{where}: must be a table")
        bid, seed, repos = item.get("id"), item.get("seed"), item.get("repos")
        if not isinstance(bid, str) or not bid or not isinstance(seed, str) or not seed:
            raise CorpusError(f"{where}: 'id' and 'seed' must be non-empty strings")
        if not isinstance(repos, list) or not all(isinstance(r, str) for r in repos):
            raise CorpusError(f"{where}: 'repos' must be a list of owner/name")
        for repo in repos:
            if repo in tuned:
                raise CorpusError(f"{where}: {repo} is tuned_before_split, so always dev")
            if repo in seen:
                raise CorpusError(f"{where}: {repo} is already in batch {seen[repo]}")
            seen[repo] = bid
        share = _share(item.get("test_share"), where)
        batches.append(Batch(id=bid, seed=seed, test_share=share, repos=frozenset(repos)))
    return tuple(batches)


def load_split(path: Path | None = None) -> Split:
    source = path or CORPUS_DIR / "split.toml"
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CorpusError(f"cannot read {source}: {exc}") from exc
    seed, share, tuned = data.get("seed"), data.get("test_share"), data.get("tuned_before_split")
    if not isinstance(seed, str) or not seed:
        raise CorpusError(f"{source}: 'seed' must be a non-empty string")
    if not isinstance(tuned, list) or not all(isinstance(r, str) for r in tuned):
        raise CorpusError(f"{source}: 'tuned_before_split' must be a list of owner/name")
    frozen = frozenset(tuned)
    return Split(
        seed=seed,
        test_share=_share(share, str(source)),
        tuned_before_split=frozen,
        batches=_batches(data.get("batch", []), source, frozen),
    )


def main() -> int:
    split = load_split()
    for entry in load_manifest():
        batch = split.batch_of(entry.repo)
        print(f"{split.half(entry.repo):4}  {entry.repo}" + (f"  ({batch.id})" if batch else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
