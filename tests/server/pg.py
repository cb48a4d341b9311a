"""A fresh PostgreSQL schema per test, from ``GUARDKIT_TEST_PG``.

Unset: the test is skipped locally and fails in CI (``CI`` set). Set but unreachable: it fails.
``GUARDKIT_TEST_SERVICES=none`` (the fast runs on the other Pythons) skips it, in CI too.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def pg_schema_url() -> Iterator[str]:
    base = os.environ.get("GUARDKIT_TEST_PG")
    if os.environ.get("GUARDKIT_TEST_SERVICES") == "none":
        pytest.skip("GUARDKIT_TEST_SERVICES=none: no PostgreSQL in this run")
    if not base:
        if os.environ.get("CI"):
            pytest.fail("GUARDKIT_TEST_PG is not set; .ci/run starts PostgreSQL and sets it")
        pytest.skip("GUARDKIT_TEST_PG is not set")
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(base, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"cannot reach PostgreSQL at GUARDKIT_TEST_PG: {exc}")
    schema = "t_" + uuid.uuid4().hex[:16]
    admin.execute(f"CREATE SCHEMA {schema}")
    try:
        sep = "&" if "?" in base else "?"
        yield f"{base}{sep}options=-csearch_path%3D{schema}"
    finally:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")
        admin.close()
