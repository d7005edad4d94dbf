"""Running a study's rows on dask.distributed (or one by one), recording each run as it finishes.

:func:`run_study` starts a ``LocalCluster`` with one single-threaded worker
process per core (or connects to the scheduler it is given), submits one task
per run that has not succeeded yet in the study folder, and records each result as it
arrives (:class:`~skfiber.study.records.StudyFolder`; the tidy table is rewritten
every :data:`TABLE_SECONDS` while they finish), printing the completed, failed and
remaining runs with an ETA.  The run function's exceptions are
caught in the task and recorded as failed runs with their message; the study
goes on.  A worker that dies takes its tasks with it and the scheduler runs
them again on another worker (dask's ``allowed-failures``, 3 by default);
``warmup`` runs once in every worker process when it starts, so that numba
compiles or loads a model's kernels once per worker, not once per task.

Examples
--------
>>> import tempfile
>>> from skfiber.study import Parameter, run_study
>>> from skfiber.study.targets import quadratic
>>> with tempfile.TemporaryDirectory() as tmp:
...     result = run_study(quadratic, [Parameter("a", 0.0, 1.0)], design="grid", n=3, out=tmp, scheduler="serial",
...                        progress=False)
>>> result.completed, result.failed, list(result.table["y"])
(3, 0, [0.0, 0.25, 1.0])
"""
from __future__ import annotations

import math
import os
import socket
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..core.interrupt import caused_by_ctrl_c, reraise_as_interrupt
from ..threads import threads_of_kernels
from .design import make_design, parameter_list
from .interrupts import PRELOAD, ctrl_c_flag
from .records import TABLE_COLUMNS, StudyFolder

__all__ = ["StudyResult", "run_study", "run_on_dask", "warmup_plugin", "connect", "close_own", "check_loadable",
           "load_error", "local_cluster", "serial_conflict", "RESERVED_SERIES_NAMES"]

#: names a run's series may not have: numpy.savez, which writes them, takes them as its own arguments
RESERVED_SERIES_NAMES = frozenset({"file", "allow_pickle"})


@dataclass
class StudyResult:
    """What a study call did: runs ``completed`` and ``failed`` in this call, ``skipped`` (succeeded
    before: a resumed study), ``wall_s``, the ``table`` of all recorded runs (pandas) and its file ``table_path``."""

    completed: int
    failed: int
    skipped: int
    wall_s: float
    table: object
    table_path: object


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"


def execute_run(run: Callable, index: int, params: dict, *,
                kernel_threads: int | None = None) -> tuple[dict, dict | None]:
    """One run: (its record, its time series or None).  Exceptions of ``run`` make a failed record.

    ``kernel_threads``: the threads of skfiber's parallel numba kernels during the run (None: numba's
    setting).  A study's workers each run one simulation per core, so they run them with 1: more would
    compete for the cores the other workers use.
    """
    start = time.perf_counter()
    series = None
    try:
        with threads_of_kernels(kernel_threads):
            outputs = run(dict(params))
        if not isinstance(outputs, dict):
            raise TypeError(f"the run function must return a dict of named outputs, got {type(outputs).__name__}")
        outputs = dict(outputs)
        series = outputs.pop("series", None)
        if series is not None:
            if not isinstance(series, dict):
                raise TypeError(f"'series' must be a dict of named arrays, got {type(series).__name__}")
            try:
                series = {str(k): np.asarray(v) for k, v in series.items()}
            except (TypeError, ValueError) as err:
                raise TypeError(f"every array under 'series' must be rectangular ({err})") from None
            ragged = [k for k, v in series.items() if v.dtype == object]
            if ragged:
                raise TypeError(f"the series {ragged[0]!r} is not a rectangular array of numbers")
            taken = sorted(set(series) & RESERVED_SERIES_NAMES)
            if taken:  # (numpy.savez's own arguments: the array would be lost or the saving fail)
                raise TypeError(f"a series may not be named {taken[0]!r} (numpy's .npz writer takes that name for "
                                "itself); rename it")
        clash = sorted(set(map(str, outputs)) & (set(params) | set(TABLE_COLUMNS)))
        if clash:
            raise ValueError(f"output {clash[0]!r} has the name of a parameter or of a column of the results table "
                             f"({', '.join(TABLE_COLUMNS)}); rename it")
        values = {}
        for name, value in outputs.items():
            try:
                values[str(name)] = float(value)
            except (TypeError, ValueError):
                raise TypeError(f"output {name!r} must be a number, got {value!r} (time series go under "
                                "'series': a dict of arrays)") from None
        rec = dict(status="ok", error="", outputs=values)
    except (Exception, SystemExit) as err:  # a failed run is recorded, the study goes on
        if caused_by_ctrl_c(err):  # (numba's SystemError around a Ctrl-C in a compiled function: not a failure)
            reraise_as_interrupt(err)
        rec = dict(status="failed", error=f"{type(err).__name__}: {err}", outputs={})
        series = None
    rec.update(run=int(index), params=dict(params), wall_s=time.perf_counter() - start, worker=_worker_name())
    return rec, series


