"""The head witness: every commit's new heads, kept outside the database.

A hash chain proves order, not completeness: a ledger cut short, or an older copy of the whole
file, is a whole chain too. So after every commit the store appends each changed agent's head
(agent, seq, hash, and on a signed ledger its signature) to a witness the database does not
hold: by default an append-only file beside it (``<db>.witness``), fsynced under
``durability="full"``. A ledger whose head is behind its witness, or whose record at the
witnessed seq carries another hash, is quarantined with both named.

The witness is appended after the database commit and before the caller is answered, so it
never runs ahead of a commit that did not happen, and a decision a caller was told about is
always witnessed; a crash between the two leaves the database one commit ahead, which the next
open witnesses. Under ``durability="full"`` the lines are made durable by a thread of the
witness's own, one fsync for every commit of the last ``GROUP_SYNC_SECONDS`` (an fsync a commit
would double the cost of a decision): a process killed at any point loses no line (each is
written before its caller is answered), and a line is never durable before its commit is; only
a power cut can leave the witness behind the database, by the commits of that last interval,
which the next open witnesses again, as after a crash between commit and line. A failed
background fsync fails every later decision before it is written (one whose commit raced the
failure is committed and refused, as after a crash between commit and answer). It defends
against a host that can rewrite the database but not the witness; not against one that can
rewrite both (then only a checkpoint published elsewhere helps).
"""

from __future__ import annotations

import abc
import json
import os
import shlex
import subprocess
import threading
from typing import Any, NamedTuple

from guardkit.errors import StoreError
from guardkit.store.chain import json_str

__all__ = ["CommandWitness", "Entry", "FileWitness", "Head", "Witness"]

_HEADER = b"guardkit-witness v1\n"
#: Under ``durability="full"``, the least time between two fsyncs of a witness file: the lines
#: of every commit in between share the next one. An fsync of the witness costs the database's
#: next commit a whole fsync of its own (the disk flushes one file at a time); grouped, it costs
#: little, and a power cut can leave the witness at most this much (plus one fsync) behind.
GROUP_SYNC_SECONDS = 0.05


#: A ``Head`` made without its generated ``__new__`` (a Python call per commit otherwise).
_new_head: Any = tuple.__new__
#: One witnessed head as it is appended: ``(agent, seq, hash, signature or None)``.
Entry = tuple[str, int, str, str | None]


class Head(NamedTuple):
    """A witnessed head: the record at ``seq`` of the agent's ledger has ``hash``."""

    seq: int
    hash: str


class Witness(abc.ABC):
    """Where a store's heads go after every commit, and are read back from."""

    #: A human-readable location for messages.
    location: str = ""

    def __init__(self) -> None:
        #: The newest head witnessed for each agent.
        self.heads: dict[str, Head] = {}
        #: Set once something appended could not be made durable: ``check`` then raises (a
        #: transaction reads the flag, and calls ``check`` only when it is set).
        self.failed = False

    @abc.abstractmethod
    def append(self, heads: list[Entry], *, sync: bool) -> None:
        """Record ``(agent, seq, hash, signature)`` heads just committed; ``sync``: durably."""

    def check(self) -> None:  # noqa: B027 - a witness whose append is durable fails in append
        """Raise if what was appended earlier could not be made durable (``failed``): called
        before a commit, so a decision is refused, and nothing of it written, once the witness
        is known broken."""

    def sync(self) -> None:  # noqa: B027 - a witness whose append is durable has nothing to do
        """Make every head appended so far durable."""

    def sync_soon(self) -> None:
        """Make every head appended so far durable, now or shortly (``durability="full"``: called
        once the commit is durable, before the caller is answered)."""
        self.sync()

    def refresh(self) -> None:  # noqa: B027 - a witness only this process writes has nothing to read
        """Read what other processes witnessed since this one last looked."""

    @property
    def size(self) -> int:
        """How much has been witnessed (bytes): a witness never shrinks."""
        return 0

    def close(self) -> None:  # noqa: B027 - most witnesses hold nothing open
        """Release what the witness holds."""

    def _note(self, agent_id: str, seq: int, digest: str) -> None:
        seen = self.heads.get(agent_id)
        if seen is None or seq >= seen.seq:
            self.heads[agent_id] = Head(seq, digest)


