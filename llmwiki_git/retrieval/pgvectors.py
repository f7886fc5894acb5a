"""The shared vector store: chunk vectors in PostgreSQL with pgvector, behind `VectorIndex`.

Selected by one setting, ``LLMWIKI_VECTOR_STORE`` (or ``vector_store`` in
``.llmwiki/config.toml``): a libpq connection URI. Needs the ``postgres`` extra (psycopg);
imported only when the setting is given, never on the path of ``llmwiki check``.

Layout (docs/team.md): one table per embedding model, ``llmwiki_vectors_<digest of the
fingerprint>`` (``hash text primary key, embedding vector(d)``), listed in
``llmwiki_vector_stores`` (fingerprint, table, dimensions, generation). Vectors are keyed by
chunk content hash, so every branch, worktree and clone shares them: a chunk embedded once by
anyone (CI, as a rule) is never embedded again. Nothing is ever removed by ``remove``: another
branch may still hold the chunk.

Writes are one transaction each, under a transaction-level advisory lock of the model's
table: two writers serialize, and a writer killed mid-way leaves the store as it was. A
connection whose role may not write (a team member's read-only role) keeps what it embedded
in memory (the *overlay*), which the local store saves in ``.llmwiki/embeddings.bin``.

Search: the ``CANDIDATES`` best chunks by inner product (cosine: vectors are unit length),
exact while the table holds fewer than ``EXACT_LIMIT`` vectors (a sequential scan), through an
HNSW index at and above it (built by the write that crosses it), searched with
``hnsw.ef_search = EF_SEARCH``. Both numbers were measured (benchmarks/store.py,
docs/benchmarks.md). The overlay is scored exactly in process and merged in.

The URI is never printed: every message names it by `display` (host, port and database name
only; conninfo.py reads the string as libpq does, URI or keyword/value pairs).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import ConfigError, ConninfoError, StoreError
from . import conninfo
from .vectors import Neighbours, SharedStore

STORE_KIND = "postgresql"  # what the index files record as their vectorStore (storetable.py)

EXACT_LIMIT = 20_000
"""Below this many vectors a query scans them all (exact: 11-21 ms at 10,000 on 2 shared
cores, 120-200 ms at 100,000); at and above it an HNSW index answers (2-25 ms at 100,000),
built once by the write that crosses it (5 s at 10,000 vectors, about a minute at 100,000:
a CI job's cost, never a reader's), after which an update of 100 chunks costs 0.2-1.2 s
instead of 5-90 ms. Measured by benchmarks/store.py (docs/benchmarks.md, issue 29)."""

EF_SEARCH = 200
"""``hnsw.ef_search`` of a query on a table under `LARGE_TABLE` vectors: the smallest of 40,
64, 100, 200 whose recall@10 against exact search was at least 0.95 on structured vectors at
100,000 (0.70, 0.82, 0.92, 0.98; benchmarks/store.py, docs/benchmarks.md). A search asks
`CANDIDATES` (200) anyway, and pgvector needs ``ef_search`` at least the number asked."""

EF_SEARCH_LARGE = 400
LARGE_TABLE = 500_000
"""From this many vectors a query searches with ``EF_SEARCH_LARGE``: at 1,000,000 vectors
laid out like the real wikis' (benchmarks/store.py ``--like``) recall@10 was 0.905 at
ef_search 200 and 0.960 at 400 (docs/benchmarks.md)."""

CANDIDATES = 200
"""Dense candidates a search asks of the database (the fusion reads the best 100 chunks);
chunks of other branches among them are dropped by the page table's mapping."""

UNAVAILABLE = "vector-store-unavailable"
REGISTRY = "llmwiki_vector_stores"
BATCH = 5_000
CONNECT_TIMEOUT = 5


def display(uri: str) -> str:
    """How every message names the store: its host, port and database name only
    (conninfo.display), never its password, user or other parameters."""
    return conninfo.display(uri)


def _problem(uri: str, exc: BaseException) -> str:
    """The driver's message on one line, every value of ``uri`` but its host, port and
    database name scrubbed out (the driver quotes user names, and may quote the string)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    for secret in conninfo.secrets(uri):
        text = text.replace(secret, "***")
    return text.replace(uri, display(uri))[:300]


def unavailable(uri: str, what: str, exc: BaseException | None = None) -> StoreError:
    """The one error for a store that cannot be used: what went wrong, the URI redacted."""
    cause = f" ({_problem(uri, exc)})" if exc is not None else ""
    error = StoreError(
        f"the shared vector store {display(uri)} {what}{cause}; check LLMWIKI_VECTOR_STORE "
        "(or vector_store in .llmwiki/config.toml), or unset it to use the local store",
        UNAVAILABLE,
    )
    error.hint = 'docs/team.md, "When the database cannot be used"'  # not `llmwiki index`: it would fail the same way
    return error


def table_name(fingerprint: str) -> str:
    """The table of one model's vectors (a digest: fingerprints hold any characters)."""
    return "llmwiki_vectors_" + hashlib.sha256(fingerprint.encode("utf-8")).hexdigest()[:16]


