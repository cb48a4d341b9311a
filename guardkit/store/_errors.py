"""The one place where database driver exceptions become guardkit ``StoreError``s."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from guardkit.errors import StoreError

__all__ = ["translate_errors"]


@contextmanager
def translate_errors(location: str) -> Iterator[None]:
    """Re-raise sqlite3 (and psycopg, when installed) errors as ``StoreError``."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StoreError(f"store {location}: {type(exc).__name__}: {exc}") from exc
    except OSError as exc:
        raise StoreError(f"store {location}: {exc}") from exc
    except Exception as exc:
        if type(exc).__module__.startswith("psycopg"):
            raise StoreError(f"store {location}: {type(exc).__name__}: {exc}") from exc
        raise