class FileWitness(Witness):
    """An append-only file of heads, one JSON line each: ``["agent", seq, "hash", sig]``.

    ``existed``: the store says it had this witness, so a missing file is refused; ``size`` is
    the length the store last saw, so a shorter file is refused (it was truncated).
    """

    def __init__(self, path: str, *, existed: bool = False, size: int = 0) -> None:
        super().__init__()
        self.path = self.location = path
        #: Set by a store whose appends all happen under its writer lock, after a refresh.
        self.exclusive = False
        self._offset = 0
        self._syncer: _Syncer | None = None
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            if existed:
                raise StoreError(
                    f"the head witness {path} is missing, but this store had one: the witness "
                    "or the database was replaced; restore the witness file (or open the store "
                    "with witness=None to audit it without one)"
                ) from None
            self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(self._fd, _HEADER)
            os.fsync(self._fd)
            _sync_directory(path)
        try:
            self._read(opening=True)
            # What a killed process wrote but never synced is made durable before this store
            # records the witness's size (a power cut must not leave it shorter than that).
            os.fdatasync(self._fd)
            if self._offset < size:
                raise StoreError(
                    f"the head witness {path} is {self._offset} bytes, but the store saw "
                    f"{size}: it was truncated; restore it (or open the store with "
                    "witness=None to audit it without one)"
                )
        except BaseException:
            os.close(self._fd)
            raise

    def _read(self, *, opening: bool = False) -> None:
        start = self._offset
        data = _read_from(self._fd, start)
        if start == 0:
            if not data.startswith(_HEADER):
                raise StoreError(
                    f"the head witness {self.path} is not a guardkit witness (or was truncated): "
                    "restore it (or open the store with witness=None to audit it without one)"
                )
            start = self._offset = len(_HEADER)
            data = data[len(_HEADER) :]
        end = data.rfind(b"\n") + 1
        if opening and end < len(data):
            # A line torn by a crash in mid-append (its commit was never answered). The store
            # opens under its writer lock, so no other process is appending right now.
            os.ftruncate(self._fd, start + end)
        for line in data[:end].splitlines():
            try:
                agent_id, seq, digest, _ = json.loads(line)
                self._note(str(agent_id), int(seq), str(digest))
            except (ValueError, TypeError):
                raise StoreError(
                    f"the head witness {self.path} holds a line that is not a head: {line!r}"
                ) from None
        self._offset = start + end

    def refresh(self) -> None:
        if self.failed:
            self.check()  # before a transaction begins: refused, nothing written
        # Most often nobody else appended: one small read at the end, nothing to parse.
        if self._offset == 0 or os.pread(self._fd, 1, self._offset):
            self._read()

    @property
    def size(self) -> int:
        return self._offset

    def check(self) -> None:
        syncer = self._syncer
        if syncer is not None and syncer.error is not None:
            syncer.check(committed=False)

    def append(self, heads: list[Entry], *, sync: bool) -> None:
        if self.failed:
            assert self._syncer is not None
            self._syncer.check(committed=True)
        if len(heads) == 1:  # a decision's one agent: _line and the loop below, spelt out
            agent_id, seq, digest, signature = heads[0]
            sig = "null" if signature is None else f'"{signature}"'
            text = f'[{json_str(agent_id)},{seq},"{digest}",{sig}]\n'.encode()
        else:
            text = "".join(_line(*h) for h in heads).encode()
        try:
            os.write(self._fd, text)
            if sync:
                os.fdatasync(self._fd)
        except OSError as exc:
            raise StoreError(
                f"the head witness {self.path} could not be written ({exc}); the decision is "
                "committed but not witnessed: fix the witness and reopen the store"
            ) from exc
        # Our own lines need not be read back; others' (another process) still are. Under the
        # store's writer lock nobody else appends, so the file ended where this one had read.
        if self.exclusive or os.fstat(self._fd).st_size == self._offset + len(text):
            self._offset += len(text)
        known = self.heads
        if len(heads) == 1:
            seen = known.get(agent_id)
            if seen is None or seq >= seen.seq:
                known[agent_id] = _new_head(Head, (seq, digest))
            return
        for agent_id, seq, digest, _ in heads:
            seen = known.get(agent_id)
            if seen is None or seq >= seen.seq:
                known[agent_id] = _new_head(Head, (seq, digest))

    def sync(self) -> None:
        if self._syncer is not None:
            self._syncer.check(committed=True)
        try:
            os.fdatasync(self._fd)
        except OSError as exc:
            raise _not_durable(self.path, exc, committed=True) from exc

    def sync_soon(self) -> None:
        if self._syncer is None:
            self._syncer = _Syncer(self)
        self._syncer.request()

    def close(self) -> None:
        if self._fd >= 0:
            try:
                if self._syncer is not None:
                    self._syncer.stop()
            finally:
                os.close(self._fd)
                self._fd = -1


