"""Threads of the parallel kernels: the per-block setting, its restoration and bad counts; one BLAS thread
during runs."""
import os
import subprocess
import sys

import numba
import pytest

import skfiber  # noqa: F401  (sets the OpenMP wait policy)
from skfiber.threads import blas_threads, kernel_threads, threads_for, threads_of_kernels


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
@pytest.mark.parametrize("setting", [threads_of_kernels, blas_threads])
def test_bad_counts_are_refused(bad, setting):
    with pytest.raises(ValueError, match="count must be None or an integer"):
        with setting(bad):
            pass


BLAS_THREADS_IN_RUNS = """
import skfiber as sf
import skfiber.statics
from skfiber.threads import blas_threads
from threadpoolctl import threadpool_info

def blas():
    return sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})

fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)
model = sf.Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
seen = []
sf.simulate(model, t_end=0.02, dt=0.01, progress=False, callback=lambda state, info: seen.append(blas()))
newton = skfiber.statics.newton
skfiber.statics.newton = lambda *args, **kwargs: (seen.append(blas()), newton(*args, **kwargs))[1]
skfiber.statics.solve_static(model)
print(blas(), seen[0], seen[-1], blas())
with blas_threads(1):
    inside = blas()
print(inside, blas())
"""


def run_with_two_blas_threads(script: str) -> list[str]:
    """The script's output lines in a process whose BLAS starts with 2 threads (skipped where it cannot)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2", MKL_NUM_THREADS="2")
    probe = subprocess.run([sys.executable, "-c", "import numpy; from threadpoolctl import threadpool_info; "
                            "print(sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'}))"],
                           env=env, capture_output=True, text=True, check=True)
    if probe.stdout.strip() != "[2]":
        pytest.skip(f"the BLAS here does not run on 2 threads (it reports {probe.stdout.strip()}: one CPU?)")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()


def test_runs_use_one_blas_thread_and_restore_the_setting():
    run_line, block_line = run_with_two_blas_threads(BLAS_THREADS_IN_RUNS)
    assert run_line == "[2] [1] [1] [2]"  # before, during simulate and solve_static, after
    assert block_line == "[1] [2]"


BLAS_THREADS_OVERLAPPING = """
import threading
from skfiber.threads import blas_threads
from threadpoolctl import threadpool_info

def blas():
    return sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})

a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
seen = {}

def first():
    with blas_threads(1):
        a_in.set()
        b_in.wait()
    a_out.set()

def second():
    a_in.wait()
    with blas_threads(1):
        b_in.set()
        a_out.wait()  # the first block has closed; this one is still open
        seen["b"] = blas()

threads = [threading.Thread(target=first), threading.Thread(target=second)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(seen["b"], blas())
"""


def test_blocks_open_in_two_threads_keep_one_blas_thread_until_the_last_closes():
    assert run_with_two_blas_threads(BLAS_THREADS_OVERLAPPING) == ["[1] [2]"]


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
