"""Fonts for the PDF report: one body font plus the fallbacks that the report's text needs.

The body font is DejaVu Sans (Latin, Greek, Cyrillic, Hebrew, Arabic, most symbols),
taken from the system (Debian's ``fonts-dejavu-core``) or, failing that, from the copy
matplotlib ships. Characters it lacks are looked up, in order, in Noto Sans CJK
(``fonts-noto-cjk``) and the per-script Noto Sans fonts (``fonts-noto-core``); only
the fonts that cover a character of *this* report are loaded, so an English report
costs nothing extra. Characters no installed font covers are reported, never dropped
silently. ``scripts/setup.sh`` installs the three Debian packages.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

__all__ = ["FontPlan", "FontSpec", "code_points", "font_dirs", "plan_fonts"]

_SYSTEM_DIRS = ["/usr/share/fonts", "/usr/local/share/fonts", "~/.local/share/fonts", "~/.fonts"]
# Scripts whose glyphs change shape with their neighbours or reorder: they need a shaping engine.
_COMPLEX = (
    "ARABIC",
    "DEVANAGARI",
    "BENGALI",
    "GURMUKHI",
    "GUJARATI",
    "ORIYA",
    "TAMIL",
    "TELUGU",
    "KANNADA",
    "MALAYALAM",
    "SINHALA",
    "THAI",
    "LAO",
    "TIBETAN",
    "MYANMAR",
    "KHMER",
    "HEBREW",
    "SYRIAC",
    "THAANA",
)


@dataclass(frozen=True)
class FontSpec:
    path: str
    index: int = 0  # face number inside a TTC collection


@dataclass
class FontPlan:
    regular: FontSpec
    bold: FontSpec | None
    italic: FontSpec | None
    mono: FontSpec | None
    fallbacks: list[FontSpec] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # characters no installed font covers
    needs_shaping: bool = False  # complex scripts present


def font_dirs() -> list[Path]:
    dirs = [Path(os.path.expanduser(d)) for d in _SYSTEM_DIRS]
    extra = os.environ.get("RAGAUDIT_FONT_DIRS")
    if extra:
        dirs = [Path(p) for p in extra.split(os.pathsep)] + dirs
    try:
        import matplotlib

        dirs.append(Path(matplotlib.get_data_path()) / "fonts" / "ttf")
    except ImportError:  # pragma: no cover - matplotlib comes with captum
        pass
    return [d for d in dirs if d.is_dir()]


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    """File name → path for every font file under the font folders (first found wins)."""
    out: dict[str, str] = {}
    for d in font_dirs():
        for root, _dirs, files in os.walk(d):
            for f in files:
                if f.lower().endswith((".ttf", ".otf", ".ttc")):
                    out.setdefault(f, os.path.join(root, f))
    return out


@lru_cache(maxsize=256)
def _cmap(path: str, index: int) -> frozenset[int]:
    from fontTools.ttLib import TTFont

    font = TTFont(path, fontNumber=index, lazy=True)
    try:
        return frozenset(font.getBestCmap() or {})
    finally:
        font.close()


def _spec(name: str) -> FontSpec | None:
    p = _index().get(name)
    return FontSpec(p) if p else None


def _fallback_candidates() -> list[FontSpec]:
    idx = _index()
    out = []
    for name in ("NotoSansCJK-Regular.ttc", "NotoSansCJKsc-Regular.otf", "NotoSansCJK-Regular.otf"):
        if name in idx:
            out.append(FontSpec(idx[name], 0))
            break
    # per-script Noto Sans faces, then the symbol and maths fonts, then anything else regular
    scripts = sorted(
        n
        for n in idx
        if n.startswith("NotoSans")
        and n.endswith("-Regular.ttf")
        and not n.startswith(("NotoSansMono", "NotoSansDisplay", "NotoSans-"))
    )
    out += [FontSpec(idx[n]) for n in scripts]
    for n in ("NotoSans-Regular.ttf", "NotoSerif-Regular.ttf", "NotoMusic-Regular.ttf"):
        if n in idx:
            out.append(FontSpec(idx[n]))
    return out


def plan_fonts(chars: Iterable[str]) -> FontPlan:
    """The body fonts and the fallbacks needed to draw ``chars``.

    Raises ``RuntimeError`` when no DejaVu Sans is found at all.
    """
    regular = _spec("DejaVuSans.ttf")
    if regular is None:
        raise RuntimeError(
            "no DejaVu Sans font found (install Debian's fonts-dejavu-core, or set "
            "RAGAUDIT_FONT_DIRS to a folder holding DejaVuSans.ttf)"
        )
    plan = FontPlan(
        regular=regular,
        bold=_spec("DejaVuSans-Bold.ttf"),
        italic=_spec("DejaVuSans-Oblique.ttf"),
        mono=_spec("DejaVuSansMono.ttf"),
    )
    have = _cmap(regular.path, 0)
    wanted = {c for c in set(chars) if c.isprintable() and not c.isspace()}
    need = {c for c in wanted if ord(c) not in have}
    plan.needs_shaping = any(unicodedata.name(c, "").split(" ")[0] in _COMPLEX for c in wanted)
    styled = [_cmap(f.path, 0) for f in (plan.bold, plan.italic) if f is not None]
    if any(ord(c) not in cmap for cmap in styled for c in wanted - need):
        # DejaVu Sans draws Arabic (and more) upright only: its bold and oblique faces lack them, and
        # fpdf2 drew nothing for such text in italics. The regular face first among the fallbacks
        # (used for any style) draws it upright there.
        plan.fallbacks.append(regular)
    if not need:
        return plan
    for spec in _fallback_candidates():
        try:
            cmap = _cmap(spec.path, spec.index)
        except Exception:  # noqa: BLE001 — an unreadable font file is skipped, not fatal
            continue
        covered = {c for c in need if ord(c) in cmap}
        if covered:
            plan.fallbacks.append(spec)
            need -= covered
        if not need:
            break
    plan.missing = sorted(need)
    return plan


def code_points(text: str, missing: frozenset[str] | set[str]) -> str:
    """``text`` with each character of ``missing`` (no installed font draws it) written as its code
    point, ``[U+1F680]``: what the report's pages and its charts draw instead of nothing or a box."""
    if not missing:
        return text
    return "".join(f"[U+{ord(c):04X}]" if c in missing else c for c in text)
