"""The ``runs`` table's rows: one per run, with the grid settings (top-k, chunk size, overlap,
embedder) its first logged config names. The config itself is kept as logged; a setting that is
not an integer in the column's range is stored as NULL."""

from __future__ import annotations

import json
import re

import duckdb

from ragaudit_core.defaults import INT32_MAX, INT32_MIN
from ragaudit_core.errors import RagAuditError

__all__ = ["RunConfigs", "grid_setting", "new_run_rows", "parse_settings", "set_settings"]


_WHOLE = re.compile(r"(\d+)(?:\.0*)?")
"""A whole number written as text: digits, and a fraction of zeros (pandas writes a column of numbers
with gaps as floats: ``5.0``)."""


def grid_setting(v: object) -> int | None:
    """A grid setting (top-k, chunk size, overlap) as an INTEGER column value; None when the
    config holds none, or a value that is not an integer in the column's range (the config
    itself is kept as logged)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    elif isinstance(v, str) and (whole := _WHOLE.fullmatch(v.strip())):  # "5", and "5.0" as a CSV cell writes it
        v = int(whole[1])
    return v if isinstance(v, int) and INT32_MIN <= v <= INT32_MAX else None


class RunConfigs(dict[str, tuple[dict | None, str, int]]):
    """A load's runs → (config, file, line): the first config **logged** for each run — a record
    logging none holds the place only until one that does — and where it was logged. Undone file
    by file: a file rolled back gives back what it changed (:meth:`forget_file`)."""

    def __init__(self) -> None:
        super().__init__()
        self._replaced: dict[str, list[tuple[str, tuple[dict | None, str, int]]]] = {}

    def note(self, run_id: str, config: dict | None, path: str, line_no: int) -> tuple[dict, str, int] | None:
        """Record a record's config; returns the kept entry when ``config`` differs from the
        run's first logged one (the caller warns), else None."""
        first = self.get(run_id)
        if first is None or (first[0] is None and config is not None):
            if first is not None:
                self._replaced.setdefault(path, []).append((run_id, first))
            self[run_id] = (config, path, line_no)
        elif config is not None and first[0] is not None and config != first[0]:
            return (first[0], first[1], first[2])
        return None

    def forget_file(self, path: str) -> None:
        """Undo what ``path``'s records noted: its runs' entries go, an entry it replaced comes back."""
        for run in [r for r, (_c, p, _l) in self.items() if p == path]:
            del self[run]
        for run, entry in reversed(self._replaced.pop(path, [])):
            self[run] = entry


def new_run_rows(con: duckdb.DuckDBPyConnection, run_configs: dict[str, tuple[dict | None, str, int]]) -> list[tuple]:
    """Rows for the runs table: runs not yet stored, with the grid settings their config names."""
    existing = {r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()}
    rows = []
    for run_id, (cfg, _p, _l) in run_configs.items():
        if run_id in existing:
            continue
        rows.append((run_id, *_columns(cfg)))
    return rows


_KEY = re.compile(r"^[A-Za-z_][\w.-]*$")


def parse_settings(text: str) -> dict[str, object]:
    """Settings written ``top_k=5, chunk_size=256, embedder=bge`` (``,`` or ``;`` between pairs): each
    value an integer where it is one, else the text as written. Anything else raises a
    :class:`~ragaudit_core.errors.RagAuditError` in one sentence."""
    out: dict[str, object] = {}
    for part in re.split(r"[,;]", text):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not _KEY.match(key) or not value:
            raise RagAuditError(
                f"settings are KEY=VALUE pairs separated by commas (top_k=5, chunk_size=256), not {text!r}"
            )
        out[key] = int(value) if re.fullmatch(r"[+-]?\d+", value) else value
    return out


def set_settings(con: duckdb.DuckDBPyConnection, runs: list[str], settings: dict[str, object]) -> list[str]:
    """Give ``settings`` to those of ``runs`` that log none (their config, and the grid columns it
    names); returns the runs that log their own, which keep them."""
    rows = con.execute("SELECT run_id, config IS NOT NULL FROM runs WHERE list_contains(?, run_id)", [runs]).fetchall()
    own = sorted(r for r, logged in rows if logged)
    bare = [r for r, logged in rows if not logged]
    if bare:
        con.execute(
            """UPDATE runs SET config = ?, top_k = ?, chunk_size = ?, chunk_overlap = ?, embedder = ?
               WHERE list_contains(?, run_id)""",
            [*_columns(settings), bare],
        )
    return own


def _columns(cfg: dict | None) -> tuple:
    """A config's columns of the runs table: the config as JSON (None when none is logged) and the
    grid settings it names."""
    c = cfg or {}
    return (
        None if cfg is None else json.dumps(cfg, ensure_ascii=False, sort_keys=True),
        grid_setting(c.get("top_k")),
        grid_setting(c.get("chunk_size")),
        grid_setting(c.get("chunk_overlap")),
        None if c.get("embedder") is None else str(c.get("embedder")),
    )
