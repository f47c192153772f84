"""CSV files that are safe to open in a spreadsheet (OWASP, "CSV Injection").

A cell whose text starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read
by Excel, LibreOffice and Google Sheets as a formula; log values (run ids, query ids, texts) are
untrusted, so such cells get a leading single quote (``'``), which spreadsheets show as text and
hide. Only text cells are changed: numbers stay numbers (``-0.5`` is a value, not a formula).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

__all__ = ["FORMULA_PREFIXES", "neutralise", "write_csv"]

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: object) -> object:
    """``value`` with a leading ``'`` when it is text a spreadsheet would read as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def write_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """``frame`` as CSV (no index) with every formula-leading text cell neutralised, headers included."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(neutralise)
    out.columns = [neutralise(str(c)) for c in out.columns]
    out.to_csv(path, index=False)
