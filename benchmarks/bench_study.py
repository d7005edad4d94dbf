"""A parameter study's parallel speed: the same upper-limb runs serially and on a 2-worker dask LocalCluster.

64 runs of the upper limb at level 1 (``skfiber study upper-limb``'s target: a Latin hypercube of its six
parameters, fiber–fiber contact off) are run once in this process and once on the LocalCluster a study
starts (``skfiber.study.execute.local_cluster``: 2 worker processes, each warmed up once), in one call.  Prints both wall times (the parallel one from the start
of the cluster to the last result), the speedup, the start-up of the cluster with the workers' warm-up,
and the scheduling overhead per task: (workers × wall after the start-up − Σ task wall) / tasks, the
time a worker spent on anything but a run.

Then the same runs on a plain ``concurrent.futures`` process pool of as many processes (started the same
way, each warmed up once, no scheduler): the machine's own ceiling for running these tasks side by side.
On a shared VM two processes slow each other down (memory, caches, the host's other guests), so a
speedup below the number of workers is partly the machine's; the pool shows how much.

Run: ``python benchmarks/bench_study.py [--runs N] [--workers K]``.  Ends with
``summary: serial_s=… parallel_s=… speedup=… overhead_per_task_s=… pool_s=… pool_speedup=…``.
"""
from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from skfiber.study import run_study
from skfiber.study.execute import execute_run
from skfiber.study.targets import TARGETS


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=64, help="runs of the study, serially and in parallel (default 64)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the local cluster (default 2)")
    parser.add_argument("--target", default="upper-limb", choices=sorted(TARGETS),
                        help="the model run by the study (default upper-limb: the upper limb at level 1)")
    args = parser.parse_args(argv)
    target = TARGETS[args.target]
    params = list(target.defaults)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        serial = run_study(target.run, params, design="lhs", n=args.runs, seed=0, out=Path(tmp) / "serial",
                           scheduler="serial", warmup=target.warmup, progress=False)
        serial_s = time.perf_counter() - start
        from distributed import Client

        from skfiber.study.execute import local_cluster, warmup_plugin

        start = time.perf_counter()
        with local_cluster(args.workers) as cluster, Client(cluster) as client:
            client.register_plugin(warmup_plugin(target.warmup))  # (runs on the workers there now)
            ready = time.perf_counter()
            parallel = run_study(target.run, params, design="lhs", n=args.runs, seed=0,
                                 out=Path(tmp) / "parallel", scheduler=client, progress=False)
            done = time.perf_counter()
        parallel_s, startup_s, steady_s = done - start, ready - start, done - ready
        # the ceiling: a plain process pool, no scheduler (each process warmed up once, like the workers)
        rows = [{p.name: float(row[p.name]) for p in params} for _, row in serial.table.sort_values("run").iterrows()]
        start = time.perf_counter()
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.workers, mp_context=context, initializer=_warm, initargs=(args.target,)) as pool:
            list(pool.map(_pool_run, [args.target] * args.workers, [None] * args.workers))  # every process warm
            pool_ready = time.perf_counter()
            records = list(pool.map(_pool_run, [args.target] * len(rows), rows))
            pool_done = time.perf_counter()
        pool_s, pool_steady = pool_done - start, pool_done - pool_ready
    same = all((serial.table[c] == parallel.table[c]).all() for c in serial.table.columns
               if c not in ("wall_s", "worker"))
    busy = float(parallel.table["wall_s"].sum())
    overhead = (args.workers * steady_s - busy) / args.runs
    print(f"{args.runs} runs of {args.target}: serial {serial_s:.1f} s ({serial.failed} failed), "
          f"{args.workers} workers {parallel_s:.1f} s ({parallel.failed} failed); tables equal: {same}")
    print(f"task time {busy:.1f} s in all, {busy / args.runs:.2f} s per run; the cluster's start and the workers' "
          f"warm-up {startup_s:.1f} s, the runs {steady_s:.1f} s (speedup without the start "
          f"{serial_s / steady_s:.2f})")
    pool_task = sum(r[0]["wall_s"] for r in records)
    print(f"plain process pool of {args.workers}: {pool_s:.1f} s in all, the runs {pool_steady:.1f} s (speedup without "
          f"the start {serial_s / pool_steady:.2f}); task time {pool_task:.1f} s in all, {pool_task / len(rows):.2f} s per "
          f"run against {serial.table['wall_s'].sum() / args.runs:.2f} s serially")
    result = dict(serial_s=serial_s, parallel_s=parallel_s, speedup=serial_s / parallel_s, overhead=overhead,
                  pool_s=pool_s, pool_speedup=serial_s / pool_s)
    print(f"summary: serial_s={serial_s:.1f} parallel_s={parallel_s:.1f} speedup={serial_s / parallel_s:.2f} "
          f"overhead_per_task_s={overhead:.3f} pool_s={pool_s:.1f} pool_speedup={serial_s / pool_s:.2f}")
    return result


def _warm(target: str) -> None:
    """A pool process's warm-up: the target's, as a study worker's plugin does."""
    warmup = TARGETS[target].warmup
    if warmup is not None:
        warmup()


def _pool_run(target: str, params: dict | None):
    """One run in a pool process, as a study worker runs it (one kernel thread); None: nothing (a ping)."""
    if params is None:
        return None
    return execute_run(TARGETS[target].run, 0, params, kernel_threads=1)


if __name__ == "__main__":
    main()
