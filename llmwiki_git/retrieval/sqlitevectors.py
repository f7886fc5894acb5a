"""A shared vector store in one SQLite file: ``LLMWIKI_VECTOR_STORE=sqlite:///abs/path.db``.

For every clone, branch and worktree of one machine (or of one shared folder): a chunk
embedded once by any of them is never embedded again, with nothing to install or run
(``sqlite3`` is in the standard library). The vectors are BLOBs (float32, little-endian)
keyed by chunk content hash, one table per embedding model (``llmwiki_vectors_<digest of
the fingerprint>``), listed in ``llmwiki_vector_stores`` (fingerprint, table, dimensions,
generation), as the PostgreSQL store lays them out (pgvectors.py). Search is exact: the
model's vectors read once per generation into one matrix, scored by one matrix product
(docs/benchmarks.md, "Shared stores").

Writes are one ``BEGIN IMMEDIATE`` transaction each: writers serialize on SQLite's own
lock, and a writer killed mid-way leaves the file as it was (its journal rolls back). A file
this process may not write (a read-only copy, a folder of another user) keeps what it
embedded in memory (the *overlay*), which the local store saves in ``.llmwiki/``.
"""

from __future__ import annotations

import hashlib
import sqlite3
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np

from ..errors import ConfigError, StoreError
from .vectors import Neighbours, SharedStore

STORE_KIND = "sqlite"
REGISTRY = "llmwiki_vector_stores"
BATCH = 900  # hashes per `IN (...)`: under SQLite's default limit of host parameters
TIMEOUT = 30.0  # seconds a writer waits for another's transaction


def path_of(uri: str) -> Path:
    """The file ``sqlite:///abs/path.db`` names (percent-decoded). ConfigError for a relative
    path, a host or parameters: a setting shared by many folders must mean one file."""
    parts = urlsplit(uri)
    path = unquote(parts.path)
    if parts.scheme != STORE_KIND or parts.netloc or parts.query or parts.fragment or not path:
        raise ConfigError(
            "LLMWIKI_VECTOR_STORE names a SQLite store as sqlite:///absolute/path.db "
            "(no host, no parameters) (docs/team.md)"
        )
    if not Path(path).is_absolute() or path.startswith("//") or path.endswith("/"):
        raise ConfigError(
            "LLMWIKI_VECTOR_STORE's SQLite path must be the absolute path of a file "
            "(sqlite:///absolute/path.db) (docs/team.md)"
        )
    return Path(path)


def display(uri: str) -> str:
    """How messages name the store: its path (a SQLite file holds no password)."""
    try:
        return f"sqlite://{path_of(uri)}"
    except ConfigError:
        return "the configured SQLite store"


def unavailable(uri: str, what: str, exc: BaseException | None = None) -> StoreError:
    cause = f" ({' '.join(str(exc).split())[:200]})" if exc is not None else ""
    error = StoreError(
        f"the shared vector store {display(uri)} {what}{cause}; check LLMWIKI_VECTOR_STORE "
        "(or vector_store in .llmwiki/config.toml), or unset it to use the local store",
        "vector-store-unavailable",
    )
    error.hint = 'docs/team.md, "When the database cannot be used"'
    return error


def table_name(fingerprint: str) -> str:
    return "llmwiki_vectors_" + hashlib.sha256(fingerprint.encode("utf-8")).hexdigest()[:16]


