"""What one ingest call did: per file, per rejected line, per warning (:class:`IngestReport`).

Kept apart from :mod:`ingest` so that readers of a report (the CLI, the home page) need not
import the loader.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ragaudit_core.logs.qrels import QrelsReport
from ragaudit_core.wording import NOTE, WARNING, Kind, counted

__all__ = ["NOTE", "WARNING", "FileReport", "IngestReport", "Issue", "Kind"]


@dataclass(frozen=True)
class Issue:
    """A rejected line, a refused file or what a load says about its data: a warning, or a note
    (``kind``: :class:`ragaudit_core.wording.Said`), decided where the sentence is made."""

    path: str | None
    line_no: int | None
    message: str
    code: str = ""
    kind: Kind = WARNING

    def __str__(self) -> str:
        where = self.path or ""
        if self.line_no is not None:
            where += f" line {self.line_no}"
        return f"{where}: {self.message}" if where else self.message


@dataclass
class FileReport:
    path: str
    sha256: str
    status: str  # loaded | already-loaded | unreadable | rejected (every line rejected: not marked loaded)
    n_lines: int = 0
    n_loaded: int = 0
    n_rejected: int = 0
    n_skipped: int = 0  # tracing spans that carry no evidence (LLM, chain, tool …): read, neither loaded nor rejected
    formats: Counter[str] = field(default_factory=Counter)  # records read as each format (its label)
    unit: str = "line"  # what it is read in: lines (JSON Lines), or records (a JSON document, CSV, Parquet)

    def formats_read(self) -> str:
        """What the file was read as: ``Ragas``, or ``native 3, Ragas 2`` when it mixed formats."""
        if len(self.formats) <= 1:
            return next(iter(self.formats), "")
        return ", ".join(f"{label} {n:,}" for label, n in self.formats.most_common())

    def read_as(self) -> str:
        """``name read as FORMATS`` for the load's summary, saying when nothing of it loaded (every
        line rejected), so a file that failed does not read as one that was read normally."""
        tail = ""
        if self.status == "rejected":
            tail = f": nothing loaded ({self.why_nothing()})"
        return f"{Path(self.path).name} read as {self.formats_read()}{tail}"

    def why_nothing(self) -> str:
        """Why a file loaded nothing: ``every line rejected``, or as many rejected and the rest
        spans that hold no retrieval (an LLM call, a chain)."""
        if not self.n_skipped:
            return f"every {self.unit} rejected"
        hold = "holds" if self.n_skipped == 1 else "hold"
        others = counted(self.n_skipped, "span")
        return f"{counted(self.n_rejected, self.unit)} rejected; its other {others} {hold} no retrieval"


@dataclass
class IngestReport:
    files: list[FileReport] = field(default_factory=list)
    rejected: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    n_records: int = 0
    n_entries: int = 0
    n_provenance: int = 0
    labels: QrelsReport | None = None  # relevance labels loaded with the logs (a folder's qrels/, --qrels)

    @property
    def n_rejected(self) -> int:
        return len(self.rejected)

    @property
    def failed_files(self) -> list[FileReport]:
        """Files of which nothing could be loaded: every line rejected, or unreadable."""
        return [f for f in self.files if f.status in ("rejected", "unreadable")]

    def failure(self, f: FileReport) -> str:
        """One sentence on a file of which nothing could be loaded (one of :attr:`failed_files`):
        the reason it was refused as a whole, or how many of its lines were rejected."""
        name = Path(f.path).name
        if f.status == "unreadable":
            why = next((i.message for i in self.rejected if i.path == f.path and i.code == "unreadable"), None)
            return f"{name} was not loaded: {why}" if why else f"{name} could not be read"
        if f.n_skipped:
            return f"no record of {name} could be loaded: {f.why_nothing()}"
        if f.n_rejected == 1:
            return f"no record of {name} could be loaded: its only {f.unit} was rejected"
        return f"no record of {name} could be loaded: all {f.n_rejected:,} of its {f.unit}s were rejected"

    def refuse(self, path: str, reason: str) -> None:
        """A file or path refused before anything of it was read (it cannot be opened, it is missing),
        in one sentence; nothing of it is in the database."""
        self.files.append(FileReport(path, "", "unreadable", n_rejected=1))
        self.rejected.append(Issue(path, None, reason, "unreadable"))

    def listed(self, refused: list[Issue], warnings: list[Issue]) -> IngestReport:
        """This report with the paths its listing refused and the listing's warnings
        (:func:`~ragaudit_core.logs.listing.list_paths`)."""
        for issue in refused:
            self.refuse(issue.path or "", issue.message)
        self.warnings += warnings
        return self

    def with_paths(self, names: dict[str, str]) -> IngestReport:
        """The same report with file paths renamed (e.g. kept uploads → the names the user uploaded)."""

        def rename(issue: Issue) -> Issue:
            return issue if issue.path is None else dataclasses.replace(issue, path=names.get(issue.path, issue.path))

        return dataclasses.replace(
            self,
            files=[dataclasses.replace(f, path=names.get(f.path, f.path)) for f in self.files],
            rejected=[rename(i) for i in self.rejected],
            warnings=[rename(w) for w in self.warnings],
        )

    def with_messages(self, rewrite: Callable[[str], str]) -> IngestReport:
        """The same report with each rejection's and warning's words passed through ``rewrite``
        (e.g. an earlier upload's kept path → its uploaded name)."""
        return dataclasses.replace(
            self,
            rejected=[dataclasses.replace(i, message=rewrite(i.message)) for i in self.rejected],
            warnings=[dataclasses.replace(w, message=rewrite(w.message)) for w in self.warnings],
        )

    def said_once(self) -> list[Issue]:
        """The warnings as a reader should get them: a file-wide warning (no line) that several files
        raised in the same words is said once, at its first place, naming them ("a.csv, b.csv and 1 more
        file: Ragas records carry no document ids …"), and a file's questions asked again by their run
        (one warning a line) once for the file; the others as they are."""
        files: dict[tuple[str, str], list[str]] = {}
        asked = Counter(w.path for w in self.warnings if w.code == "repeated-question")
        for w in self.warnings:
            if w.path is not None and w.line_no is None:
                files.setdefault((w.message, w.code), []).append(w.path)
        out = []
        for w in self.warnings:
            if w.code == "repeated-question" and asked[w.path] != 1:  # several in the file: one for them all
                if asked[w.path] > 1:  # at the file's first
                    out.append(_asked_again(w, [x for x in self.warnings if x.code == w.code and x.path == w.path]))
                    asked[w.path] = 0
                continue
            names = files.get((w.message, w.code)) if w.path is not None and w.line_no is None else None
            if names is None or len(names) == 1:
                out.append(w)
            elif names[0] == w.path:  # the first of the files that said it
                more = f" and {counted(len(names) - 3, 'more file')}" if len(names) > 3 else ""
                shown = ", ".join(names[:3]) + more if more else ", ".join(names[:-1]) + " and " + names[-1]
                out.append(dataclasses.replace(w, path=shown))
        return out

    def summary(self) -> str:
        loaded = sum(1 for f in self.files if f.status == "loaded")
        skipped = sum(1 for f in self.files if f.status == "already-loaded")
        refused = sum(1 for i in self.rejected if i.code == "unreadable")
        were = "was" if skipped == 1 else "were"
        labelled = self.labels is not None and self.labels.files
        if skipped and not (loaded or self.n_records or self.n_provenance or self.rejected or labelled):
            return f"nothing new loaded: {counted(skipped, 'file')} {were} already in the database and {were} skipped"
        s = (
            f"loaded {counted(self.n_records, 'record')} ({counted(self.n_entries, 'evidence entry')}) from "
            f"{counted(loaded, 'file')} into {counted(len(self.runs), 'run')}; "
            f"rejected {counted(self.n_rejected - refused, 'line')}"
        )
        if refused:
            s += f"; refused {counted(refused, 'file')} as a whole"
        if self.n_provenance:
            s += f"; {counted(self.n_provenance, 'provenance record')}"
        if skipped:
            s += f"; {counted(skipped, 'file')} {were} already in the database and {were} skipped"
        if self.labels is not None and self.labels.files:
            s += "; " + self.labels.summary()
        return s


def _asked_again(first: Issue, repeats: list[Issue]) -> Issue:
    """One warning for a file's repeated questions ("a.csv lines 4, 9, 12 …: 3 questions asked again by
    run 'r' …"), from the first's words (``run 'r' asks the same question again (query id …)``)."""
    lines = [r.line_no for r in repeats if r.line_no is not None]
    shown = ", ".join(map(str, lines[:8])) + (" …" if len(lines) > 8 else "")
    run = first.message.split(" asks the same question again", 1)[0].removeprefix("run ")
    return Issue(
        f"{first.path} lines {shown}",
        None,
        f"{counted(len(repeats), 'question')} asked again by run {run}: each kept as a sample with its occurrence in "
        "its query id (q:…#2); runs pair by occurrence",
        first.code,
    )
