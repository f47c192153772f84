"""Citation extraction and verification (seed 002, Pattern 3).

Extraction: configurable regular expressions find citation strings in generated text;
a bracketed fragment that looks like a citation but matches no pattern is a parse
failure. Verification scores one citation against its query's provenance graph: 1.0
exact context match, 0.3 right document with a wrong or unretrieved page, 0.0 otherwise
(the full reading is in :mod:`ragaudit_core.fidelity.score`'s docstring).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragaudit_core.fidelity.graph import QueryGraph
from ragaudit_core.logs.identity import CanonOptions, canonical_doc_id

__all__ = ["DEFAULT_PATTERNS", "Citation", "CitationPattern", "extract_citations", "verify_citation"]


@dataclass(frozen=True)
class CitationPattern:
    """A named regex. Groups: ``doc`` and ``page`` (document citation) or ``index``
    (the n-th context element, from 1)."""

    name: str
    regex: str

    def compiled(self) -> re.Pattern:
        return re.compile(self.regex)


DEFAULT_PATTERNS: tuple[CitationPattern, ...] = (
    CitationPattern("source_page", r"\[Source:\s*(?P<doc>[^,\]]+?)\s*,\s*p\.\s*(?P<page>\d+)\s*\]"),
    CitationPattern("document_index", r"\[Document\s+(?P<index>\d+)\]|\(Document\s+(?P<index2>\d+)\)"),
    # 1 to 999: a year ("in [2023]") is not a citation (a context of 1,000 elements is not a RAG's),
    # nor is [0] (contexts count from 1: "arr[0]"); glued to a word it is ("sugar[1]", as models
    # write them), so a code index from 1 up still reads as one
    CitationPattern("bracket_index", r"\[(?P<index>[1-9]\d{0,2})\]"),
)
_CANDIDATE = re.compile(
    r"\[(?:Source|Sources|Document|Documents|Doc|Ref)\b[^\]]*\]|\((?:Document|Doc)\s[^)]*\)", re.IGNORECASE
)


@dataclass(frozen=True)
class Citation:
    string: str
    start: int
    end: int
    pattern: str
    doc_id: str | None = None
    page: int | None = None
    index: int | None = None


def extract_citations(
    text: str | None, patterns: Sequence[CitationPattern] = DEFAULT_PATTERNS
) -> tuple[list[Citation], list[str]]:
    """(citations in text order, parse failures). Earlier patterns win where matches overlap."""
    if not text:
        return [], []
    taken: list[tuple[int, int]] = []
    found: list[Citation] = []
    for pat in patterns:
        for m in pat.compiled().finditer(text):
            s, e = m.span()
            if any(s < te and ts < e for ts, te in taken):
                continue
            g = {k: v for k, v in m.groupdict().items() if v is not None}
            idx = g.get("index", g.get("index2"))
            found.append(
                Citation(
                    m.group(0),
                    s,
                    e,
                    pat.name,
                    doc_id=g.get("doc") and g["doc"].strip(),
                    page=int(g["page"]) if "page" in g else None,
                    index=int(idx) if idx is not None else None,
                )
            )
            taken.append((s, e))
    failures = [
        m.group(0) for m in _CANDIDATE.finditer(text) if not any(m.start() < te and ts < m.end() for ts, te in taken)
    ]
    found.sort(key=lambda c: c.start)
    return found, failures


def verify_citation(
    c: Citation, g: QueryGraph, canon: CanonOptions = CanonOptions()
) -> tuple[float, str, str | None, int | None]:
    """(score, diagnostic, resolved doc_id, resolved page) for one citation."""
    ctx = g.context()
    if c.index is not None:
        if not 1 <= c.index <= len(ctx):
            return 0.0, "context_index_out_of_range", None, None
        d, p = g.resolve(ctx[c.index - 1].node_id)
        if d is None:
            return 0.0, "context_element_without_coordinates", None, None
        return 1.0, "exact_context_match", d, p
    doc = canonical_doc_id(c.doc_id, canon) if c.doc_id else None
    for n in ctx:
        d, p = g.resolve(n.node_id)
        if d == doc and (p is None or p == c.page):
            return 1.0, "exact_context_match", doc, c.page
    cat = g.catalogue()
    if doc in cat:
        pages = cat[doc]
        if pages is not None and c.page is not None and c.page > pages:
            return 0.0, "hallucinated_page_exceeds_document_bounds", doc, c.page
        return 0.3, "valid_doc_invalid_page_or_unretrieved", doc, c.page
    return 0.0, "hallucinated_document_id", doc, c.page