def _clock(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class _Progress:
    """The study's progress on stderr: done, failed, remaining, and an ETA from the pace since the first run
    finished (the start-up of the workers and their first compilation are not a pace).  A line is printed at
    most every :data:`PROGRESS_SECONDS` (:data:`PROGRESS_SECONDS_TERMINAL` on a terminal), at once when a run
    fails, and at the end: whole lines, so that a run's own messages never land inside one."""

    def __init__(self, total: int, skipped: int, enabled: bool, *, stream=None):
        self.total, self.skipped, self.enabled = total, skipped, enabled
        self.stream = sys.stderr if stream is None else stream
        terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = PROGRESS_SECONDS_TERMINAL if terminal else PROGRESS_SECONDS
        self.first = None
        self.last_line = -math.inf
        self.done = self.failed = 0

    def update(self, ok: bool) -> None:
        self.done += 1
        self.failed += not ok
        now = time.perf_counter()
        if self.first is None:
            self.first = now
        if not self.enabled:
            return
        remaining = self.total - self.skipped - self.done
        if remaining and ok and now - self.last_line < self.interval:
            return
        self.last_line = now
        eta = (now - self.first) / (self.done - 1) * remaining if self.done > 1 else math.nan
        print(f"study: {self.skipped + self.done}/{self.total} done ({self.failed} failed), {remaining} remaining, "
              f"ETA {_clock(eta) if remaining else '0:00:00'}", file=self.stream, flush=True)


#: the study's progress line is printed at most this often (s) in a log, and on a terminal
PROGRESS_SECONDS, PROGRESS_SECONDS_TERMINAL = 10.0, 2.0


class _TableWriter:
    """The tidy table rewritten as runs finish, at most every ``TABLE_SECONDS`` (and at the end)."""

    def __init__(self, folder: StudyFolder):
        self.folder, self.last = folder, time.perf_counter()

    def update(self) -> None:
        if time.perf_counter() - self.last >= TABLE_SECONDS:
            self.folder.write_table()
            self.last = time.perf_counter()


#: how often the tidy table is rewritten while a study runs (s); every run is in runs.jsonl at once
TABLE_SECONDS = 5.0


def warmup_plugin(warmup: Callable[[], object]):
    """A worker plugin that calls ``warmup()`` once when a worker starts (a restarted one too)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class Warmup(WorkerPlugin):
        name = "skfiber-warmup"

        def __init__(self, call):
            self.call = call

        def setup(self, worker):
            self.call()

    return Warmup(warmup)


def serial_conflict(*, serial: bool, workers, scheduler) -> str | None:
    """What a command line's ``--serial`` conflicts with (its ``--workers`` and ``--scheduler``, None where not
    given), as the message for the user; None when nothing does.

    Examples
    --------
    >>> serial_conflict(serial=True, workers=2, scheduler=None)
    '--serial runs in this process, without dask; leave out --workers'
    >>> serial_conflict(serial=False, workers=2, scheduler="tcp://host:8786") is None
    True
    """
    given = [option for option, value in (("--workers", workers), ("--scheduler", scheduler)) if value is not None]
    if not serial or not given:
        return None
    return f"--serial runs in this process, without dask; leave out {' and '.join(given)}"


def connect(scheduler, workers: int | None = None):
    """(client, made here): a Client for ``scheduler`` (a Client, an address, or None for a LocalCluster)."""
    try:
        from distributed import Client
    except ImportError as err:
        raise ImportError("a parallel study needs dask.distributed: pip install 'dask[distributed]' "
                          "(or skfiber[study]); scheduler='serial' runs without it") from err
    if isinstance(scheduler, Client):
        return scheduler, False
    if scheduler is None:
        return Client(local_cluster((os.cpu_count() or 1) if workers is None else workers)), True
    try:
        refuse_at_once(scheduler)
        return Client(scheduler), True
    except (OSError, ValueError, TypeError) as err:  # (dask's messages do not say which address failed)
        kind = next(k for k in (OSError, ValueError, TypeError) if isinstance(err, k))
        raise kind(f"cannot connect to the dask scheduler {scheduler!r}: {' '.join(str(err).split())}; give "
                   "the address of a running scheduler (tcp://host:8786), or run without dask (--serial; "
                   "scheduler='serial' in Python)") from err


#: how long :func:`refuse_at_once` keeps trying a scheduler's TCP port that refuses (a scheduler started a moment
#: before the study may not listen yet) or does not answer, before it refuses the address or leaves it to dask (s)
CONNECT_CHECK_SECONDS = 5.0


def refuse_at_once(scheduler: str) -> None:
    """Raise ``OSError`` soon when a TCP scheduler address names no known host or nothing listens there.

    dask retries such an address until its connect timeout (30 s by default) before it says so.  A port
    that refuses is tried again for :data:`CONNECT_CHECK_SECONDS` (a scheduler that is starting), and
    refused only then.  An address that does not answer in that time, a name server that fails for
    now, an address dask cannot parse, and one of another protocol (``tls://``, ``inproc://``, …) are
    left to dask.
    """
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(scheduler)
        host, port = parse_host_port(location)
    except (ValueError, TypeError):
        return
    if scheme != "tcp":
        return
    deadline = time.monotonic() + CONNECT_CHECK_SECONDS
    while True:
        try:
            socket.create_connection((host, port), timeout=max(deadline - time.monotonic(), 0.1)).close()
            return
        except ConnectionRefusedError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)
        except socket.gaierror as err:
            if err.errno == socket.EAI_AGAIN:  # the name server failed for now: dask retries
                return
            raise
        except OSError:  # a timeout or a network that does not say: dask decides
            return


def load_error(payload: bytes) -> str:
    """'' when the pickled ``payload`` loads in this process, else the error (:func:`check_loadable` runs it
    on a worker, where a failure must not take the worker down)."""
    import cloudpickle

    try:
        cloudpickle.loads(payload)
    except Exception as err:  # (what the worker would die of, said instead)
        return f"{type(err).__name__}: {err}"
    return ""


def check_loadable(client, functions: dict) -> None:
    """Check on one worker of ``client`` that every function of ``functions`` ({what: function}) loads there.

    A worker that cannot load a task's function (its module missing on the worker, or failing to import
    there) dies of it in dask, its nanny does not start it again, and a study would wait for ever; the study
    stops at once instead.  A cluster without workers yet (an adaptive one) is not checked.

    Raises
    ------
    ValueError
        Naming the function, the worker's error and what to do.
    """
    import cloudpickle

    workers = list(client.scheduler_info().get("workers", {}))
    if not workers:
        return
    for what, function in functions.items():
        problem = client.run(load_error, cloudpickle.dumps(function), workers=workers[:1])[workers[0]]
        if problem:
            name = f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"
            raise ValueError(f"the {what} {name} cannot be loaded on the study's workers ({problem}): the workers "
                             "import the module that defines it, which must import there as it does here (a "
                             "module of the installed packages or on the workers' path, without work that "
                             "fails in another process)")


def close_own(client) -> None:
    """Close a client that :func:`connect` made, and the local cluster it started."""
    client.close()
    if client.cluster is not None:
        client.cluster.close()


#: dask settings of the clusters a study starts: what wakes a worker while it runs a task, for a dashboard or
#: diagnostics a study does not show, less often (or never) — the statistical profiler (every 10 ms), the
#: event-loop health tick (20 ms), the system monitor (0.5 s) and the nanny's memory check (0.1 s)
QUIET_WORKERS = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1000ms",
    "distributed.admin.system-monitor.interval": "5000ms",
    "distributed.worker.memory.monitor-interval": "1000ms",
}


def local_cluster(workers: int):
    """The ``LocalCluster`` a study starts: ``workers`` single-threaded worker processes, no dashboard, and
    the settings :data:`QUIET_WORKERS`: the workers' statistical profiler off (it samples the running
    task's stack every 10 ms for a dashboard the study does not show, and slowed the tasks measurably)
    and their other periodic wake-ups rarer (``docs/performance.md``).  Its workers ignore Ctrl-C, which
    the study's process handles (:mod:`skfiber.study.interrupts`)."""
    import dask
    from distributed import LocalCluster

    preload = list(dask.config.get("distributed.worker.preload", None) or [])  # the user's, kept
    if PRELOAD not in preload:
        preload.append(PRELOAD)
    with dask.config.set({**QUIET_WORKERS, "distributed.worker.preload": preload}):
        # (no dashboard; its HTTP server on a free port: the default one, 8787, may be another cluster's)
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                            scheduler_kwargs={"dashboard": False})


