"""Threads of the parallel kernels: the per-block setting, its restoration and bad counts."""
import os
import subprocess
import sys

import numba
import pytest

import skfiber  # noqa: F401  (sets the OpenMP wait policy)
from skfiber.threads import kernel_threads, threads_for, threads_of_kernels


def test_the_setting_holds_within_the_block_and_is_restored():
    before = kernel_threads()
    with threads_of_kernels(1):
        assert kernel_threads() == 1
    assert kernel_threads() == before
    with threads_of_kernels(10_000):  # capped at numba's thread count
        assert kernel_threads() == numba.config.NUMBA_NUM_THREADS
    with pytest.raises(RuntimeError):
        with threads_of_kernels(1):
            raise RuntimeError("inside")
    assert kernel_threads() == before
    with threads_of_kernels(None):
        assert kernel_threads() == before


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_counts_are_refused(bad):
    with pytest.raises(ValueError, match="count must be None or an integer"):
        with threads_of_kernels(bad):
            pass


@pytest.mark.parametrize("given, expected", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_waiting_threads_sleep_unless_the_environment_says_otherwise(given, expected):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    out = subprocess.run([sys.executable, "-c", "import os, skfiber; print(os.environ['OMP_WAIT_POLICY'])"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


def test_small_work_runs_serially():
    assert threads_for(99, 100) == 1
    assert threads_for(100, 100) == kernel_threads()
    with threads_of_kernels(1):
        assert threads_for(10**9, 100) == 1
