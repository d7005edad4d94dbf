"""skfiber.core.jit: numba's disk cache shared by processes that compile at the same time.

numba's own cache saves without a lock: two processes compiling two signatures of one function
can both write "data file 1", and the index can end up naming the other signature's machine code
(a wrong result or a crash in every later process).  The test forces that interleaving by slowing
numba's index and data writes in two compiling processes, then loads both signatures in fresh
processes and checks their results.
"""
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from skfiber.core import jit
from skfiber.core.jit import LOCK_NAME, cache_lock, njit

posix_lock = pytest.mark.skipif(jit.fcntl is None, reason="no fcntl (Windows): the cache is numba's own")

KERNEL = """\
from skfiber.core.jit import njit


@njit(cache=True)
def scaled_sum(x, n):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * n
    return s + x.itemsize * 1000
"""

# writer: slows numba's writes (sleep before the index, then before the data); says it is ready and
# compiles when the test says go
WRITER = """\
import pathlib, sys, time
import numpy as np
from numba.core import caching

which, index_delay, data_delay = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
save_index, save_data = caching.IndexDataCacheFile._save_index, caching.IndexDataCacheFile._save_data

def slow_index(self, overloads):
    time.sleep(index_delay)
    save_index(self, overloads)

def slow_data(self, name, data):
    time.sleep(data_delay)
    save_data(self, name, data)

caching.IndexDataCacheFile._save_index = slow_index
caching.IndexDataCacheFile._save_data = slow_data
import kernel
x, n = (np.arange(3.0), 2) if which == "A" else (np.arange(3, dtype=np.int32), 5)
pathlib.Path("ready_" + which).write_text("")
while not pathlib.Path("go").exists():
    time.sleep(0.001)
print(kernel.scaled_sum(x, n))
"""

READER = """\
import sys
import numpy as np
import kernel
x, n = (np.arange(3.0), 2) if sys.argv[1] == "A" else (np.arange(3, dtype=np.int32), 5)
print(kernel.scaled_sum(x, n), sum(kernel.scaled_sum.stats.cache_hits.values()))
"""


def run(folder, env, script, *args):
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@posix_lock
def test_two_processes_compiling_two_signatures_keep_the_cache_consistent(tmp_path):
    (tmp_path / "kernel.py").write_text(KERNEL)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    # unlocked, this order leaves the index naming B's signature and file 1 holding A's code:
    # A reads the index, writes it 1 s later, writes data 1 2 s after that; B reads it, writes it 1.5 s
    # later and data 1 at once
    writers = [run(tmp_path, env, WRITER, "A", 1.0, 2.0), run(tmp_path, env, WRITER, "B", 1.5, 0.0)]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready_{which}").exists() for which in "AB"):  # both have imported skfiber
        assert time.monotonic() < deadline and all(writer.poll() is None for writer in writers)
        time.sleep(0.01)
    (tmp_path / "go").write_text("")
    outputs = [writer.communicate(timeout=120) for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0], outputs
    assert [float(out) for out, _ in outputs] == [8006.0, 4015.0]  # 2·(0+1+2) + 8000, 5·(0+1+2) + 4000
    for which, expected in (("B", 4015.0), ("A", 8006.0)):
        reader = run(tmp_path, env, READER, which)
        out, err = reader.communicate(timeout=120)
        assert reader.returncode == 0, err
        value, hits = out.split()
        assert (float(value), int(hits)) == (expected, 1), (which, out, err)  # loaded, and the right code


def test_njit_without_cache_compiles_in_memory_only():
    @njit
    def twice(x):
        return 2 * x

    assert twice(2.5) == 5.0
    assert type(twice._cache).__name__ == "NullCache"


def test_njit_keeps_the_options():
    @njit(cache=False, error_model="numpy")
    def ratio(a, b):
        return a / b

    assert np.isinf(ratio(1.0, 0.0))  # numpy's error model: no ZeroDivisionError