def run_study(run: Callable[[dict], dict], parameters, *, design: str, n: int, out, seed: int = 0,
              scheduler=None, workers: int | None = None, warmup: Callable[[], object] | None = None,
              target: str | None = None, progress: bool = True, retries: int = 1) -> StudyResult:
    """Run ``run(params)`` for every row of a design, in parallel, recording each run in ``out``.

    Parameters
    ----------
    run
        A module-level function (workers import it) from a parameter dict to a dict of named scalar
        outputs; time series may go under the key ``"series"`` (a dict of arrays, saved per run).
    parameters, design, n, seed
        The design (:func:`skfiber.study.design.make_design`).
    out
        The study folder: a new one, or the folder of the same study to resume (the runs that succeeded are
        skipped, failed ones run again).
    scheduler
        None (a ``LocalCluster`` of ``workers`` processes, default one per core), the address of a running
        scheduler (``"tcp://host:8786"``), a ``distributed.Client``, or ``"serial"`` (in this process, no dask).
    warmup
        Called once per worker process as it starts (e.g. a tiny run that compiles the model's kernels).
    target
        The study's name in its plan (default: the run function's qualified name).
    retries
        dask's extra attempts of a task that raised outside ``run`` (the study's own code in the worker;
        exceptions of ``run`` are recorded as failed runs, not retried).  A worker that dies is another matter:
        dask runs its tasks again on other workers up to ``distributed.scheduler.allowed-failures`` times (3 by
        default), and a finished run whose result was still held by the dead worker is run again too, or
        recorded as failed (``KilledWorker``) once that count is spent.

    Returns
    -------
    StudyResult

    Raises
    ------
    ValueError
        For bad parameters or design (before anything runs), a folder that holds another study, or one in which
        another process is running a study at the time.
    TypeError
        For a ``run`` that is not callable, or an ``out`` that is not a path.

    Examples
    --------
    >>> import tempfile
    >>> from skfiber.study import Parameter, run_study
    >>> from skfiber.study.targets import quadratic                  # y = a²
    >>> with tempfile.TemporaryDirectory() as out:
    ...     result = run_study(quadratic, [Parameter("a", 0.0, 2.0)], design="grid", n=3, out=out,
    ...                        scheduler="serial", progress=False)
    >>> result.completed, result.table["a"].tolist(), result.table["y"].tolist()
    (3, [0.0, 1.0, 2.0], [0.0, 1.0, 4.0])
    """
    parameters = parameter_list(parameters)
    rows = make_design(parameters, design, n=n, seed=seed)
    if not callable(run):
        raise TypeError(f"run must be a function from a parameter dict to a dict of outputs, got {run!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be an integer ≥ 0, got {retries!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer ≥ 1, got {workers!r}")
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be the study's folder (a path: a new folder, or this study's to resume), got "
                        f"{out!r}")
    folder = StudyFolder(out)
    name = target or f"{getattr(run, '__module__', '?')}.{getattr(run, '__qualname__', repr(run))}"
    with folder.hold():  # (another process running a study in the folder: refused)
        new = folder.start(dict(target=name, parameters=[[p.name, p.low, p.high, p.log] for p in parameters],
                                design=design, n=int(n), seed=int(seed), rows=rows))
        try:
            return _run_rows(run, rows, folder, scheduler=scheduler, workers=workers, warmup=warmup,
                             progress=progress, retries=retries)
        except BaseException:
            if new:  # a study that recorded no run (its scheduler unreachable) leaves no plan to refuse the next one
                folder.discard_plan()
            raise


