"""The SQL of the PostgreSQL history stores (``pgstore``), shared by the sync and the async
one: the schema's migrations, and each operation as a query and its parameters."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from .rows import ROW_COLUMNS, check_limit, check_query

SCHEMA_VERSION = 4

#: Migrations by version; each runs once, in one transaction, in the store's schema.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            """CREATE TABLE messages (
                id BIGSERIAL PRIMARY KEY,
                agent_id TEXT NOT NULL DEFAULT '',
                run_id TEXT,
                role TEXT NOT NULL,
                content TEXT NOT NULL DEFAULT '',
                reasoning TEXT,
                source TEXT,
                sender_id TEXT,
                tool_call_id TEXT,
                created_at JSONB,
                stored_at DOUBLE PRECISION NOT NULL,
                raw TEXT NOT NULL)""",
            "CREATE INDEX messages_agent ON messages(agent_id, id)",
            "CREATE INDEX messages_source ON messages(source, id)",
        ),
    ),
    (
        2,
        (
            "ALTER TABLE messages ADD COLUMN msg_key TEXT",
            "CREATE UNIQUE INDEX messages_key ON messages(msg_key)",
            "CREATE INDEX messages_content_trgm ON messages USING gin "
            "(content {trgm}.gin_trgm_ops)",
            "CREATE INDEX messages_reasoning_trgm ON messages USING gin "
            "(reasoning {trgm}.gin_trgm_ops)",
            """CREATE TABLE ptc_runs (
                run_id TEXT PRIMARY KEY, context TEXT NOT NULL, final TEXT,
                started TIMESTAMPTZ NOT NULL DEFAULT now(), seq BIGSERIAL)""",
            """CREATE TABLE ptc_turns (
                run_id TEXT NOT NULL REFERENCES ptc_runs(run_id), number INTEGER NOT NULL,
                turn TEXT NOT NULL, calls INTEGER NOT NULL, usage TEXT NOT NULL,
                PRIMARY KEY (run_id, number))""",
        ),
    ),
    (
        3,
        (
            # a key names a batch of one agent's messages
            "DROP INDEX messages_key",
            "CREATE UNIQUE INDEX messages_agent_key ON messages(agent_id, msg_key)",
        ),
    ),
    (
        4,
        (
            # the turn under way and its tool calls, saved as they start and end
            """CREATE TABLE ptc_calls (
                run_id TEXT NOT NULL, turn INTEGER NOT NULL, call_id TEXT NOT NULL,
                record TEXT NOT NULL, PRIMARY KEY (run_id, turn, call_id))""",
        ),
    ),
)

READ = (
    "m.id, m.agent_id, m.run_id, m.role, m.content, m.reasoning, m.source, "
    "m.sender_id, coalesce(m.created_at, to_jsonb(m.stored_at)), m.raw"
)


IDENT = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def ident(name: str) -> str:
    """A schema name as PostgreSQL stores it: lowercase, at most 63 bytes (always quoted in
    SQL, so reserved words are fine)."""
    if not isinstance(name, str) or IDENT.fullmatch(name) is None:
        raise ValueError(
            "schema must be a plain identifier (lowercase letters, digits and _, at most 63, "
            f"not starting with a digit), got {name!r}"
        )
    return name


def like(query: str) -> str:
    query = query.replace("\x00", "")  # stored text has no NUL either (see message_rows)
    return "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


#: The characters of a long query the trigram index is searched with (see :func:`search`).
KEY_CHARS = 32

#: Sets the current transaction's ``statement_timeout`` (ms, as text): a search's time limit.
STATEMENT_TIMEOUT = "SELECT set_config('statement_timeout', %s, true)"


def timeout_ms(seconds_left: float) -> str:
    """``statement_timeout`` for a query that must end within ``seconds_left`` (at least 1 ms:
    0 would mean no limit)."""
    return str(max(1, math.ceil(seconds_left * 1000)))


# -- SQL shared by the sync and async stores ---------------------------------------------------

INSERT = (
    f"INSERT INTO messages ({ROW_COLUMNS}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s) "
    "ON CONFLICT (agent_id, msg_key) DO NOTHING RETURNING id"
)

Query = tuple[str, list[Any]]

STORED = "SELECT msg_key, id, raw FROM messages WHERE agent_id = %s AND msg_key = ANY(%s)"


def stored_rows(found: Iterable[Any]) -> dict[str, tuple[int, str]]:
    return {r[0]: (int(r[1]), r[2]) for r in found}


def insert_params(r: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row for :data:`INSERT` (created_at as JSON: a number or a string, as it came)."""
    return (*r[:8], json.dumps(r[8]) if r[8] is not None else None, *r[9:])


