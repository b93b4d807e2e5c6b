"""Versioned, idempotent schema migrations for the Postgres lesson store.

Migrations are the files ``migrations/NNNN_<name>.sql`` shipped with this package, applied in
version order. Each run happens in one transaction holding a transaction-scoped advisory lock,
so two processes starting at once serialise instead of racing on ``CREATE TABLE``; applied
versions are recorded in ``schema_migrations`` and never run again, so a second run changes
nothing. The embedding dimension is a parameter of the schema (``vector(dim)``): it is recorded
in ``store_settings`` and a start with another dimension is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import asyncpg

from lamarck.errors import StoreError, StoreUnavailable

__all__ = [
    "ADVISORY_LOCK_KEY",
    "DIM_PLACEHOLDER",
    "Migration",
    "ensure_vector_extension",
    "load_migrations",
    "run_migrations",
]

#: Key of the advisory lock held while migrating ("lamarck" in ASCII, as a bigint).
ADVISORY_LOCK_KEY = 0x6C616D6172636B
#: Text replaced in migration files by the embedding dimension.
DIM_PLACEHOLDER = "{{EMBEDDING_DIM}}"

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

# The bookkeeping tables exist before any numbered migration: the dimension check must run
# before 0001 creates vector(dim).
_BOOTSTRAP = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS store_settings (
    key    text PRIMARY KEY,
    value  text NOT NULL
);
"""

_NO_EXTENSION = (
    "the 'vector' extension (pgvector) is not installed on this server; install pgvector "
    "for this PostgreSQL version (https://github.com/pgvector/pgvector), or start the node "
    "without LAMARCK_DATABASE_URL to use the embedded PostgreSQL that ships with it"
)


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema change."""

    version: int
    name: str
    sql: str

    def render(self, dim: int) -> str:
        """The SQL with the embedding dimension substituted."""
        return self.sql.replace(DIM_PLACEHOLDER, str(dim))


def load_migrations() -> list[Migration]:
    """The shipped migrations in version order; refuses gaps and duplicates."""
    folder = resources.files("lamarck.node.store").joinpath("migrations")
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _FILE_NAME.match(entry.name)
        if match is None:
            continue
        found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    # A gap or a duplicate means a mis-numbered file: applying around it would diverge nodes.
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise StoreError(
            f"migration files are not numbered 1..n: {[m.version for m in found]}",
            reason="bad_migrations",
        )
    return found


async def ensure_vector_extension(conn: Any) -> None:
    """``CREATE EXTENSION IF NOT EXISTS vector``, with a clear error when it cannot be done."""
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except (asyncpg.UndefinedFileError, asyncpg.FeatureNotSupportedError) as e:
        # 58P01 on PostgreSQL <= 15 (no vector.control), 0A000 "is not available" on 16+.
        raise StoreUnavailable(_NO_EXTENSION, reason="vector_extension_missing") from e
    except asyncpg.InsufficientPrivilegeError as e:
        raise StoreUnavailable(
            "the 'vector' extension (pgvector) is not enabled in this database and this role "
            "may not create it; ask an administrator to run CREATE EXTENSION vector",
            reason="vector_extension_missing",
        ) from e
    except asyncpg.PostgresError as e:
        if "vector" in str(e) and "extension" in str(e):
            raise StoreUnavailable(
                f"{_NO_EXTENSION} ({e})", reason="vector_extension_missing"
            ) from e
        raise


async def _check_dimension(conn: Any, dim: int) -> None:
    stored = await conn.fetchval("SELECT value FROM store_settings WHERE key = 'embedding_dim'")
    if stored is None:
        await conn.execute(
            "INSERT INTO store_settings (key, value) VALUES ('embedding_dim', $1)", str(dim)
        )
    elif int(stored) != dim:
        raise StoreUnavailable(
            f"this database stores {stored}-dimensional embeddings but the node's embedder "
            f"produces {dim}; use the embedder the store was created with, or a new database",
            reason="embedding_dim_mismatch",
            stored=int(stored),
            requested=dim,
        )


async def run_migrations(conn: Any, dim: int) -> list[int]:
    """Apply every pending migration on ``conn`` (an asyncpg connection); returns their versions.

    Raises ``StoreUnavailable`` when the vector extension is missing or the stored embedding
    dimension differs from ``dim``. asyncpg errors propagate for the caller to translate.
    """
    if dim <= 0 or dim > 16000:
        # pgvector's hard limit on vector columns is 16000 dimensions (HNSW indexes 2000).
        raise StoreError(f"embedding dimension must be in 1..16000, got {dim}", reason="bad_dim")
    migrations = load_migrations()
    applied: list[int] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", ADVISORY_LOCK_KEY)
        await ensure_vector_extension(conn)
        await conn.execute(_BOOTSTRAP)
        await _check_dimension(conn, dim)
        done = {
            int(r["version"]) for r in await conn.fetch("SELECT version FROM schema_migrations")
        }
        for migration in migrations:
            if migration.version in done:
                continue
            await conn.execute(migration.render(dim))
            await conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                migration.version,
                migration.name,
            )
            applied.append(migration.version)
    return applied
