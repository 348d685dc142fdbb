"""SQLite connection of the records store: WAL, busy timeout, migrations, write transactions.

Several processes may write at once (sharded runs, a certify run beside a pool command): every write
happens in `BEGIN IMMEDIATE`, which takes the write lock up front, and `busy_timeout` makes a second
writer wait for it instead of failing with "database is locked".
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from clusterforge.records import schema
from clusterforge.records._util import PRIVATE_FILE, default_db_path, private_dir, tighten_mode
from clusterforge.records.model import RecordsError, SchemaTooNew

BUSY_TIMEOUT_S = 30.0


def _private_file(path: Path) -> None:
    """The database (and its -wal/-shm, which SQLite makes with the database's mode) readable by its owner
    only: made 0600 before SQLite opens it; an existing one owned by this user is tightened."""
    private_dir(path.parent)  # a new folder is 0700; an existing one is tightened when it is the default
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE))
        os.chmod(path, PRIVATE_FILE)
    except FileExistsError:
        for f in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            tighten_mode(f, PRIVATE_FILE)


def connect(path: Path, timeout_s: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, foreign keys on; files 0600."""
    _private_file(path)
    db = sqlite3.connect(str(path), timeout=timeout_s, isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
    db.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
    mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise RecordsError(
            f"{path}: cannot switch the database to WAL mode (got {mode!r}); put it on a local file system"
        )
    db.execute("PRAGMA synchronous = FULL")
    db.execute("PRAGMA foreign_keys = ON")
    return db


def schema_version(db: sqlite3.Connection) -> int:
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if not exists:
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def migrate(db: sqlite3.Connection, target: int | None = None) -> int:
    """Apply the missing migrations up to `target` (default: current) in one transaction.

    Returns the schema version afterwards.
    """
    target = schema.CURRENT_VERSION if target is None else target
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_version"
            " (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        have = schema_version(db)
        if have > schema.CURRENT_VERSION:
            raise SchemaTooNew(
                f"records database has schema version {have}, this clusterforge knows up to "
                f"{schema.CURRENT_VERSION}: upgrade clusterforge"
            )
        for version in range(have, target):
            schema.MIGRATIONS[version](db)
            db.execute(
                "INSERT INTO schema_version (version, applied_at) "
                "VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                (version + 1,),
            )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return max(have, target)


class Database:
    """Owns one connection; `_write()` is a write transaction, `_read()` a consistent read."""

    def __init__(self, path: str | Path | None = None, *, timeout_s: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path).expanduser() if path is not None else default_db_path()
        self._lock = threading.RLock()
        self._db = connect(self.path, timeout_s)
        try:
            migrate(self._db)
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        with self._lock:
            return schema_version(self._db)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
            finally:
                self._db.execute("COMMIT")

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._read() as db:
            return list(db.execute(sql, args).fetchall())
