"""The benches' shared input: the sample logs (and their relevance labels) ingested once into
``bench/out/sample.duckdb``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sample_db(path: str | Path | None = None) -> Path:
    """The sample database, ingested on first use."""
    from ragaudit_core import workspace
    from ragaudit_core.logs import store

    db = Path(path) if path else ROOT / "bench" / "out" / "sample.duckdb"
    if not db.exists():
        db.parent.mkdir(parents=True, exist_ok=True)
        with store.connect(db) as con:
            workspace.load_paths(con, [ROOT / "sample_logs"])  # with SciFact's labels (sample_logs/scifact/qrels)
    return db
