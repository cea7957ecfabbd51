"""One BLAS thread for a block of matrix products that are small (a thousand rows or so).

OpenBLAS starts as many threads as cores for every product; on small matrices the second
thread only waits for the first, and a web or task process spends a second core on it that
the other requests or tasks needed (measured on "For you" at 1M papers: 161 ms of CPU for
98 ms of wall time with two threads, 74 ms of CPU for the same wall time with one). The
libraries are found once per process with threadpoolctl.
"""

from __future__ import annotations

import functools

from threadpoolctl import ThreadpoolController

__all__ = ["blas_controller", "one_blas_thread"]


@functools.cache
def blas_controller() -> ThreadpoolController:
    """The process's BLAS libraries (numpy's and SciPy's OpenBLAS), found once."""
    return ThreadpoolController()


def one_blas_thread():
    """A context manager: inside it, BLAS runs on one thread; the previous limits come back
    after it, errors included. Nestable."""
    return blas_controller().limit(limits=1, user_api="blas")
