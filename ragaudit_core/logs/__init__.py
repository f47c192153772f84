"""The log spine: what a log must say, how it is read and identified, and where it is kept.

Contracts (:mod:`.contracts`, :mod:`.provenance`), reading (:mod:`.jsonl`, :mod:`.containers`,
:mod:`.documents`, :mod:`.lines`, :mod:`.records`), log formats — ours and other tools', one
module each, registered in :mod:`.formats` — with tracing spans joined per trace
(:mod:`.traces`), evidence identity (:mod:`.identity`), streaming ingestion (:mod:`.ingest`),
the DuckDB store (:mod:`.store`) and what is loaded (:mod:`.catalog`). It imports no metric
package.
"""

import importlib

_EXPORTS = {
    "SAMPLE_BASE_RUN": "catalog",
    "preferred_run": "catalog",
    "CanonOptions": "identity",
    "canonical_doc_id": "identity",
    "span_hash": "identity",
    "IngestError": "ingest",
    "IngestOptions": "ingest",
    "IngestReport": "ingest",
    "ingest_paths": "ingest",
    "StoreError": "store",
    "connect": "store",
    "data_version": "store",
    "default_db_path": "store",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    """Public names are imported on first use, so that a process needing one module (an ingest
    worker needs only the decoder) does not import the store, pandas and DuckDB."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
