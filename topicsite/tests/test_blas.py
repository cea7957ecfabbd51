"""``topicsite.blas``: one BLAS thread inside the block, the previous limits after it (errors
included), nested blocks restoring in order."""

from __future__ import annotations

import numpy  # noqa: F401 - loads OpenBLAS, so threadpoolctl has a library to limit
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from topicsite.blas import one_blas_thread


def blas_threads() -> set[int]:
    return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def test_one_thread_inside_and_the_previous_limit_after_even_on_an_error():
    with threadpool_limits(limits=2, user_api="blas"):
        assert blas_threads() == {2}
        with one_blas_thread():
            assert blas_threads() == {1}
            with one_blas_thread():
                assert blas_threads() == {1}
            assert blas_threads() == {1}
        assert blas_threads() == {2}
        with pytest.raises(RuntimeError), one_blas_thread():
            raise RuntimeError("inside")
        assert blas_threads() == {2}