def _run_rows(run, rows, folder: StudyFolder, *, scheduler, workers, warmup, progress, retries) -> StudyResult:
    """:func:`run_study`'s runs of ``rows`` that have not succeeded in ``folder`` yet, recorded there."""
    finished = folder.finished()
    todo = [k for k in range(len(rows)) if k not in finished]
    bar = _Progress(len(rows), len(rows) - len(todo), progress)
    table = _TableWriter(folder)
    start = time.perf_counter()

    def record(rec, series):
        folder.record(rec, series)
        bar.update(rec["status"] == "ok")
        table.update()

    try:
        if todo and scheduler == "serial":
            if warmup is not None:
                warmup()
            for k in todo:
                record(*execute_run(run, k, rows[k]))
        elif todo:
            run_on_dask(run, rows, todo, record, scheduler=scheduler, workers=workers, warmup=warmup,
                         retries=retries)
    except KeyboardInterrupt:
        try:
            folder.write_table()
        except (OSError, ImportError) as err:  # (the hint below matters more)
            print(f"study: the table could not be written ({err})", file=sys.stderr)
        print(f"study: interrupted; {len(folder.finished())} of {len(rows)} runs have succeeded, recorded in "
              f"{str(folder.path)!r}; the same call resumes it (and runs the failed ones again)", file=sys.stderr)
        raise
    path = folder.write_table()
    return StudyResult(bar.done - bar.failed, bar.failed, bar.skipped, time.perf_counter() - start,
                       folder.table(), path)