def preamble(schema: str) -> list[str]:
    """Run before the migrations, in their transaction. One migrator per database at a time:
    the extension is database-wide, so stores in two schemas must not create it together."""
    return [
        "SELECT pg_advisory_xact_lock(hashtextextended('ptc-migrate', 0))",
        f'CREATE SCHEMA IF NOT EXISTS "{schema}"',
        f'SET LOCAL search_path = "{schema}", public',
        "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public",
        "CREATE TABLE IF NOT EXISTS ptc_schema (version INTEGER NOT NULL)",
    ]


#: The schema pg_trgm was installed in (public by us; elsewhere on managed servers).
TRGM_SCHEMA = (
    "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
    "WHERE e.extname = 'pg_trgm'"
)


def statements(statements: tuple[str, ...], trgm: str) -> list[str]:
    quoted = '"' + trgm.replace('"', '""') + '"'  # a schema name from the catalog, quoted
    return [stmt.replace("{trgm}", quoted) for stmt in statements]


def pending(schema: str, version: int) -> list[tuple[int, tuple[str, ...]]]:
    """The migrations still to apply to a schema at ``version``."""
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"schema {schema!r} is at version {version}, newer than this ptc "
            f"({SCHEMA_VERSION}): upgrade ptc-runtime"
        )
    return [(v, stmts) for v, stmts in MIGRATIONS if v > version]


def count(agent_id: str | None) -> Query:
    if agent_id is None:
        return "SELECT count(*) FROM messages", []
    return "SELECT count(*) FROM messages WHERE agent_id = %s", [agent_id]


def recent(agent_id: str, limit: int) -> Query:
    sql = f"SELECT {READ} FROM messages m WHERE m.agent_id = %s ORDER BY m.id DESC LIMIT %s"
    return sql, [agent_id, check_limit(limit)]


def system_message(agent_id: str) -> Query:
    sql = (
        f"SELECT {READ} FROM messages m WHERE m.agent_id = %s AND m.role = 'system' "
        "ORDER BY m.id LIMIT 1"
    )
    return sql, [agent_id]


def all_rows(agent_id: str | None) -> Query:
    if agent_id is None:
        return f"SELECT {READ} FROM messages m ORDER BY m.id", []
    return f"SELECT {READ} FROM messages m WHERE m.agent_id = %s ORDER BY m.id", [agent_id]


def words_vector(config: str, column: str) -> str:
    """The indexed ``tsvector`` of a column (the same expression as the index, so it is used)."""
    return f"to_tsvector('{config}'::regconfig, m.{column})"


def hit_columns(max_chars: int) -> str:
    """The columns of a search tool's records (see :func:`~ptc.history.rows.hit_record`): each
    text as its first ``max_chars`` characters and its length (``left`` reads no more of a
    stored text than it returns)."""
    n = int(max_chars)
    created = "coalesce(m.created_at, to_jsonb(m.stored_at))"
    text = f"({created} #>> '{{}}')"
    string = f"jsonb_typeof({created}) = 'string'"
    columns = ["m.id", "m.role"]
    for e in ("m.agent_id", "m.source", "m.sender_id", "m.content", None, "m.reasoning"):
        if e is None:  # created_at: JSON, a number or a string
            cut = f"to_jsonb(left({text}, {n}))"
            columns.append(f"CASE WHEN {string} THEN {cut} ELSE {created} END")
            columns.append(f"CASE WHEN {string} THEN char_length({text}) END")
        else:
            columns += [f"left({e}, {n})", f"char_length({e})"]
    return ", ".join(columns)


