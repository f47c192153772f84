"""One base for every error RagAudit raises on purpose.

Each area raises its own subclass (a log that cannot be read, a database that cannot be opened,
a run that cannot be compared, a model that cannot be loaded …) with a message written for the
person at the keyboard: what is wrong, where, and what to do. The command line maps the base to
exit code 2 and prints the message; the dashboard shows it in one sentence. Anything else that
escapes is a bug, reported as one.

The subclasses keep ``ValueError`` or ``RuntimeError`` as a second base where callers already
catch those (a bad value given vs. a state of the world).
"""

from __future__ import annotations

__all__ = ["RagAuditError"]


class RagAuditError(Exception):
    """An error with a message meant for the user (the CLI exits 2 with it)."""
