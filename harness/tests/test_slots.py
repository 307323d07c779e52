"""runner.Slots: how many guest CPUs boot at once, and which cell's guest
starts next (no guest is booted here)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from harness.runner import Slots

WAIT_S = 5.0    # a bound for what must happen; never reached when it does


def _until(what: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not what():
        assert time.monotonic() < deadline, "it never happened"
        time.sleep(0.005)


def _waits(slots: Slots, turn: int, need: int, took: list[tuple[int, bool]]) -> threading.Thread:
    """A cell's thread that waits for its slots, and says in took whether
    it got them; returns once the cell waits."""
    t = threading.Thread(target=lambda: took.append((turn, slots.take(turn, need))),
                         daemon=True)
    t.start()
    _until(lambda: turn in slots.waiting)
    return t


def test_jobs_guests_of_one_cpu_run_at_once_and_the_next_waits() -> None:
    slots = Slots(2)
    assert slots.take(0, 1) and slots.take(1, 1)
    took: list[tuple[int, bool]] = []
    _waits(slots, 2, 1, took)
    assert took == []
    slots.give_back(1)
    _until(lambda: took == [(2, True)])
    assert slots.waiting == ()


def test_a_guest_takes_at_most_every_slot() -> None:
    assert (Slots(2).need(4), Slots(2).need(2), Slots(4).need(2)) == (2, 2, 2)
    assert Slots(1).need(2) == 1    # JOBS=1 still boots a debug guest


def test_a_cell_waiting_for_two_slots_is_not_overtaken() -> None:
    """JOBS=2, one slot held: the two-CPU cell of turn 1 waits for it, and
    the one-CPU cell of turn 2 waits behind it although a slot is free."""
    slots = Slots(2)
    assert slots.take(0, 1)
    took: list[tuple[int, bool]] = []
    _waits(slots, 1, 2, took)
    _waits(slots, 2, 1, took)
    assert took == [] and slots.waiting == (1, 2)
    slots.give_back(1)
    _until(lambda: took == [(1, True)])
    assert slots.waiting == (2,)
    slots.give_back(2)
    _until(lambda: took == [(1, True), (2, True)])


def test_a_stopped_run_gives_no_waiting_cell_a_slot() -> None:
    slots = Slots(1)
    assert slots.take(0, 1)
    took: list[tuple[int, bool]] = []
    threads = [_waits(slots, turn, 1, took) for turn in (1, 2)]
    slots.stop()
    slots.give_back(1)
    for t in threads:
        t.join(WAIT_S)
    assert sorted(took) == [(1, False), (2, False)]
    assert not slots.take(3, 1)
