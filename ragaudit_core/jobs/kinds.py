"""The registry of job kinds: one object per kind, registered once.

The built-in kinds are named here by where they live (``module:object``) and imported on first
use, so the runners (this package) never import the packages that own the questions — the same
plug-in shape as a package entry point. A kind added elsewhere calls :func:`register`.
"""

from __future__ import annotations

import importlib

from ragaudit_core.errors import RagAuditError
from ragaudit_core.jobspec import JobKind

__all__ = ["BUILTIN_KINDS", "UnknownJobKind", "get", "names", "register"]

BUILTIN_KINDS = {
    "attribution": "ragaudit_core.attribution.job:ATTRIBUTION_JOB",
    "judge": "ragaudit_core.fidelity.judge_job:JUDGE_JOB",
}
"""Built-in kinds by name → ``module:object`` (seed 001's attribution; seed 002's judge)."""

_REGISTERED: dict[str, JobKind] = {}


class UnknownJobKind(RagAuditError, ValueError):
    """A job names a kind nobody registered."""


def register(kind: JobKind) -> None:
    """Make ``kind`` available under ``kind.name`` (a later registration replaces it)."""
    _REGISTERED[kind.name] = kind


def names() -> list[str]:
    """Every kind's name: built-in and registered."""
    return sorted(set(BUILTIN_KINDS) | set(_REGISTERED))


def get(name: str) -> JobKind:
    """The kind called ``name`` (a built-in one is imported on first use)."""
    kind = _REGISTERED.get(name)
    if kind is not None:
        return kind
    target = BUILTIN_KINDS.get(name)
    if target is None:
        raise UnknownJobKind(f"unknown job kind {name!r}; kinds are: {', '.join(names())}")
    module, attr = target.split(":")
    kind = getattr(importlib.import_module(module), attr)
    register(kind)
    return kind