class CommandWitness(Witness):
    """Publishes every commit's heads by running a program with them on its stdin, one JSON line
    each as in the file (``witness="cmd:PROGRAM ARGS"``): to a transparency log, another host, a
    ticket. It runs after the commit and before the caller is answered; a program that fails
    (exit status not 0) or runs longer than ``timeout`` seconds fails the decision: the caller
    gets a ``StoreError``, not the decision. It is not read back: the heads it checks against
    are the ones this process published.
    """

    def __init__(self, command: str, *, timeout: float = 10.0) -> None:
        super().__init__()
        self.argv = shlex.split(command)
        if not self.argv:
            raise StoreError('witness="cmd:" names no program: write witness="cmd:PROGRAM ARGS"')
        self.location = f"cmd:{command}"
        self.timeout = timeout

    def append(self, heads: list[Entry], *, sync: bool) -> None:
        text = "".join(_line(*head) for head in heads).encode()
        try:
            done = subprocess.run(
                self.argv, input=text, capture_output=True, timeout=self.timeout, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise self._failed(str(exc)) from exc
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip()[-300:]
            raise self._failed(f"it exited with status {done.returncode}: {tail or 'no output'}")
        for agent_id, seq, digest, _ in heads:
            self._note(agent_id, seq, digest)

    def _failed(self, why: str) -> StoreError:
        return StoreError(
            f"the witness command {self.location!r} failed ({why}); the decision is committed "
            "but not witnessed, and was not returned: fix the command (the next decision "
            "witnesses every head since)"
        )


class _Syncer:
    """``fdatasync`` of a witness file on a thread of its own: each covers every line written
    before it, and the requests of the next ``GROUP_SYNC_SECONDS`` share the next one; the last
    is made when the witness closes."""

    def __init__(self, witness: FileWitness) -> None:
        self._witness = witness
        self._fd, self._path = witness._fd, witness.path
        # Taken directly by ``request`` (a ``Condition``'s own ``with`` and ``notify`` are
        # Python calls, on every commit); the thread is notified only when it waits.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._wanted = self._done = 0
        self.error: OSError | None = None
        self._stopping = False
        self._waiting = False
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="guardkit-witness", daemon=True)
        self._thread.start()

    def check(self, *, committed: bool) -> None:
        """Raise if a background fsync failed: no commit is witnessed durably from then on;
        ``committed``: whether the decision at hand is already in the database."""
        if self.error is not None:
            raise _not_durable(self._path, self.error, committed=committed)

    def request(self) -> None:
        with self._lock:
            if self.error is not None:
                raise _not_durable(self._path, self.error, committed=True)
            self._wanted += 1
            if self._waiting:
                self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._stopped.set()
        self._thread.join()
        self.check(committed=True)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._done == self._wanted and not self._stopping:
                    self._waiting = True
                    self._cond.wait()
                    self._waiting = False
                if self._done == self._wanted:
                    return
                target = self._wanted
            try:
                os.fdatasync(self._fd)
            except OSError as exc:
                with self._cond:
                    self.error = exc
                    self._witness.failed = True
                    self._cond.notify_all()
                return
            with self._cond:
                self._done = target
                self._cond.notify_all()
            self._stopped.wait(GROUP_SYNC_SECONDS)


def _not_durable(path: str, exc: OSError, *, committed: bool) -> StoreError:
    outcome = (
        "the decision is committed but may not be witnessed"
        if committed
        else "the decision was refused and nothing of it written"
    )
    return StoreError(
        f"the head witness {path} could not be made durable ({exc}); {outcome}: fix the "
        "witness and reopen the store"
    )


def _line(agent_id: str, seq: int, digest: str, signature: str | None) -> str:
    """One head as a JSON line (hashes and signatures are hex: nothing to escape)."""
    sig = "null" if signature is None else f'"{signature}"'
    return f'[{json_str(agent_id)},{seq},"{digest}",{sig}]\n'


def _read_from(fd: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _sync_directory(path: str) -> None:
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
