"""The SQL schema, its version, and the steps that upgrade an older database in place.

``meta.schema_version`` says which schema a database has; a database without it was made by
guardkit before schema versions (schema 1). Schema 2 keeps only what the ledger cannot say:
``agents`` is the list of agents (parent, policy and public key, all checked against the
ledger), ``records`` is the ledger with a ``requested`` column (how many actions were requested
up to each record: the store's way to find an action's request without an index), and
idempotency records carry a seal. Schema 1's materialised state (the agents' state columns and
the ``actions`` table) is dropped: it is rebuilt from the ledger, which is what it always was.
Schema 3 has no ``consumptions`` table: schemas 1 and 2 kept consumptions made before schema 2
there, trusted as they stood; upgrading turns each into an ``action_consumed`` ledger record
(``by: "migration"``, see ``SQLTransaction.upgrade``) and drops the table. Schema 4 adds the
notification outbox (``guardkit.store.outbox``): ``outbox`` (events, written with the records
that announce them), ``deliveries`` (each event's delivery to each sink, with its lease and
back-off) and ``sinks`` (counters per sink); created empty on upgrade, since no event of an
older record is owed to anyone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from guardkit.errors import StoreError

__all__ = ["SCHEMA_VERSION", "Dialect", "POSTGRES", "SQLITE", "upgrade"]

SCHEMA_VERSION = 4

#: Counts the requests up to every record (schema 1 -> 2); the same SQL on both databases.
_FILL_REQUESTED = (
    "UPDATE records SET requested = w.n FROM (SELECT agent_id AS a, seq AS s, "
    "sum(CASE WHEN kind = 'action_requested' THEN 1 ELSE 0 END) "
    "OVER (PARTITION BY agent_id ORDER BY seq) AS n FROM records) AS w "
    "WHERE records.agent_id = w.a AND records.seq = w.s"
)
#: Schema 1's materialised agent state, gone in schema 2.
_STATE_COLUMNS = (
    "spent", "scar_score", "alive", "termination_reason", "next_action", "head_seq", "head_hash",
    "actions_allowed", "actions_denied", "actions_pending", "tool_counts", "scars",
    "recent_allowed", "created_at",
)  # fmt: skip


#: Counters per sink: what ``guardkit status --notifications`` shows (both databases).
_SINKS = (
    "CREATE TABLE IF NOT EXISTS sinks (sink TEXT PRIMARY KEY, attempts BIGINT NOT NULL DEFAULT 0, "
    "failures BIGINT NOT NULL DEFAULT 0, last_error TEXT, "
    "last_error_at DOUBLE PRECISION, last_delivered_at DOUBLE PRECISION)"
)


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between SQLite and PostgreSQL in the SQL the stores run."""

    name: str
    #: The tables of the current schema (``CREATE ... IF NOT EXISTS``), one statement each.
    tables: tuple[str, ...]
    #: Does a table of this name exist (one ``?`` parameter)?
    has_table: str
    #: ``ORDER BY`` suffix sorting agent ids bytewise.
    collate: str
    #: The ``LIMIT`` parameter meaning "no limit".
    no_limit: Any
    #: The type of a 64-bit integer column.
    integer: str = "INTEGER"
    #: ``(sql, params)`` -> the driver's form of a statement written with ``?`` placeholders.
    placeholder: str = "?"

    def sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)