def _lock_key(fingerprint: str) -> int:
    """The advisory lock writers of one model's table take (a signed 64-bit key)."""
    return int.from_bytes(
        hashlib.sha256(b"llmwiki-vectors\0" + fingerprint.encode("utf-8")).digest()[:8],
        "big",
        signed=True,
    )


class Database:
    """One connection to the store (opened once per process and model, closed with it)."""

    def __init__(self, uri: str) -> None:
        try:
            import psycopg  # the postgres extra (pyproject.toml)
        except ImportError:
            raise StoreError(
                f"the shared vector store {display(uri)} needs the postgres extra (psycopg, pgvector): "
                "install it (`pip install '.[local,postgres]'` from a clone), or unset "
                "LLMWIKI_VECTOR_STORE to use the local store",
                UNAVAILABLE,
            ) from None
        self.uri = uri
        self.psycopg = psycopg
        try:  # read by the driver's own parser before it gets the string (never a display text)
            conninfo.parse(uri)
        except ConninfoError as exc:
            raise ConfigError(
                f"LLMWIKI_VECTOR_STORE (or vector_store in .llmwiki/config.toml) is {exc}; "
                "write a postgresql:// URI or libpq's keyword=value pairs (docs/team.md)"
            ) from None
        try:
            self.conn = psycopg.connect(uri, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        except (psycopg.Error, ValueError) as exc:  # ValueError: not a connection string at all
            raise unavailable(uri, "is unreachable", exc) from None
        self._closer = weakref.finalize(self, self.conn.close)
        self._registered = False

    def register(self) -> None:
        """Teach the connection pgvector's types (once the extension exists)."""
        if not self._registered:
            from pgvector.psycopg import register_vector

            try:
                register_vector(self.conn)
            except (self.psycopg.Error, self.psycopg.ProgrammingError) as exc:
                raise unavailable(
                    self.uri, "has no pgvector extension (CREATE EXTENSION vector)", exc
                ) from None
            self._registered = True

    def close(self) -> None:
        self._closer()

    # Closed with its last user (views share it), never left open. A finalizer rather than
    # ``__del__``: when a workspace and its retrieval service, which refer to each other, are
    # collected as a cycle, the garbage collector runs weakref finalizers before any object's
    # ``__del__``, so the connection is closed before psycopg's own ``__del__`` sees it open
    # (which it reports as a ResourceWarning, an error in the tests).


def open_vectors(uri: str, fingerprint: str, dimensions: int, *, create: bool) -> SharedVectors:
    """The shared vectors of one model. ``create``: make the extension, registry and table
    when absent (`llmwiki index`); otherwise a store with no table holds nothing."""
    db = Database(uri)
    psycopg = db.psycopg
    read_only = False
    try:
        if create:
            try:
                _create(db, fingerprint, dimensions)
            except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction):
                read_only = True  # a reader's role: what it embeds stays local (the overlay)
        db.register()
        found = db.conn.execute("SELECT to_regclass(%s)", (REGISTRY,)).fetchone()
        row = None
        if found is not None and found[0] is not None:
            row = db.conn.execute(
                f"SELECT tablename, dimensions, generation FROM {REGISTRY} WHERE fingerprint = %s",
                (fingerprint,),
            ).fetchone()
    except psycopg.Error as exc:
        db.close()
        raise unavailable(uri, "refused to set up its tables", exc) from None
    except StoreError:
        db.close()
        raise
    if row is not None and dimensions and int(row[1]) != dimensions:
        db.close()
        raise unavailable(
            uri, f"holds {row[1]}-dimensional vectors for this model, not {dimensions}"
        )
    vectors = SharedVectors(
        db,
        fingerprint,
        int(row[1]) if row is not None else dimensions,
        str(row[0]) if row is not None else None,
        int(row[2]) if row is not None else 0,
    )
    vectors.may_create, vectors.read_only = create and not read_only, read_only
    return vectors


