"""A checkpoint named on a command line, for the scripts the effects tests run as processes:
``sqlite:PATH``, ``jsonl:PATH`` or ``postgres:URL|SCHEMA``."""

from __future__ import annotations

from typing import Any

import ptc


def checkpoint(spec: str) -> Any:
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        return ptc.checkpoint.SqliteCheckpoint(where)
    if kind == "jsonl":
        return ptc.checkpoint.JsonlCheckpoint(where)
    url, _, schema = where.partition("|")
    from ptc.history.pgstore import PostgresStore

    return PostgresStore(url, schema=schema).checkpoint()