SQLITE = Dialect(
    name="sqlite",
    tables=(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS agents (agent_id TEXT PRIMARY KEY, parent_id TEXT, "
        "policy TEXT NOT NULL, public_key TEXT)",
        "CREATE TABLE IF NOT EXISTS records (agent_id TEXT NOT NULL, seq INTEGER NOT NULL, "
        "timestamp TEXT NOT NULL, actor TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, "
        "prev_hash TEXT NOT NULL, hash TEXT NOT NULL, signature TEXT, requested INTEGER NOT NULL, "
        "PRIMARY KEY (agent_id, seq)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, status TEXT NOT NULL, "
        "payload_hash TEXT NOT NULL, owner TEXT NOT NULL, lease_expires REAL NOT NULL, "
        "expires_at REAL, result TEXT, action_id TEXT, agent_id TEXT, seal TEXT)",
        "CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "id TEXT NOT NULL UNIQUE, type TEXT NOT NULL, agent_id TEXT NOT NULL, body TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS deliveries (sink TEXT NOT NULL, event_seq INTEGER NOT NULL, "
        "delivered REAL, attempts INTEGER NOT NULL DEFAULT 0, next_at REAL NOT NULL, "
        "lease_owner TEXT, lease_until REAL, last_error TEXT, "
        "PRIMARY KEY (sink, event_seq)) WITHOUT ROWID",
        "CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (sink, delivered, next_at)",
        _SINKS,
    ),
    has_table="SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
    collate="",
    no_limit=-1,
)

POSTGRES = Dialect(
    name="postgresql",
    tables=(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS agents (agent_id TEXT PRIMARY KEY, parent_id TEXT, "
        "policy TEXT NOT NULL, public_key TEXT)",
        "CREATE TABLE IF NOT EXISTS records (agent_id TEXT NOT NULL, seq BIGINT NOT NULL, "
        "timestamp TEXT NOT NULL, actor TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, "
        "prev_hash TEXT NOT NULL, hash TEXT NOT NULL, signature TEXT, "
        "requested BIGINT NOT NULL, PRIMARY KEY (agent_id, seq))",
        "CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, status TEXT NOT NULL, "
        "payload_hash TEXT NOT NULL, owner TEXT NOT NULL, "
        "lease_expires DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION, result TEXT, "
        "action_id TEXT, agent_id TEXT, seal TEXT)",
        "CREATE TABLE IF NOT EXISTS outbox (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
        "id TEXT NOT NULL UNIQUE, type TEXT NOT NULL, agent_id TEXT NOT NULL, body TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS deliveries (sink TEXT NOT NULL, event_seq BIGINT NOT NULL, "
        "delivered DOUBLE PRECISION, attempts BIGINT NOT NULL DEFAULT 0, "
        "next_at DOUBLE PRECISION NOT NULL, lease_owner TEXT, lease_until DOUBLE PRECISION, "
        "last_error TEXT, PRIMARY KEY (sink, event_seq))",
        "CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (sink, delivered, next_at)",
        _SINKS,
    ),
    has_table="SELECT 1 WHERE to_regclass(%s) IS NOT NULL",
    collate=' COLLATE "C"',
    no_limit=None,
    integer="BIGINT",
    placeholder="%s",
)


def upgrade(
    dialect: Dialect,
    run: Callable[[str, tuple[Any, ...]], Any],
    one: Callable[[str, tuple[Any, ...]], Any],
    reseal: Callable[[], None],
) -> int:
    """Bring the database to ``SCHEMA_VERSION`` inside the caller's (write) transaction.

    ``run`` executes a statement, ``one`` fetches one row, ``reseal`` seals every idempotency
    record (schema 1 had no seals). Returns the version the database had.
    """
    row = None
    if one(dialect.has_table, ("meta",)) is not None:
        row = one(dialect.sql("SELECT value FROM meta WHERE key = ?"), ("schema_version",))
    if row is not None:
        found = int(row[0])
    elif one(dialect.has_table, ("records",)) is not None:
        found = 1
    else:
        found = SCHEMA_VERSION  # a new database
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"the database has schema {found}, made by a newer guardkit than this one (schema "
            f"{SCHEMA_VERSION}): upgrade guardkit"
        )
    if found == 1:
        _from_1(dialect, run, reseal)
    else:
        for statement in dialect.tables:
            run(statement, ())
    run(
        dialect.sql(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ),
        ("schema_version", str(SCHEMA_VERSION)),
    )
    return found


def _from_1(
    dialect: Dialect, run: Callable[[str, tuple[Any, ...]], Any], reseal: Callable[[], None]
) -> None:
    """Schema 1 -> 2: count requests, drop the materialised state, seal idempotency records."""
    run(f"ALTER TABLE records ADD COLUMN requested {dialect.integer} NOT NULL DEFAULT 0", ())
    run(_FILL_REQUESTED, ())
    run("DROP TABLE IF EXISTS actions", ())
    run("DROP INDEX IF EXISTS agents_parent", ())
    for column in _STATE_COLUMNS:
        run(f"ALTER TABLE agents DROP COLUMN {column}", ())
    run("ALTER TABLE idempotency ADD COLUMN seal TEXT", ())
    for statement in dialect.tables:  # any table schema 1 lacked
        run(statement, ())
    reseal()