def _create(db: Database, fingerprint: str, dimensions: int) -> str | None:
    """Make the extension, the registry and the model's table when absent (under the lock of
    key 0, so that two first writers do not race); its name (None: no width known yet)."""
    with db.conn.transaction():
        db.conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(""),))
        db.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        db.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {REGISTRY} (fingerprint text PRIMARY KEY, "
            "tablename text NOT NULL, dimensions integer NOT NULL, generation bigint NOT NULL DEFAULT 0)"
        )
        row = db.conn.execute(
            f"SELECT tablename FROM {REGISTRY} WHERE fingerprint = %s", (fingerprint,)
        ).fetchone()
        if row is not None:
            return str(row[0])
        if dimensions <= 0:
            return None
        table = table_name(fingerprint)
        db.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (hash text PRIMARY KEY, "
            f"embedding vector({int(dimensions)}) NOT NULL)"
        )
        db.conn.execute(
            f"INSERT INTO {REGISTRY} (fingerprint, tablename, dimensions) VALUES (%s, %s, %s)",
            (fingerprint, table, dimensions),
        )
        return table


class SharedVectors(SharedStore):
    """`VectorIndex` over one model's table, plus the overlay: vectors this process embedded
    and could not write (a read-only role), held in memory and saved by the local store."""

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
        self._estimate: int | None = None  # the table's row estimate, for `ef_search`

    # -- the protocol -----------------------------------------------------------------------

    kind = STORE_KIND

    def close(self) -> None:
        self.db.close()

    @property
    def generation(self) -> str:
        return f"pg-{self._generation}-{len(self.overlay)}"

    def shared_count(self) -> int:
        if self.table is None:
            return 0
        row = self._query(f"SELECT count(*) FROM {self.table}").fetchone()
        return int(row[0]) if row is not None else 0

    def _table_vectors(self, wanted: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(wanted), BATCH):
            for chunk_hash, vector in self._query(
                f"SELECT hash, embedding FROM {self.table} WHERE hash = ANY(%s)",
                (wanted[start : start + BATCH],),
            ):
                out[chunk_hash] = np.asarray(
                    vector.to_numpy() if hasattr(vector, "to_numpy") else vector,
                    dtype=np.float32,
                )
        return out

    def _table_known(self, wanted: list[str]) -> set[str]:
        out: set[str] = set()
        for start in range(0, len(wanted), BATCH):
            out.update(
                h
                for (h,) in self._query(
                    f"SELECT hash FROM {self.table} WHERE hash = ANY(%s)",
                    (wanted[start : start + BATCH],),
                )
            )
        return out

    def write(
        self, vectors: Mapping[str, np.ndarray], before_commit: Callable[[], object] | None = None
    ) -> None:
        """`add`: one transaction under the model's advisory lock (writers serialize; a writer
        killed before commit changes nothing). ``before_commit``: run inside it (tests)."""
        if not vectors:
            return
        if self.table is None and self.may_create and not self.read_only:
            self._dimensions = len(next(iter(vectors.values())))
            try:
                self.table = _create(self.db, self._fingerprint, self._dimensions)
            except (
                self.db.psycopg.errors.InsufficientPrivilege,
                self.db.psycopg.errors.ReadOnlySqlTransaction,
            ):
                self.read_only = True
            except self.db.psycopg.Error as exc:
                raise unavailable(self.db.uri, "refused to set up its tables", exc) from None
        if self.table is None or self.read_only:
            self.overlay.update(vectors)
            return
        psycopg = self.db.psycopg
        try:
            with self.db.conn.transaction():
                self.db.conn.execute(
                    "SELECT pg_advisory_xact_lock(%s)", (_lock_key(self._fingerprint),)
                )
                self.db.conn.execute(
                    f"CREATE TEMPORARY TABLE llmwiki_incoming (hash text, embedding "
                    f"vector({self._dimensions})) ON COMMIT DROP"
                )
                with self.db.conn.cursor() as cur:
                    with cur.copy(
                        "COPY llmwiki_incoming (hash, embedding) FROM STDIN WITH (FORMAT BINARY)"
                    ) as copy:
                        copy.set_types(["text", "vector"])
                        for chunk_hash, vector in vectors.items():
                            copy.write_row((chunk_hash, np.asarray(vector, dtype=np.float32)))
                then = "UPDATE SET embedding = EXCLUDED.embedding" if self.overwrite else "NOTHING"
                self.db.conn.execute(
                    f"INSERT INTO {self.table} SELECT hash, embedding FROM llmwiki_incoming "
                    f"ON CONFLICT (hash) DO {then}"
                )
                row = self.db.conn.execute(
                    f"UPDATE {REGISTRY} SET generation = generation + 1 "
                    "WHERE fingerprint = %s RETURNING generation",
                    (self._fingerprint,),
                ).fetchone()
                if before_commit is not None:
                    before_commit()
            self._generation = int(row[0]) if row is not None else self._generation + 1
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction):
            self.read_only = True  # a reader's role: keep what was embedded here, locally
            self.overlay.update(vectors)
            return
        except psycopg.Error as exc:
            raise unavailable(self.db.uri, "refused the new vectors", exc) from None
        for chunk_hash in vectors:
            self.overlay.pop(chunk_hash, None)
        self.ensure_ann()

    def describe(self) -> str:
        """One line for `llmwiki index`: where the vectors are (the URI redacted)."""
        search = "HNSW" if self.has_ann() else "exact search"
        line = f"vectors in the shared store {self.label} ({self.shared_count():,} of this model, {search})"
        if self.read_only:
            line += (
                f"; this role may not write to it: {len(self.overlay):,} vector(s) embedded here kept in "
                ".llmwiki/ (docs/team.md)"
            )
        return line

    def ensure_ann(self) -> bool:
        """Build the HNSW index once the table holds `EXACT_LIMIT` vectors (under the
        writers' lock, in a transaction: a killed build leaves no index, and exact search)."""
        if (
            self.table is None
            or self.read_only
            or self.has_ann()
            or self.shared_count() < EXACT_LIMIT
        ):
            return False
        psycopg = self.db.psycopg
        try:
            with self.db.conn.transaction():
                self.db.conn.execute(
                    "SELECT pg_advisory_xact_lock(%s)", (_lock_key(self._fingerprint),)
                )
                self.db.conn.execute(
                    f"CREATE INDEX IF NOT EXISTS {self.table}_hnsw ON {self.table} "
                    "USING hnsw (embedding vector_ip_ops)"
                )
        except psycopg.Error as exc:
            raise unavailable(self.db.uri, "could not build its HNSW index", exc) from None
        return True

    def ef_search(self) -> int:
        """``hnsw.ef_search`` for this table: `EF_SEARCH`, or `EF_SEARCH_LARGE` from
        `LARGE_TABLE` vectors, by the planner's row estimate (read once: no count(*), and the
        HNSW build that makes the setting matter records the estimate)."""
        if self._estimate is None:
            row = (
                self._query(
                    "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (self.table,)
                ).fetchone()
                if self.table is not None
                else None
            )
            self._estimate = int(row[0]) if row is not None and row[0] is not None else 0
        return EF_SEARCH_LARGE if self._estimate >= LARGE_TABLE else EF_SEARCH

    def has_ann(self) -> bool:
        if self.table is None:
            return False
        row = self._query("SELECT to_regclass(%s)", (f"{self.table}_hnsw",)).fetchone()
        return row is not None and row[0] is not None

    def nearest(self, vector: np.ndarray, k: int) -> Neighbours:
        """The best ``min(k, CANDIDATES)`` of the table (exact below `EXACT_LIMIT`, HNSW above)
        merged with the overlay scored exactly. Complete when the table held no more."""
        want = max(0, min(k, CANDIDATES))
        query = np.asarray(vector, dtype=np.float32)
        hashes: list[str] = []
        scores: list[float] = []
        complete = True
        if self.table is not None and want:
            psycopg = self.db.psycopg
            # One row more than wanted says whether the table holds more (the answer is then
            # not complete) without a count(*), which scans the table: ~100 ms at 1,000,000
            # vectors, more than the search itself (benchmarks/store.py).
            limit = want + 1
            try:
                with self.db.conn.transaction():
                    self.db.conn.execute(
                        f"SET LOCAL hnsw.ef_search = {max(self.ef_search(), min(limit, 1000))}"
                    )
                    for chunk_hash, score in self.db.conn.execute(
                        f"SELECT hash, -(embedding <#> %s) FROM {self.table} ORDER BY embedding <#> %s LIMIT %s",
                        (query, query, limit),
                    ):
                        hashes.append(chunk_hash)
                        scores.append(float(score))
            except psycopg.Error as exc:
                raise unavailable(self.db.uri, "failed a search", exc) from None
            complete = len(hashes) <= want
            del hashes[want:], scores[want:]
        seen = set(hashes)
        extra = [h for h in self.overlay if h not in seen]
        if extra:
            matrix = np.stack([self.overlay[h] for h in extra]).astype(np.float32)
            with np.errstate(all="ignore"):
                extra_scores = (matrix @ query).tolist()
            hashes += extra
            scores += extra_scores
        return Neighbours(hashes, np.asarray(scores, dtype=np.float32), complete=complete)

    def _view(self, overlay: dict[str, np.ndarray]) -> SharedVectors:
        return SharedVectors(
            self.db, self._fingerprint, self._dimensions, self.table, self._generation, overlay
        )

    def problem(self) -> str | None:
        """The overlay is checked (the table's vectors were checked as they were written)."""
        for vector in self.overlay.values():
            if not bool(np.isfinite(vector).all()):
                return "the locally embedded vectors hold NaN or infinite values"
        return None

    # -- helpers ------------------------------------------------------------------------------

    def _query(self, sql: str, params: Any = None) -> Any:
        try:
            return self.db.conn.execute(sql, params)
        except self.db.psycopg.Error as exc:
            raise unavailable(self.db.uri, "failed a query", exc) from None