def run_on_dask(run, rows, todo, record, *, scheduler, workers, warmup, retries) -> None:
    """:func:`run_study`'s runs ``todo`` on a dask cluster (a local one of ``workers`` processes, or
    ``scheduler``), each handed to ``record(rec, series)`` as it finishes.  Ctrl-C, from the start of the
    cluster on, stops the study where it waits (:mod:`skfiber.study.interrupts`): KeyboardInterrupt, the
    runs on the user's cluster cancelled, the study's own cluster closed."""
    from distributed import as_completed

    with ctrl_c_flag() as interrupt:
        with interrupt.raising():  # the cluster's start: Ctrl-C stops it at once
            client, own = connect(scheduler, workers)
        futures: dict = {}
        try:
            with interrupt.raising():
                check_loadable(client, {"run function": run, **({"warm-up": warmup} if warmup else {})})
            if warmup is not None:
                with interrupt.raising():  # the workers' warm-up, which may be long
                    client.register_plugin(warmup_plugin(warmup))
            if not interrupt.requested:
                futures = {client.submit(execute_run, run, k, rows[k], kernel_threads=1, pure=False,
                                         retries=retries): k for k in todo}
            finished = as_completed(futures)
            while not (interrupt.requested or finished.is_empty()):
                batch = finished.next_batch(block=False)
                if not batch:
                    time.sleep(0.1)
                for future in batch:
                    k = futures[future]
                    try:
                        rec, series = future.result()
                    except Exception as err:  # the task itself failed: its workers died more than allowed
                        rec, series = dict(run=k, params=rows[k], status="failed", outputs={}, worker="",
                                           error=f"{type(err).__name__}: {err}", wall_s=float("nan")), None
                    record(rec, series)
            if interrupt.requested:
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            if not own and futures:  # the user's cluster goes on: this study's runs on it stop
                client.cancel(list(futures))
            raise
        finally:
            if own:
                close_own(client)
