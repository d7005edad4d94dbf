"""A parameter study's parallel speed: the same upper-limb runs serially and on a 2-worker dask LocalCluster.

64 runs of the upper limb at level 1 (``skfiber study upper-limb``'s target: a Latin hypercube of its six
parameters, fiber–fiber contact off) are run in this process and on the LocalCluster a study starts
(``skfiber.study.execute.local_cluster``: 2 worker processes, each warmed up once).  Prints both wall times
(the parallel one from the start of the cluster to the last result), the speedup, the start-up of the
cluster with the workers' warm-up, and the scheduling overhead per task: (workers × wall after the start-up
− Σ task wall) / tasks, the time a worker spent on anything but a run.

Then the same runs on a plain ``concurrent.futures`` process pool of as many processes (started the same
way, each warmed up once, no scheduler): the machine's own ceiling for running these tasks side by side.
On a shared VM two processes slow each other down (memory, caches, the host's other guests), so a
speedup below the number of workers is partly the machine's; the pool shows how much.

The three are repeated in ``--rounds`` rounds (default 3), their order reversed every other round, so that
a drift of the machine's speed within the call favours neither side.  This process is warmed up once
before the rounds (a one-run study: the target's warm-up and the study machinery's first call), untimed, while every round's cluster and pool start and warm up anew (counted): the
speedup errs low.  Each round's speedup is its serial time over its parallel time, and the summary gives the medians over the rounds with the lowest and highest
speedup.

Run: ``python benchmarks/bench_study.py [--runs N] [--workers K] [--rounds R]``.  Ends with
``summary: serial_s=… parallel_s=… speedup=… overhead_per_task_s=… speedup_min=… speedup_max=… rounds=…
pool_s=… pool_speedup=…``.
"""
from __future__ import annotations

import multiprocessing
import signal
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from skfiber.cli import ArgumentParser, positive_int, run_script
from skfiber.study import run_study
from skfiber.study.design import make_design
from skfiber.study.execute import execute_run
from skfiber.study.targets import TARGETS


def main(argv=None) -> dict:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=positive_int, default=64,
                        help="runs of the study, serially and in parallel (default 64)")
    parser.add_argument("--workers", type=positive_int, default=2,
                        help="worker processes of the local cluster (default 2)")
    parser.add_argument("--rounds", type=positive_int, default=3,
                        help="rounds of serial, cluster and pool, their order alternated (default 3)")
    parser.add_argument("--target", default="upper-limb", choices=sorted(TARGETS),
                        help="the model run by the study (default upper-limb: the upper limb at level 1)")
    args = parser.parse_args(argv)
    for name in ("runs", "workers", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    target = TARGETS[args.target]
    params = list(target.defaults)
    rows = make_design(params, "lhs", n=args.runs, seed=0)  # the study's rows, for the pool
    with tempfile.TemporaryDirectory() as warm:  # this process warm before any round, study machinery included
        run_study(target.run, params, design="lhs", n=1, seed=0, out=Path(warm) / "warm", scheduler="serial",
                  warmup=target.warmup, progress=False)  # (untimed: a conservative serial time)
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.rounds):
            # odd rounds run serial, cluster, pool; even ones the reverse: a drift of the machine within the
            # call then favours neither side
            order = ("serial", "cluster", "pool") if k % 2 == 0 else ("pool", "cluster", "serial")
            measured = {}
            for what in order:
                out = Path(tmp) / f"{what}{k}"
                if what == "serial":
                    measured[what] = _serial(target, params, args.runs, out)
                elif what == "cluster":
                    measured[what] = _cluster(target, params, args.runs, args.workers, out)
                else:
                    measured[what] = _pool(args.target, rows, args.workers)
            rounds.append(_report(k, args, measured))
    keys = ("serial_s", "parallel_s", "speedup", "overhead", "startup_s", "pool_s", "pool_speedup")
    median = {key: float(np.median([r[key] for r in rounds])) for key in keys}
    low, high = min(r["speedup"] for r in rounds), max(r["speedup"] for r in rounds)
    print(f"over {args.rounds} round{'s' if args.rounds > 1 else ''} (medians): serial {median['serial_s']:.1f} s, "
          f"{args.workers} workers {median['parallel_s']:.1f} s with their start of {median['startup_s']:.1f} s, "
          f"speedup {median['speedup']:.2f} (rounds {low:.2f}–{high:.2f}), plain pool's speedup "
          f"{median['pool_speedup']:.2f}")
    result = dict(median, speedup_min=low, speedup_max=high, rounds=rounds)
    print(f"summary: serial_s={median['serial_s']:.1f} parallel_s={median['parallel_s']:.1f} "
          f"speedup={median['speedup']:.2f} overhead_per_task_s={median['overhead']:.3f} "
          f"speedup_min={low:.2f} speedup_max={high:.2f} rounds={args.rounds} pool_s={median['pool_s']:.1f} "
          f"pool_speedup={median['pool_speedup']:.2f}")
    return result