@posix_lock
def test_cache_lock_excludes_a_reader_while_a_writer_holds_it(tmp_path):
    released = tmp_path / "released"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        import time
        from pathlib import Path
        from skfiber.core.jit import cache_lock
        with cache_lock({str(tmp_path)!r}, exclusive=True):
            print("held", flush=True)
            time.sleep(1.0)
            Path({str(released)!r}).write_text("")
        """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with cache_lock(tmp_path, exclusive=False) as held:
        written_before = released.exists()  # the writer finished before the reader got in
    holder.wait(timeout=60)
    assert held and written_before and (tmp_path / LOCK_NAME).exists()


def test_cache_lock_of_a_missing_folder_runs_unlocked(tmp_path):
    with cache_lock(tmp_path / "missing", exclusive=True) as held:
        assert held is False


@pytest.mark.parametrize("module", ["skfiber.block_tridiagonal", "skfiber.contact.fiber_kernels",
                                    "skfiber.rigid.pose_kernel", "skfiber.hill.curve_kernels"])
def test_library_kernels_use_the_locked_cache(module):
    import importlib

    from numba.core.registry import CPUDispatcher

    kernels = [value for value in vars(importlib.import_module(module)).values() if isinstance(value, CPUDispatcher)]
    assert kernels
    assert {type(kernel._cache).__name__ for kernel in kernels} == {"_LockedFunctionCache"}


@posix_lock
def test_cache_lock_nested_in_one_thread_does_not_wait_for_itself(tmp_path):
    with cache_lock(tmp_path, exclusive=False) as outer:
        with cache_lock(tmp_path, exclusive=True) as inner:  # a second flock here would never return
            assert outer and inner
    with cache_lock(tmp_path, exclusive=True) as again:  # released at the end of the outer block
        assert again


def test_cache_lock_runs_unlocked_where_the_file_system_refuses_flock(tmp_path, monkeypatch):
    class NoFlock:
        LOCK_EX = LOCK_SH = 0

        @staticmethod
        def flock(handle, operation):
            raise OSError(38, "Function not implemented")

    monkeypatch.setattr(jit, "fcntl", NoFlock)
    ran = False
    with cache_lock(tmp_path, exclusive=True) as held:
        ran = True
    assert ran and held is False


def test_njit_refuses_a_signature():
    with pytest.raises(TypeError, match="takes no signature"):
        njit("float64(float64)")



CALLER = """\
import numpy as np
from skfiber.core.jit import njit


@njit(cache=True)
def arrays(x):
    return x.copy(), np.zeros(2, np.int64), x + 1.0, np.ones(3, np.int64)


@njit(cache=True)
def total(x):
    a, b, c, d = arrays(x)
    return a.sum() + b.sum() + c.sum() + d.sum()


@njit
def other(x):
    return x + 1
"""

STEPS = """\
import glob, os, sys
import numpy as np
import caller
x = np.arange(3.0)
for action in sys.argv[1:]:
    if action == "total":
        print(caller.total(x))
    elif action == "other":
        caller.other(1.0)
    elif action == "forget-arrays":
        for path in glob.glob(os.path.join(os.environ["NUMBA_CACHE_DIR"], "*", "caller.arrays-*")):
            os.remove(path)
    elif action == "arrays":
        print([a.tolist() for a in caller.arrays(x)])
"""


def test_a_kernel_cached_inside_another_and_by_itself_keeps_its_environment(tmp_path):
    # numba numbers compilations 1, 2, ... per process and names a function's environment (the dtypes
    # its code boxes) by that number.  1: total (1) and arrays (2) compiled and cached; arrays' own cache
    # dropped.  2: total loaded (with arrays' environment inside), `other` compiled (1), arrays compiled
    # again (2): the same name, so numba extended the loaded environment and cached code reading its
    # third entry.  3: total loaded, then arrays: numba reused total's two-entry environment for it and
    # failed with "SystemError: ... returned a result with an exception set" (the cause, 'descr' is NULL)
    (tmp_path / "caller.py").write_text(CALLER)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    outputs = []
    for actions in (["total", "forget-arrays"], ["total", "other", "arrays"], ["total", "arrays"]):
        proc = subprocess.run([sys.executable, "-c", STEPS, *actions], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outputs.append(proc.stdout.split("\n")[:-1])
    expected_arrays = "[[0.0, 1.0, 2.0], [0, 0], [1.0, 2.0, 3.0], [1, 1, 1]]"
    assert outputs == [["12.0"], ["12.0", expected_arrays], ["12.0", expected_arrays]]


CALLEE = """\
from skfiber.core.jit import njit


@njit(inline="always", cache=True)
def law(x):
    return {factor} * x
"""

USER = """\
from skfiber.core.jit import njit
from callee import law


@njit(cache=True)
def force(x):
    return law(x) + 1.0
