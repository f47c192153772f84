"""Progress of an attribution by phase, with a fraction that is a share of *time*, so the time left a
page derives from it (elapsed / fraction − elapsed) does not climb.

A job has phases of countable units, each run by one engine: the generator's prefill and answer
tokens and its Shapley coalitions (``lm``), IG's points on the retriever (``embedder``). Before a
unit of a phase has run, its cost is the measured unit cost from the attribution bench
(:data:`UNIT_S`, 2 quiet CPU cores) scaled by how this job's finished units of the same engine
compared with their prediction (a busy machine slows the generator more than the small
retriever), or of any engine before that one has run; once units of a phase ran, the phase's own
measured cost per unit takes over, smoothed by one prior unit so one slow first unit does not jump
the estimate. The generator's phases run first, so its measured speed prices the longest phase
(the coalitions) before that starts. Then

    remaining = Σ_phases  units left × estimated seconds per unit
    fraction  = elapsed / (elapsed + remaining)

which makes the page's time left (elapsed / fraction − elapsed) equal ``remaining`` at each
update — except that an upward revision is spread over updates, each raising the time left by at
most :data:`MAX_RISE` (a slow unit on a busy machine moves the estimate up over a few updates, not
in one jump), and updates come at most every :data:`SAY_EVERY_S` seconds (the worker stores
progress every 0.5 s, so none of these is lost between two stored updates). Every unit reports
(generation reports each token), so no phase sits silent while its label names the previous one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["LEARNED_S", "MAX_RISE", "SAY_EVERY_S", "UNIT_S", "PhaseClock", "predicted_seconds", "unit_cost"]

MAX_RISE = 0.2
SAY_EVERY_S = 0.55

UNIT_S = {
    "prefill": 1.5,  # the five-document prompt (~700 tokens at ~470 tokens/s) before the first answer token
    "generate": 0.05,  # one greedy answer token of SmolLM2-135M after the prefill
    "coalition": 0.3,  # one coalition's answer log-probabilities (prefix cache; 32 coalitions ~ 9.5 s)
    "ig": 0.024,  # one IG point of one side of a document (MiniLM; 24 points × 10 sides ~ 5.8 s)
    "first": 0.25,  # one coalition of the first estimate (marginal: ~70 tokens on the generation's cache)
    "ig_first": 0.036,  # one IG point of the first estimate (query side only: 0.7 s for 5 documents × 4)
}
"""Seconds per unit on 2 quiet CPU cores, from the defaults' measurement in issue #24 (IG 5.8 s and
Shapley 11.8 s for five documents and 48-token answers) and SmolLM2's measured prefill rate."""

ENGINE = {"prefill": "lm", "generate": "lm", "first": "lm", "coalition": "lm", "ig": "embedder", "ig_first": "embedder"}

LEARNED_S: dict[str, float] = {}
"""Seconds per unit measured by the last finished job of this process (:meth:`PhaseClock.learn`):
a worker's second job is priced by its first, on this machine, under its load."""


def unit_cost(phase: str) -> float:
    """The predicted seconds per unit of ``phase``: learned from the last job here, else :data:`UNIT_S`."""
    return LEARNED_S.get(phase, UNIT_S.get(phase, 1.0))


@dataclass
class _Phase:
    name: str
    units: int
    prior_s: float  # predicted seconds per unit
    engine: str = ""
    done: int = 0
    spent: float = 0.0


class PhaseClock:
    """Counts units per phase and reports ``say(label, fraction)`` with ``fraction`` a share of time.

    ``phases``: ``(name, units, scale)`` in the order they run; a unit's predicted cost is
    :func:`unit_cost` × ``scale`` (e.g. IG's points per side).
    ``clock``: a monotonic clock in seconds (injectable for tests)."""

    def __init__(
        self,
        phases: list[tuple[str, int, float]],
        say: Callable[[str, float], None],
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.phases = {
            name: _Phase(name, max(0, int(units)), unit_cost(name) * float(scale), ENGINE.get(name, name))
            for name, units, scale in phases
        }
        self.scales = {name: float(scale) for name, _units, scale in phases}
        self.say, self.clock = say, clock
        self.t0 = self.last = clock()
        self.shown: float | None = None  # the time left said last
        self.said_at = -float("inf")
        self.last_fraction = 0.0
        self.last_phase: str | None = None

    def _rate(self, p: _Phase) -> float:
        cal = self._calibration(p.engine)
        if p.done:
            return (p.spent + p.prior_s * cal) / (p.done + 1)
        return p.prior_s * cal

    def _calibration(self, engine: str) -> float:
        """Measured / predicted time of the finished units of ``engine`` (of every engine while
        it has none; 1 before the first unit), within [0.1, 20]."""
        done = [p for p in self.phases.values() if p.done and p.engine == engine]
        done = done or [p for p in self.phases.values() if p.done]
        pred = sum(p.done * p.prior_s for p in done)
        spent = sum(p.spent for p in done)
        return 1.0 if pred <= 0 else min(20.0, max(0.1, spent / pred))

    def remaining_s(self) -> float:
        return sum(max(0, p.units - p.done) * self._rate(p) for p in self.phases.values())

    def fraction(self) -> float:
        """The share of the job's time done, from the estimate of the time left (unsmoothed)."""
        elapsed = self.clock() - self.t0
        rest = self.remaining_s()
        return 1.0 if rest <= 0 else elapsed / (elapsed + rest) if elapsed > 0 else 0.0

    def _say(self, label: str, *, force: bool = False) -> None:
        """Report at most every :data:`SAY_EVERY_S` (``force``: a new phase's first word, which
        leaves the throttle and the rise limit's anchor as they are); the fraction never goes back."""
        now = self.clock()
        if not force and now - self.said_at < SAY_EVERY_S:
            return
        rest = self.remaining_s()
        if self.shown is not None:
            rest = min(rest, (1 + MAX_RISE) * self.shown)
        elapsed = now - self.t0
        fraction = 1.0 if rest <= 0 else elapsed / (elapsed + rest) if elapsed > 0 else 0.0
        fraction = max(fraction, self.last_fraction)
        self.last_fraction = fraction
        if not force:
            if fraction >= 0.05 or self.shown is not None:  # below 5 % a page shows no time left yet
                self.shown = rest
            self.said_at = now
        self.say(label, min(fraction, 0.999))

    def tick(self, phase: str, label: str, k: int = 1) -> None:
        """``k`` units of ``phase`` finished (the time since the last tick is theirs)."""
        now = self.clock()
        p = self.phases[phase]
        p.done += k
        p.spent += now - self.last
        self.last = now
        self._say(label, force=phase != self.last_phase)
        self.last_phase = phase

    def begin(self, label: str) -> None:
        """Say what starts now (the time since the last tick is not any phase's units)."""
        self.last = self.clock()
        self._say(label, force=True)

    def learn(self) -> None:
        """Keep this job's measured cost per unit of each phase that ran (per unit of scale) as the
        next job's prediction."""
        for p in self.phases.values():
            if p.done and p.spent > 0 and self.scales.get(p.name):
                LEARNED_S[p.name] = p.spent / p.done / self.scales[p.name]


def predicted_seconds(n_docs: int, ig_steps: int, max_new_tokens: int, coalitions: int) -> float:
    """A job's predicted wall time before it runs: the phases of :class:`PhaseClock` priced by
    :func:`unit_cost` (learned here, else the quiet 2-core figures)."""
    return (
        unit_cost("prefill")
        + max(0, max_new_tokens - 1) * unit_cost("generate")
        + coalitions * unit_cost("coalition")
        + 2 * n_docs * ig_steps * unit_cost("ig")
    )
