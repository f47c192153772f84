"""The options of one ingest: identity (canonical ids, span case), the format and ids to read foreign
records with, and the limits on what an input may make the ingest hold. The options that change
stored identities are recorded in the database and must not change within it (:func:`check_options`)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb

from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs import store
from ragaudit_core.logs.documents import DEFAULT_MAX_DEPTH
from ragaudit_core.logs.identity import CanonOptions
from ragaudit_core.logs.jsonl import DEFAULT_MAX_EXPANSION, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_LINE_BYTES, Limits

__all__ = ["IngestError", "IngestOptions", "check_options", "stored_canon"]


class IngestError(RagAuditError, ValueError):
    """Ingestion could not start (bad paths, incompatible options). Nothing was written."""


@dataclass(frozen=True)
class IngestOptions:
    canon: CanonOptions = CanonOptions()
    casefold_spans: bool = False
    recompute_span_hash: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    format: str | None = None  # force a format (a name of formats.NAMES); None: recognise each record
    run_id: str | None = None  # run id for foreign records that carry none (default: the file name)
    doc_id_key: str | None = None  # metadata key holding document ids in foreign records
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES  # decompressed bytes of one file
    max_expansion: int = DEFAULT_MAX_EXPANSION  # times its size a compressed file may expand
    max_depth: int = DEFAULT_MAX_DEPTH  # nesting depth of a JSON value in a document
    queries: str | None = None  # a questions file whose ids hashed query ids take (logs.questions)
    stored_questions: bool = True  # without one, the stored runs' questions serve (logs.stored_questions)
    stored_passages: bool = True  # text: document ids take the stored runs' ids (logs.stored_passages)

    @property
    def limits(self) -> Limits:
        return Limits(self.max_line_bytes, self.max_file_bytes, self.max_expansion, self.max_depth)

    def fingerprint(self) -> dict[str, object]:
        """The options that change stored identities; they must not change within one database."""
        return {
            **self.canon.describe(),
            "casefold_spans": self.casefold_spans,
            "recompute_span_hash": self.recompute_span_hash,
        }


def check_options(con: duckdb.DuckDBPyConnection, opts: IngestOptions) -> None:
    stored = store.get_json_meta(con, "ingest_options")
    wanted = opts.fingerprint()
    # provenance logs hold document ids too (cited ids are canonicalised to meet them)
    has_data = con.execute("SELECT EXISTS (SELECT 1 FROM records) OR EXISTS (SELECT 1 FROM prov_records)").fetchall()[
        0
    ][0]
    if isinstance(stored, dict) and has_data and stored != wanted:
        diff = ", ".join(f"{k}={stored.get(k)!r} (asked {wanted[k]!r})" for k in wanted if stored.get(k) != wanted[k])
        raise IngestError(
            "this database holds logs ingested with other identity options: "
            + diff
            + "; use the same options, or ingest into a new database (--db)"
        )
    if stored != wanted and not has_data:
        store.set_meta(con, "ingest_options", json.dumps(wanted, sort_keys=True))


def stored_canon(con: duckdb.DuckDBPyConnection) -> CanonOptions:
    """The identity options the database's evidence was canonicalised with (the defaults before
    any load): what an id from elsewhere (a relevance label, an alias map) must be normalised
    with to meet the stored ids."""
    o = store.get_json_meta(con, "ingest_options")
    if not isinstance(o, dict):
        return CanonOptions()
    return CanonOptions(
        case_sensitive=bool(o.get("case_sensitive", False)),
        collapse_internal_whitespace=bool(o.get("collapse_internal_whitespace", False)),
    )