"""

DIGEST = """\
import sys
import skfiber.core.jit as jit
jit.package_digest = lambda: sys.argv[1]  # the package's modules as they are in this process
import user
print(user.force(2.0), sum(user.force.stats.cache_hits.values()))
"""


def test_an_edit_of_a_called_function_in_another_file_recompiles_its_callers(tmp_path):
    # numba's cache keeps `force` while user.py is unchanged, though its machine code holds `law` of
    # callee.py; skfiber keys the cache on the package's digest as well, so an edit of the package (here
    # standing for callee.py, which the test's processes are told by the digest) compiles `force` anew
    (tmp_path / "user.py").write_text(USER)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "cache"))

    def run_with(factor, digest):
        (tmp_path / "callee.py").write_text(CALLEE.format(factor=factor))
        proc = subprocess.run([sys.executable, "-c", DIGEST, digest], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        value, hits = proc.stdout.split()
        return float(value), int(hits)

    assert run_with(3.0, "first") == (7.0, 0)   # compiled and cached
    assert run_with(3.0, "first") == (7.0, 1)   # loaded
    assert run_with(3.0, "second") == (7.0, 0)  # another package: compiled again
    assert run_with(5.0, "third") == (11.0, 0)  # the edited law: compiled again, the new value
    assert run_with(5.0, "third") == (11.0, 1)


def test_source_digest_follows_the_text_and_names_of_the_files(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "pkg" / "notes.txt").write_text("not a module")
    first = jit.source_digest(tmp_path / "pkg")
    (tmp_path / "pkg" / "notes.txt").write_text("changed")
    assert jit.source_digest(tmp_path / "pkg") == first  # only the modules count
    (tmp_path / "pkg" / "sub" / "b.py").write_text("y = 3\n")
    second = jit.source_digest(tmp_path / "pkg")
    assert second != first
    (tmp_path / "pkg" / "sub" / "b.py").rename(tmp_path / "pkg" / "sub" / "c.py")
    assert jit.source_digest(tmp_path / "pkg") not in (first, second)


@pytest.fixture
def package_at(monkeypatch):
    """Point the package digest at another folder; the process's own digest and start state are recomputed
    afterwards."""
    def point(root):
        monkeypatch.setattr(jit, "PACKAGE_ROOT", root)
        jit.package_digest.cache_clear()
        jit.sources_at_start.cache_clear()

    yield point
    jit.package_digest.cache_clear()
    jit.sources_at_start.cache_clear()


def test_a_package_changed_while_a_process_runs_gets_a_digest_of_that_process_alone(tmp_path, package_at):
    # the process loaded its kernels from the files as they were; files edited since then (a pull, an edit
    # during a long session) are not the code in memory: no cache entry may be loaded or saved under their
    # digest
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "kernels.py").write_text("SCALE = 1.0\n")
    package_at(pkg)
    jit.sources_at_start()  # (what njit records when it makes the first cached kernel)
    assert jit.package_digest() == jit.source_digest(pkg)  # unchanged: the shared digest
    (pkg / "kernels.py").write_text("SCALE = 2.0  # edited\n")
    jit.package_digest.cache_clear()
    mine = jit.package_digest()
    assert mine.startswith(jit.source_digest(pkg) + "-changed-while-running-")
    jit.package_digest.cache_clear()
    assert jit.package_digest() != mine  # (another process's, had it been asked the same)
    jit.sources_at_start.cache_clear()
    jit.package_digest.cache_clear()
    assert jit.package_digest() == jit.source_digest(pkg)  # a process started after the edit shares it


EDIT_WHILE_RUNNING = """\
import pathlib, sys
import skfiber.core.jit as jit
jit.PACKAGE_ROOT = pathlib.Path.cwd()  # this folder stands for the package
import user                              # the process loads its kernels (the law with factor 3)
if sys.argv[1] == "edit":
    pathlib.Path("callee.py").write_text(sys.argv[2])  # edited on disk while the process runs
print(user.force(2.0), sum(user.force.stats.cache_hits.values()))
"""


def test_code_edited_while_a_process_runs_is_not_cached_under_the_new_files(tmp_path):
    # process A imports the law (factor 3), the file is then edited (factor 5), A compiles its old code; a
    # process B started after the edit must run the new law, not load A's machine code
    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "callee.py").write_text(CALLEE.format(factor=3.0))
    env = dict(os.environ, PYTHONPATH=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "cache"))

    def run(*args):
        proc = subprocess.run([sys.executable, "-c", EDIT_WHILE_RUNNING, *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        value, hits = proc.stdout.split()
        return float(value), int(hits)

    assert run("edit", CALLEE.format(factor=5.0)) == (7.0, 0)  # A: the code it loaded, compiled
    assert run("keep") == (11.0, 0)  # B: the edited law, compiled (not A's machine code)
    assert run("keep") == (11.0, 1)  # C: B's, loaded


def test_an_unwritable_cache_folder_is_said_and_its_stand_in_removed(tmp_path):
    """SKFIBER_CACHE_DIR naming a file: the forms compile into a temporary folder, a warning names the variable,
    the folder and the way out, the compile message does not claim a cache, and the stand-in is gone after the
    process (it was left behind, one per process)."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    script = textwrap.dedent("""
        import warnings, skfiber as sf
        from skfiber.compile import cache, kernel
        kernel.REPORT_SECONDS = 0.0
        model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, law=sf.paper_law())])
        model.fix(model.fibers[0], "start")
        model.add_gravity()
        sf.simulate(model, t_end=0.01, dt=0.01, progress=False)
        print("stand-in:", cache.writable_folder(), cache.cache_is_temporary())
    """)
    env = {**os.environ, "SKFIBER_CACHE_DIR": str(blocker / "cache")}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"the cache of compiled code, {blocker / 'cache' / 'laws'} (SKFIBER_CACHE_DIR), cannot be written" \
        in proc.stderr and "set SKFIBER_CACHE_DIR to a writable folder to keep them" in proc.stderr
    assert "not cached (the cache folder is not writable)" in proc.stderr and "cached for later runs" \
        not in proc.stderr
    stand_in = proc.stdout.split("stand-in: ")[1].split()
    assert stand_in[1] == "True" and not os.path.exists(stand_in[0])
