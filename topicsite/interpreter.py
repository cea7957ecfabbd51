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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["garbage_collection_paused", "switch_interval"]

_lock = threading.Lock()


class _Shared:
    """One process-wide setting: changed by the first of overlapping blocks, restored by the
    last to leave to what the first found."""

    def __init__(self) -> None:
        self.users = 0
        self.saved: Any = None

    @contextmanager
    def held(self, change: Callable[[], Any], restore: Callable[[Any], None]) -> Iterator[None]:
        """``change()`` (returning what ``restore`` needs) on the first entry; ``restore`` of
        that on the last exit."""
        with _lock:
            if self.users == 0:
                self.saved = change()
            self.users += 1
        try:
            yield
        finally:
            with _lock:
                self.users -= 1
                if self.users == 0:
                    restore(self.saved)


_collector = _Shared()
_interval = _Shared()


def _collector_pause() -> bool:
    enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    return enabled


def _collector_resume(was_enabled: bool) -> None:
    gc.unfreeze()
    if was_enabled:
        gc.enable()


def garbage_collection_paused():
    """Run the block with automatic garbage collection off and the objects that exist on entry
    set aside (``gc.freeze``), so that the collections the job makes itself (``gc.collect()``
    between batches) look only at the job's own objects, not at the hundreds of thousands a
    Django process holds for its life. On leaving, the objects are given back to the collector
    and automatic collection is restored as it was."""
    return _collector.held(_collector_pause, _collector_resume)


def switch_interval(seconds: float):
    """Run the block with the interpreter's switch interval (``sys.setswitchinterval``,
    seconds) at most ``seconds``, then restore it. A thread that waited on I/O (a database
    round trip) gets the GIL back from a thread busy in Python after at most this long."""

    def shorten() -> float:
        saved = sys.getswitchinterval()
        sys.setswitchinterval(min(seconds, saved))
        return saved

    return _interval.held(shorten, sys.setswitchinterval)