class Database:
    """The connection to the file, shared by an index and its views (`for_rows`), closed
    with the last of them (a finalizer, as pgvectors.Database); opened on first use."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._conn: sqlite3.Connection | None = None
        self._closer: weakref.finalize[[], Database] | None = None

    @property
    def opened(self) -> bool:
        return self._conn is not None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self._conn = sqlite3.connect(
                    path_of(self.uri),
                    timeout=TIMEOUT,
                    isolation_level=None,
                    check_same_thread=False,
                )
            except sqlite3.Error as exc:
                raise unavailable(self.uri, "cannot be opened", exc) from None
            self._closer = weakref.finalize(self, self._conn.close)
        return self._conn

    def close(self) -> None:
        if self._closer is not None:
            self._closer()


def open_vectors(uri: str, fingerprint: str, dimensions: int, *, create: bool) -> SqliteVectors:
    """The vectors of one model in the file. ``create``: make the file and its tables when
    absent (`llmwiki index`); otherwise a missing file or table holds nothing."""
    db = Database(uri)
    vectors = SqliteVectors(db, fingerprint, dimensions, None, 0)
    if not create and not path_of(uri).exists():
        return vectors
    try:
        if create:
            vectors.create_table(dimensions)
        vectors.read_registry()
    except sqlite3.Error as exc:
        vectors.close()
        raise unavailable(uri, "cannot be read", exc) from None
    if vectors.table is not None and dimensions and vectors.dimensions != dimensions:
        vectors.close()
        raise unavailable(
            uri, f"holds {vectors.dimensions}-dimensional vectors for this model, not {dimensions}"
        )
    vectors.may_create = create and not vectors.read_only
    return vectors


class SqliteVectors(SharedStore):
    """`vectors.SharedIndex` over one model's table of the file, plus the overlay."""

    kind = STORE_KIND

    def __init__(
        self,
        db: Database,
        fingerprint: str,
        dimensions: int,
        table: str | None,
        generation: int,
        overlay: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        super().__init__(fingerprint, dimensions, table, generation, overlay, display(db.uri))
        self.db = db
        self.uri = db.uri
        # The table's vectors as one matrix, for the generation they were read at.
        self._matrix: tuple[int, list[str], np.ndarray] | None = None

    # -- set-up -------------------------------------------------------------------------------

    def create_table(self, dimensions: int) -> None:
        """The registry and this model's table, when absent (one transaction); a file this
        process may not write makes it read-only (what it embeds stays in the overlay)."""
        try:
            self.db.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "readonly" in str(exc) or "read-only" in str(exc):
                self.read_only = True
                return
            raise
        try:
            self.db.conn.execute(
                f"CREATE TABLE IF NOT EXISTS {REGISTRY} (fingerprint TEXT PRIMARY KEY, "
                "tablename TEXT NOT NULL, dimensions INTEGER NOT NULL, "
                "generation INTEGER NOT NULL DEFAULT 0)"
            )
            row = self.db.conn.execute(
                f"SELECT tablename FROM {REGISTRY} WHERE fingerprint = ?", (self._fingerprint,)
            ).fetchone()
            if row is None and dimensions > 0:
                table = table_name(self._fingerprint)
                self.db.conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {table} "
                    "(hash TEXT PRIMARY KEY, embedding BLOB NOT NULL)"
                )
                self.db.conn.execute(
                    f"INSERT INTO {REGISTRY} (fingerprint, tablename, dimensions) VALUES (?, ?, ?)",
                    (self._fingerprint, table, dimensions),
                )
            self.db.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            self.db.conn.execute("ROLLBACK")
            if "readonly" in str(exc):
                self.read_only = True
                return
            raise

    def read_registry(self) -> None:
        """This model's table, width and generation, as the registry says (none: absent)."""
        found = self.db.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (REGISTRY,)
        ).fetchone()
        if found is None:
            return
        row = self.db.conn.execute(
            f"SELECT tablename, dimensions, generation FROM {REGISTRY} WHERE fingerprint = ?",
            (self._fingerprint,),
        ).fetchone()
        if row is not None:
            self.table, self._dimensions, self._generation = str(row[0]), int(row[1]), int(row[2])

    # -- the protocol -------------------------------------------------------------------------

    @property
    def generation(self) -> str:
        return f"sqlite-{self._current_generation()}-{len(self.overlay)}"

    def close(self) -> None:
        self.db.close()

    def shared_count(self) -> int:
        if self.table is None:
            return 0
        row = self._query(f"SELECT count(*) FROM {self.table}").fetchone()
        return int(row[0]) if row is not None else 0

    def _table_vectors(self, wanted: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(wanted), BATCH):
            batch = wanted[start : start + BATCH]
            for chunk_hash, blob in self._query(
                f"SELECT hash, embedding FROM {self.table} WHERE hash IN "
                f"({','.join('?' * len(batch))})",
                batch,
            ):
                out[chunk_hash] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        return out

    def _table_known(self, wanted: list[str]) -> set[str]:
        out: set[str] = set()
        for start in range(0, len(wanted), BATCH):
            batch = wanted[start : start + BATCH]
            out.update(
                h
                for (h,) in self._query(
                    f"SELECT hash FROM {self.table} WHERE hash IN ({','.join('?' * len(batch))})",
                    batch,
                )
            )
        return out

    def write(
        self, vectors: Mapping[str, np.ndarray], before_commit: Callable[[], object] | None = None
    ) -> None:
        """`add`: one transaction (writers serialize on the file's lock; a killed one changes
        nothing); what this process may not write stays in the overlay. ``before_commit``:
        run inside it (tests)."""
        if not vectors:
            return
        if self.table is None and self.may_create and not self.read_only:
            try:
                self.create_table(len(next(iter(vectors.values()))))
                self.read_registry()
            except sqlite3.Error as exc:
                raise unavailable(self.uri, "refused to set up its tables", exc) from None
        if self.table is None or self.read_only:
            self.overlay.update(vectors)
            return
        rows = [(h, np.ascontiguousarray(v, dtype="<f4").tobytes()) for h, v in vectors.items()]
        verb = "INSERT OR REPLACE" if self.overwrite else "INSERT OR IGNORE"
        try:
            self.db.conn.execute("BEGIN IMMEDIATE")
            try:
                self.db.conn.executemany(
                    f"{verb} INTO {self.table} (hash, embedding) VALUES (?, ?)", rows
                )
                self.db.conn.execute(
                    f"UPDATE {REGISTRY} SET generation = generation + 1 WHERE fingerprint = ?",
                    (self._fingerprint,),
                )
                if before_commit is not None:
                    before_commit()
                self.db.conn.execute("COMMIT")
            except BaseException:
                self.db.conn.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc):
                raise unavailable(self.uri, "refused the new vectors", exc) from None
            self.read_only = True
            self.overlay.update(vectors)
            return
        except sqlite3.Error as exc:
            raise unavailable(self.uri, "refused the new vectors", exc) from None
        for chunk_hash in vectors:
            self.overlay.pop(chunk_hash, None)

    def nearest(self, vector: np.ndarray, k: int) -> Neighbours:
        """Exact: every vector of the table (and the overlay) scored by cosine."""
        query = np.asarray(vector, dtype=np.float32)
        hashes, matrix = self._table_matrix()
        seen = set(hashes) if self.overlay else set()
        extra = [h for h in self.overlay if h not in seen]
        if extra:
            hashes = hashes + extra
            matrix = np.concatenate([matrix, np.stack([self.overlay[h] for h in extra])])
        if not hashes:
            return Neighbours([], np.zeros(0, dtype=np.float32), complete=True)
        with np.errstate(all="ignore"):
            scores = (matrix @ query).astype(np.float32)
        want = max(0, min(k, len(hashes)))
        if want < len(hashes):
            best = np.argpartition(-scores, want - 1)[:want] if want else np.zeros(0, dtype=int)
            return Neighbours([hashes[i] for i in best.tolist()], scores[best], complete=False)
        return Neighbours(hashes, scores, complete=True)

    def _view(self, overlay: dict[str, np.ndarray]) -> SqliteVectors:
        view = SqliteVectors(
            self.db, self._fingerprint, self._dimensions, self.table, self._generation, overlay
        )
        view._matrix = self._matrix
        return view

    def problem(self) -> str | None:
        """A vector of the wrong width, NaN or infinite values, in the file or the overlay."""
        try:
            _hashes, matrix = self._table_matrix()
        except StoreError as exc:
            return exc.message
        for values in (matrix, *self.overlay.values()):
            if not bool(np.isfinite(values).all()):
                return "the shared vectors hold NaN or infinite values"
        return None

    def describe(self) -> str:
        line = (
            f"vectors in the shared store {self.label} "
            f"({self.shared_count():,} of this model, exact search)"
        )
        if self.read_only:
            line += (
                f"; this process may not write to it: {len(self.overlay):,} vector(s) embedded "
                "here kept in .llmwiki/ (docs/team.md)"
            )
        return line

    # -- helpers ------------------------------------------------------------------------------

    def _current_generation(self) -> int:
        if self.table is None:
            return self._generation
        row = self._query(
            f"SELECT generation FROM {REGISTRY} WHERE fingerprint = ?", (self._fingerprint,)
        ).fetchone()
        self._generation = int(row[0]) if row is not None else self._generation
        return self._generation

    def _table_matrix(self) -> tuple[list[str], np.ndarray]:
        """Every vector of the table, read once per generation."""
        if self.table is None:
            return [], np.zeros((0, self._dimensions), dtype=np.float32)
        generation = self._current_generation()
        if self._matrix is None or self._matrix[0] != generation:
            hashes: list[str] = []
            blobs: list[bytes] = []
            for chunk_hash, blob in self._query(f"SELECT hash, embedding FROM {self.table}"):
                hashes.append(chunk_hash)
                blobs.append(blob)
            width = self._dimensions * 4
            if any(len(b) != width for b in blobs):
                raise unavailable(self.uri, f"holds vectors that are not {self._dimensions} wide")
            matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(
                len(hashes), self._dimensions
            )
            self._matrix = (generation, hashes, matrix.astype(np.float32, copy=False))
        return self._matrix[1], self._matrix[2]

    def _query(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        try:
            return self.db.conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise unavailable(self.uri, "failed a query", exc) from None
