"""Fixtures for the history tests: every store test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from typing import Any

import ptc.history  # noqa: F401
import pytest

PG_URL = os.environ.get("PTC_TEST_POSTGRES_URL", "")
REQUIRE_PG = os.environ.get("PTC_REQUIRE_POSTGRES") == "1"


def need_postgres() -> str:
    """The test server's URL; skips (fails under PTC_REQUIRE_POSTGRES=1, as in CI) without it."""
    why = None
    if not PG_URL:
        why = "PTC_TEST_POSTGRES_URL is not set (scripts/postgres.sh start prints one)"
    else:
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError:
            why = "psycopg is not installed (pip install 'ptc-runtime[postgres]')"
    if why is not None:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL store tests required (PTC_REQUIRE_POSTGRES=1): {why}")
        pytest.skip(f"PostgreSQL store tests: {why}")
    return PG_URL


@dataclass
class Backend:
    """One store backend for a test: ``open()`` a store, ``url``/``options`` for children."""

    name: str
    url: str
    options: dict[str, Any] = field(default_factory=dict)

    def open(self, **extra: Any) -> Any:
        from ptc.history.store import open_store

        return open_store(self.url, **{**self.options, **extra})

    def create(self) -> None:
        """Create (and migrate) the store now, before child processes race for it."""
        store = self.open()
        store.count()
        store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: Any, tmp_path: Any) -> Any:
    if request.param == "sqlite":
        yield Backend("sqlite", f"sqlite:///{tmp_path}/history.db")
        return
    url = need_postgres()
    schema = "t_" + uuid.uuid4().hex[:12]
    yield Backend("postgres", url, {"schema": schema})
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
