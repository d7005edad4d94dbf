"""A parameter study's parallel speed: the same upper-limb runs serially and on a 2-worker dask LocalCluster.

64 runs of the upper limb at level 1 (``skfiber study upper-limb``'s target: a Latin hypercube of its six
parameters, fiber–fiber contact off) are run once in this process and once on a LocalCluster of 2 worker
processes (each warmed up once), in one call.  Prints both wall times (the parallel one from the start
of the cluster to the last result), the speedup, the start-up of the cluster with the workers' warm-up,
and the scheduling overhead per task: (workers × wall after the start-up − Σ task wall) / tasks, the
time a worker spent on anything but a run.

Run: ``python benchmarks/bench_study.py [--runs N] [--workers K]``.  Ends with
``summary: serial_s=… parallel_s=… speedup=… overhead_per_task_s=…``.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from skfiber.study import run_study
from skfiber.study.targets import TARGETS


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--target", default="upper-limb", choices=sorted(TARGETS))
    args = parser.parse_args(argv)
    target = TARGETS[args.target]
    params = list(target.defaults)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        serial = run_study(target.run, params, design="lhs", n=args.runs, seed=0, out=Path(tmp) / "serial",
                           scheduler="serial", warmup=target.warmup, progress=False)
        serial_s = time.perf_counter() - start
        from distributed import Client, LocalCluster

        from skfiber.study.execute import warmup_plugin

        start = time.perf_counter()
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            client.register_plugin(warmup_plugin(target.warmup))  # (runs on the workers there now)
            ready = time.perf_counter()
            parallel = run_study(target.run, params, design="lhs", n=args.runs, seed=0,
                                 out=Path(tmp) / "parallel", scheduler=client, progress=False)
            done = time.perf_counter()
        parallel_s, startup_s, steady_s = done - start, ready - start, done - ready
    same = all((serial.table[c] == parallel.table[c]).all() for c in serial.table.columns
               if c not in ("wall_s", "worker"))
    busy = float(parallel.table["wall_s"].sum())
    overhead = (args.workers * steady_s - busy) / args.runs
    print(f"{args.runs} runs of {args.target}: serial {serial_s:.1f} s ({serial.failed} failed), "
          f"{args.workers} workers {parallel_s:.1f} s ({parallel.failed} failed); tables equal: {same}")
    print(f"task time {busy:.1f} s in all, {busy / args.runs:.2f} s per run; the cluster's start and the workers' "
          f"warm-up {startup_s:.1f} s, the runs {steady_s:.1f} s (speedup without the start "
          f"{serial_s / steady_s:.2f})")
    result = dict(serial_s=serial_s, parallel_s=parallel_s, speedup=serial_s / parallel_s, overhead=overhead)
    print(f"summary: serial_s={serial_s:.1f} parallel_s={parallel_s:.1f} speedup={serial_s / parallel_s:.2f} "
          f"overhead_per_task_s={overhead:.3f}")
    return result


if __name__ == "__main__":
    main()
