"""Durable turns: every completed Turn of a run is saved, so a run interrupted at turn N (a
crash, a deploy, SIGKILL) is continued from turn N-1 by ``SubAgent.resume(checkpoint)``.

A checkpoint sink is anything with ``save(step, run_id)``, or a plain callable taking the
``Step`` so far (``step.error is None and not step.ok`` while the run goes on). Two sinks are
built in: :class:`JsonlCheckpoint` (one JSON line per event, appended and flushed to disk) and
:class:`SqliteCheckpoint` (a table per database, one row per turn; the history store's database
file may be shared). Both are idempotent: saving the same turn twice keeps one copy.

What a checkpoint holds is read as untrusted: every record is checked against its type and
counts against what the record holds. A record that does not fit raises
:class:`CheckpointError` naming the file (or database), the line (or row) and the run, for that
run only: the other runs of a shared file still load. A run whose end was not saved (a crash
after its last turn) loads as finished when that turn ended it.
"""

# The modules, by what they hold: errors.py the errors; base.py the sink and source protocols;
# ownership.py the resume check and the data fingerprint; records.py reading saved records
# back into a Step; jsonl.py, sqlite.py and postgres.py the three sinks; tables.py what the
# two SQL sinks share when reading.

from __future__ import annotations

import logging

from .base import CheckpointSink, CheckpointSource, save_to
from .base import Sink as Sink
from .errors import CheckpointError, RunLockedError, RunMismatchError
from .jsonl import JsonlCheckpoint
from .ownership import FINGERPRINT_PREFIX as FINGERPRINT_PREFIX
from .ownership import check_resumable, data_fingerprint
from .postgres import PostgresCheckpoint
from .sqlite import LEASE_SECONDS as LEASE_SECONDS
from .sqlite import SqliteCheckpoint

#: The ``ptc`` logger, on which the sinks warn about records they skip.
logger = logging.getLogger("ptc")

__all__ = [
    "CheckpointError",
    "CheckpointSink",
    "CheckpointSource",
    "JsonlCheckpoint",
    "PostgresCheckpoint",
    "RunLockedError",
    "RunMismatchError",
    "SqliteCheckpoint",
    "check_resumable",
    "data_fingerprint",
    "save_to",
]