def _serial(target, params, runs: int, out: Path) -> dict:
    """The study run serially in this process: wall time and table."""
    start = time.perf_counter()
    study = run_study(target.run, params, design="lhs", n=runs, seed=0, out=out, scheduler="serial",
                      progress=False)  # (this process is warm: see main)
    return dict(wall_s=time.perf_counter() - start, study=study)


def _cluster(target, params, runs: int, workers: int, out: Path) -> dict:
    """The study on a fresh LocalCluster of ``workers``: wall from the cluster's start to the last result,
    and the start with the workers' warm-up apart."""
    from distributed import Client

    from skfiber.study.execute import local_cluster, warmup_plugin

    start = time.perf_counter()
    with local_cluster(workers) as cluster, Client(cluster) as client:
        if target.warmup is not None:
            client.register_plugin(warmup_plugin(target.warmup))  # (runs on the workers there now)
        ready = time.perf_counter()
        study = run_study(target.run, params, design="lhs", n=runs, seed=0, out=out, scheduler=client,
                          progress=False)
        done = time.perf_counter()
    return dict(wall_s=done - start, startup_s=ready - start, steady_s=done - ready, study=study)


def _pool(target: str, rows: list, workers: int) -> dict:
    """The same runs on a plain process pool (spawned, each process warmed up once, no scheduler): the
    machine's own ceiling for running these tasks side by side."""
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_warm, initargs=(target,)) as pool:
        list(pool.map(_pool_run, [target] * workers, [None] * workers))  # every process warm
        ready = time.perf_counter()
        records = list(pool.map(_pool_run, [target] * len(rows), rows))
        done = time.perf_counter()
    return dict(wall_s=done - start, steady_s=done - ready, task_s=sum(r[0]["wall_s"] for r in records))


def _report(k: int, args, measured: dict) -> dict:
    """Print one round and return its figures."""
    serial, cluster, pool = measured["serial"], measured["cluster"], measured["pool"]
    a, b = serial["study"].table, cluster["study"].table
    same = all((a[c] == b[c]).all() for c in a.columns if c not in ("wall_s", "worker"))
    busy = float(b["wall_s"].sum())
    overhead = (args.workers * cluster["steady_s"] - busy) / args.runs
    serial_s, parallel_s, pool_s = serial["wall_s"], cluster["wall_s"], pool["wall_s"]
    print(f"round {k + 1}: {args.runs} runs of {args.target}: serial {serial_s:.1f} s "
          f"({serial['study'].failed} failed, {float(a['wall_s'].sum()) / args.runs:.2f} s a run), "
          f"{args.workers} workers {parallel_s:.1f} s ({cluster['study'].failed} failed, {busy / args.runs:.2f} s a "
          f"run; their start and warm-up {cluster['startup_s']:.1f} s), speedup {serial_s / parallel_s:.2f} "
          f"({serial_s / cluster['steady_s']:.2f} without the start); plain pool {pool_s:.1f} s "
          f"({pool['task_s'] / args.runs:.2f} s a run), speedup {serial_s / pool_s:.2f}; tables equal: {same}",
          flush=True)
    return dict(serial_s=serial_s, parallel_s=parallel_s, speedup=serial_s / parallel_s, overhead=overhead,
                startup_s=cluster["startup_s"], pool_s=pool_s, pool_speedup=serial_s / pool_s)


def _warm(target: str) -> None:
    """A pool process's warm-up: the target's, as a study worker's plugin does.  Ctrl-C (the terminal's SIGINT
    reaches the whole process group) ends the process at once and quietly: the parent reports it, and no
    traceback of the process's own follows the parent's summary line."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    warmup = TARGETS[target].warmup
    if warmup is not None:
        warmup()


def _pool_run(target: str, params: dict | None):
    """One run in a pool process, as a study worker runs it (one kernel thread); None: nothing (a ping)."""
    if params is None:
        return None
    return execute_run(TARGETS[target].run, 0, params, kernel_threads=1)


if __name__ == "__main__":
    run_script(main)
