"""The phase clock: fraction is a share of time, so elapsed / fraction − elapsed is the time left."""

from __future__ import annotations

import itertools

import pytest

from ragaudit_core.attribution import progress
from ragaudit_core.attribution.progress import PhaseClock


@pytest.fixture(autouse=True)
def _priors(monkeypatch):
    """Unit costs 1 s each (scales below carry the hand-worked priors); nothing learned."""
    monkeypatch.setattr(progress, "UNIT_S", {"ig": 1.0, "generate": 1.0, "coalition": 1.0})
    monkeypatch.setattr(progress, "LEARNED_S", {})


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_time_left_by_hand():
    clock, said = FakeClock(), []
    pc = PhaseClock(
        [("ig", 4, 1.0), ("generate", 2, 0.5), ("coalition", 4, 1.0)], lambda label, f: said.append((label, f)), clock
    )
    assert pc.remaining_s() == pytest.approx(4 + 1 + 4)  # before anything ran: the priors
    clock.t = 2.0
    pc.tick("ig", "IG 1")
    # calibration 2 s / 1 s predicted = 2; ig: (2 + 1 × 2) / (1 + 1) = 2 s per unit
    # remaining = 3 × 2 + 2 × 0.5 × 2 + 4 × 1 × 2 = 16; fraction = 2 / (2 + 16)
    assert pc.remaining_s() == pytest.approx(16)
    assert said[-1] == ("IG 1", pytest.approx(2 / 18))
    elapsed, f = 2.0, said[-1][1]
    assert elapsed / f - elapsed == pytest.approx(16)  # what the page shows as time left
    for t in (3.0, 4.0, 5.0):  # the next three units take 1 s each: as predicted
        clock.t = t
        pc.tick("ig", "IG")
    # calibration 5 / 4; ig done; remaining = 2 × 0.5 × 1.25 + 4 × 1 × 1.25 = 6.25
    assert pc.remaining_s() == pytest.approx(6.25)


def test_an_unfinished_phase_counts_its_units_left_and_ends_at_one():
    clock, said = FakeClock(), []
    pc = PhaseClock([("generate", 10, 0.1), ("coalition", 2, 1.0)], lambda _label, f: said.append(f), clock)
    clock.t = 0.3
    pc.tick("generate", "3 tokens", k=3)
    clock.t = 0.3
    pc.tick("generate", "answer ended early", k=7)  # the rest of the budget: done at once
    for t in (1.3, 2.3):
        clock.t = t
        pc.tick("coalition", "c")
    assert said[-1] == pytest.approx(0.999)  # capped until the job says done
    assert all(b >= a for a, b in itertools.pairwise(said))  # on time, never backwards


def test_a_finished_job_prices_the_next():
    clock = FakeClock()
    pc = PhaseClock([("ig", 2, 10.0), ("coalition", 2, 1.0)], lambda _label, _f: None, clock)
    for t in (5.0, 10.0):  # IG: 5 s per side of scale 10 → 0.5 s per point
        clock.t = t
        pc.tick("ig", "ig")
    for t in (13.0, 16.0):  # coalitions: 3 s each
        clock.t = t
        pc.tick("coalition", "c")
    pc.learn()
    assert progress.LEARNED_S == {"ig": 0.5, "coalition": 3.0}
    nxt = PhaseClock([("ig", 4, 20.0), ("coalition", 1, 1.0)], lambda _label, _f: None, FakeClock())
    assert nxt.remaining_s() == pytest.approx(4 * 20 * 0.5 + 3.0)


def test_an_upward_revision_is_spread_over_updates():
    clock, said = FakeClock(), []
    pc = PhaseClock([("coalition", 10, 1.0)], lambda _label, f: said.append((clock.t, f)), clock)
    for t in (1.0, 2.0, 12.0, 22.0, 32.0):  # units 3-5 take 10 s each instead of 1
        clock.t = t
        pc.tick("coalition", "c")
    lefts = [t / f - t for t, f in said]
    # after unit 3: calibration 12 / 3 = 4, rate (12 + 1 × 4) / 4 = 4 s, 7 left: 28 s (from 8): shown 8 × 1.2
    assert lefts[:3] == [pytest.approx(9.0), pytest.approx(8.0), pytest.approx(9.6)]
    assert all(b <= 1.2 * a + 1e-9 for a, b in itertools.pairwise(lefts))
    assert lefts[-1] < pc.remaining_s()  # still catching up with the estimate
