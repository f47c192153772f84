"""The log spine: what a log must say, how it is read and identified, and where it is kept.

Contracts (:mod:`.contracts`, :mod:`.provenance`), reading (:mod:`.jsonl`, :mod:`.containers`,
:mod:`.lines`), other tools' logs (:mod:`.formats`, :mod:`.traces`), evidence identity
(:mod:`.identity`), streaming ingestion (:mod:`.ingest`), the DuckDB store (:mod:`.store`) and
what is loaded (:mod:`.catalog`). It imports no metric package.
"""

from ragaudit_core.logs.catalog import SAMPLE_BASE_RUN, preferred_run
from ragaudit_core.logs.identity import CanonOptions, canonical_doc_id, span_hash
from ragaudit_core.logs.ingest import IngestError, IngestOptions, IngestReport, ingest_paths
from ragaudit_core.logs.store import StoreError, connect, data_version, default_db_path

__all__ = ["SAMPLE_BASE_RUN", "CanonOptions", "IngestError", "IngestOptions", "IngestReport", "StoreError",
           "canonical_doc_id", "connect", "data_version", "default_db_path", "ingest_paths", "preferred_run",
           "span_hash"]