def search(
    column: str,
    query: str,
    limit: int,
    where: str,
    params: list[Any],
    words: str | None,
    read: str = READ,
) -> Query | None:
    """Newest ``limit`` rows whose ``column`` contains ``query``; with ``words`` (a text search
    configuration), the ``limit`` best-ranked rows matching its words (``None``: nothing to
    ask). Rows come newest first either way, as the columns ``read``. ``query`` and ``limit``
    are checked as on SQLite (:func:`~ptc.history.rows.check_query`,
    :func:`~ptc.history.rows.check_limit`)."""
    text = check_query(query)
    limit = check_limit(limit)
    if limit == 0:
        return None
    if words is None:
        if len(text) <= KEY_CHARS:
            match, args = f"m.{column} ILIKE %s", [like(text)]
        else:
            # The planner prices a trigram index scan by the pattern's trigrams but a table
            # scan's ILIKE as if the pattern were short, so a long pattern gets a scan that
            # lowercases the whole pattern again per row (1.5 s at 100,000 rows for 1,000
            # characters). The index is searched with the query's first KEY_CHARS characters;
            # the whole query is checked on those rows only, in a form the planner cannot
            # take to the index (IS TRUE), so it cannot price the index by it.
            match = f"m.{column} ILIKE %s AND (m.{column} ILIKE %s) IS TRUE"
            args = [like(text[:KEY_CHARS]), like(text)]
        sql = f"SELECT {read} FROM messages m WHERE {match} {where} ORDER BY m.id DESC LIMIT %s"
        return sql, [*args, *params, limit]
    vector = words_vector(words, column)
    tsquery = f"websearch_to_tsquery('{words}'::regconfig, %s)"
    sql = (
        f"SELECT {read} FROM messages m WHERE m.id IN (SELECT m.id FROM messages m "
        f"WHERE {vector} @@ {tsquery} {where} "
        f"ORDER BY ts_rank({vector}, {tsquery}) DESC, m.id DESC LIMIT %s) ORDER BY m.id DESC"
    )
    return sql, [text, *params, text, limit]


def search_kind(
    kind: str,
    query: str,
    limit: int,
    agent_id: str | None,
    words: str | None = None,
    read: str = READ,
) -> Query | None:
    """The search ``kind``: "messages" (content, of ``agent_id`` unless ``None``), "reasoning"
    (likewise) or "broadcasts" (of every agent, each once: its first copy)."""
    if kind == "broadcasts":
        where = (
            "AND m.source = 'broadcast' AND m.id IN (SELECT min(b.id) FROM messages b "
            "WHERE b.source = 'broadcast' GROUP BY coalesce(b.sender_id, ''), b.content, "
            "b.created_at)"
        )
        return search("content", query, limit, where, [], words, read)
    column = "reasoning" if kind == "reasoning" else "content"
    where = "AND m.reasoning IS NOT NULL" if kind == "reasoning" else ""
    params: list[Any] = []
    if agent_id is not None:
        where += " AND m.agent_id = %s"
        params.append(agent_id)
    return search(column, query, limit, where, params, words, read)


def search_messages(
    query: str, limit: int, agent_id: str | None, words: str | None = None
) -> Query | None:
    return search_kind("messages", query, limit, agent_id, words)


def search_reasoning(
    query: str, limit: int, agent_id: str | None, words: str | None = None
) -> Query | None:
    return search_kind("reasoning", query, limit, agent_id, words)


def search_broadcasts(query: str, limit: int, words: str | None = None) -> Query | None:
    return search_kind("broadcasts", query, limit, None, words)


def words_indexes(config: str) -> list[str]:
    """The GIN indexes of ``search="words"`` (made on first use by a store asking for them)."""
    return [
        f"CREATE INDEX IF NOT EXISTS messages_{column}_words_{config} ON messages USING gin "
        f"(to_tsvector('{config}'::regconfig, {column}))"
        for column in ("content", "reasoning")
    ]


SEARCH_MODES = ("substring", "words")
CONFIG = re.compile(r"[a-z_][a-z0-9_]{0,62}")
