"""The process-wide settings bulk jobs hold (``topicsite.interpreter``): set on entry,
restored on leaving, shared by overlapping blocks."""

import gc
import sys
import threading
import weakref

import pytest

from topicsite.interpreter import garbage_collection_paused, switch_interval


class Node:
    next = None


def test_overlapping_blocks_restore_the_interval_the_first_found_in_any_order():
    before = sys.getswitchinterval()
    first, second = switch_interval(0.0005), switch_interval(0.0005)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first leaves while the second still runs
    assert sys.getswitchinterval() == pytest.approx(0.0005, abs=2e-6)
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == before


def test_a_shorter_interval_than_asked_is_kept():
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.0001)
    try:
        with switch_interval(0.0005):
            assert sys.getswitchinterval() == pytest.approx(0.0001, abs=2e-6)
        assert sys.getswitchinterval() == pytest.approx(0.0001, abs=2e-6)
    finally:
        sys.setswitchinterval(before)


def test_collection_pauses_sets_existing_objects_aside_and_restores_on_error():
    assert gc.isenabled() and not gc.get_freeze_count()
    with pytest.raises(RuntimeError), garbage_collection_paused():
        assert not gc.isenabled()
        assert gc.get_freeze_count() > 0
        # A collection inside looks only at objects made since entry: the cycle is freed.
        cycle = Node()
        cycle.next = cycle
        witness = weakref.ref(cycle)
        del cycle
        assert witness() is not None  # automatic collection is off: the cycle waits
        gc.collect()
        assert witness() is None
        raise RuntimeError("the job failed")
    assert gc.isenabled() and not gc.get_freeze_count()


def test_a_disabled_collector_stays_disabled_and_threads_share_one_count():
    gc.disable()
    try:
        entered, leave = threading.Barrier(3), threading.Event()

        def job():
            with garbage_collection_paused():
                entered.wait()
                leave.wait()

        threads = [threading.Thread(target=job) for _ in range(2)]
        for thread in threads:
            thread.start()
        entered.wait()
        assert not gc.isenabled() and gc.get_freeze_count() > 0
        leave.set()
        for thread in threads:
            thread.join()
        assert not gc.isenabled() and not gc.get_freeze_count()
    finally:
        gc.enable()
