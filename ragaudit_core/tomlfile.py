"""Settings files (gate rules, fidelity rules) read as the untrusted input they are.

TOML from a user is parsed with limits: at most 1 MiB, UTF-8, tables and arrays nested at most
4 levels (``tomllib`` recurses, so 10,000 nested arrays used to end in a RecursionError). Every
refusal is a ``ValueError`` whose message names the key where it can; the caller adds the file.
"""

from __future__ import annotations

import os
import tomllib

__all__ = ["MAX_BYTES", "MAX_DEPTH", "load_toml", "load_toml_file"]

MAX_BYTES = 1 << 20
"""A settings file is at most 1 MiB (a gate has tens of rules, not thousands)."""
MAX_DEPTH = 4
"""Tables and arrays nest at most this deep (``[[rule]]`` tables are depth 2)."""


def load_toml_file(path: str | os.PathLike[str]) -> dict:
    """:func:`load_toml` of a file, refusing one over :data:`MAX_BYTES` before reading it."""
    size = os.stat(path).st_size
    if size > MAX_BYTES:
        raise ValueError(f"the file is {size:,} bytes; a settings file is at most {MAX_BYTES:,} bytes")
    with open(path, "rb") as f:
        return load_toml(f.read())


def load_toml(data: bytes) -> dict:
    """The TOML document in ``data``, or ``ValueError`` (too large, not UTF-8, not TOML, too deep)."""
    if len(data) > MAX_BYTES:
        raise ValueError(f"the file is {len(data):,} bytes; a settings file is at most {MAX_BYTES:,} bytes")
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text (byte offset {e.start})") from None
    except RecursionError:
        raise ValueError(f"nested too deeply; settings files nest at most {MAX_DEPTH} levels") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"not valid TOML: {e}") from None
    where = _too_deep(doc, MAX_DEPTH)
    if where is not None:
        raise ValueError(f"{where}: nested too deeply; settings files nest at most {MAX_DEPTH} levels")
    return doc


def _too_deep(value: object, depth: int, where: str = "") -> str | None:
    """The key path of the first table or array nested more than ``depth`` levels deep, else None."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in children:
        path = f"{where}.{k}" if isinstance(k, str) and where else (k if isinstance(k, str) else f"{where}[{k}]")
        if isinstance(v, (dict, list)):
            if depth <= 0:
                return path
            found = _too_deep(v, depth - 1, path)
            if found is not None:
                return found
    return None
