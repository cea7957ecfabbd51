"""Process-wide interpreter settings held for the length of a bulk job (a snapshot import, a
tagging run): the garbage collector paused with the process's existing objects set aside,
and a shorter thread switch interval. Each is the process's, not the thread's, so blocks
that overlap (two web threads running tasks inline with the embedded default) share one
count: the first to enter changes the setting, the last to leave restores what the first
found."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["garbage_collection_paused", "switch_interval"]

_lock = threading.Lock()
_gc_users = 0
_gc_was_enabled = True
_switch_users = 0
_switch_saved = 0.0


@contextmanager
def garbage_collection_paused() -> Iterator[None]:
    """Run the block with automatic garbage collection off and the objects that exist on entry
    set aside (``gc.freeze``), so that the collections the job makes itself (``gc.collect()``
    between batches) look only at the job's own objects, not at the hundreds of thousands a
    Django process holds for its life. On leaving, the objects are given back to the collector
    and automatic collection is restored as it was."""
    global _gc_users, _gc_was_enabled
    with _lock:
        if _gc_users == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
            gc.freeze()
        _gc_users += 1
    try:
        yield
    finally:
        with _lock:
            _gc_users -= 1
            if _gc_users == 0:
                gc.unfreeze()
                if _gc_was_enabled:
                    gc.enable()


@contextmanager
def switch_interval(seconds: float) -> Iterator[None]:
    """Run the block with the interpreter's switch interval (``sys.setswitchinterval``,
    seconds) at most ``seconds``, then restore it. A thread that waited on I/O (a database
    round trip) gets the GIL back from a thread busy in Python after at most this long."""
    global _switch_users, _switch_saved
    with _lock:
        if _switch_users == 0:
            _switch_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(seconds, _switch_saved))
        _switch_users += 1
    try:
        yield
    finally:
        with _lock:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_saved)
