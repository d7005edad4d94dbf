r"""Sobol sensitivity of a model's outputs to its parameters, run as a study on dask.
=================================================================================

A Sobol design (Saltelli's samples of the parameters' ranges, SALib) of a study
target (:mod:`skfiber.study.targets`) runs on a local dask cluster (or
``--scheduler``); the first-order and total Sobol indices of each output, with
their 95 % confidence intervals, are printed, written as CSV and drawn as bars.
With ``--target ishigami`` the indices are compared with their closed form
(a check of the whole chain: design, runs, table, estimator).

Run: ``python demos/sensitivity.py [--target NAME] [--n N] [--out DIR] [--workers K | --serial]``.
Ends with ``summary: runs=… failed=… wall_s=… speedup=… top_parameter=… max_st=… target=…``
(``speedup``: the runs' summed time over the wall time, ``nan`` for a run in one process; ``top_parameter``: the largest total
index of any output; with ``ishigami`` also ``max_index_error=…``).
"""
from __future__ import annotations

import csv
import math
import time
from pathlib import Path

import numpy as np

from skfiber.cli import ArgumentParser, folder_path, nonnegative_int, output_folder, positive_int, run_script
from skfiber.study import run_study, serial_conflict
from skfiber.study.sensitivity import sobol_indices
from skfiber.study.targets import ISHIGAMI_INDICES, TARGETS

DEFAULT_TARGET = "upper-limb"
#: Sobol base samples when --n is not given
DEFAULT_N = 64


def run(*, target: str = DEFAULT_TARGET, n: int = 64, out: Path = Path("sensitivity_output"), seed: int = 0,
        workers: int | None = None, scheduler=None, progress: bool = True) -> dict:
    """Run the Sobol study of ``target`` (n base samples) and return its indices and what the summary prints."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; pick one of {', '.join(TARGETS)}")
    t = TARGETS[target]
    params = list(t.defaults)
    start = time.perf_counter()
    study = run_study(t.run, params, design="sobol", n=n, seed=seed, out=Path(out) / "study", scheduler=scheduler,
                      workers=workers, warmup=t.warmup, target=target, progress=progress)
    names = [p.name for p in params]
    outputs = [c for c in study.table.columns if c not in names + ["run", "status", "error", "wall_s", "worker"]]
    # Saltelli's estimator needs every run: with failed runs the indices are left out (and main exits with 1)
    indices = {} if study.failed else sobol_indices(study.table, params, outputs, seed=seed)
    wall = time.perf_counter() - start
    task_s = float(study.table["wall_s"].sum())
    result = dict(target=target, runs=len(study.table), failed=study.failed, names=names, indices=indices,
                  wall_s=wall, speedup=task_s / wall if wall > 0 and scheduler != "serial" else float("nan"),
                  out=Path(out))
    if target == "ishigami" and indices:
        y = indices["y"]
        result["max_index_error"] = float(max(np.abs(y["S1"] - ISHIGAMI_INDICES["S1"]).max(),
                                              np.abs(y["ST"] - ISHIGAMI_INDICES["ST"]).max()))
    return result


def write_outputs(result: dict) -> list[Path]:
    """indices.csv and sobol_indices.png in the output folder."""
    out = result["out"]
    out.mkdir(parents=True, exist_ok=True)
    table = out / "indices.csv"
    with table.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["output", "parameter", "S1", "S1_conf95", "ST", "ST_conf95"])
        for name, idx in result["indices"].items():
            for k, p in enumerate(result["names"]):
                w.writerow([name, p, idx["S1"][k], idx["S1_conf"][k], idx["ST"][k], idx["ST_conf"][k]])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outputs = list(result["indices"])
    fig, axes = plt.subplots(1, len(outputs), figsize=(4.2 * len(outputs), 3.4), squeeze=False, constrained_layout=True)
    x = np.arange(len(result["names"]))
    for ax, name in zip(axes[0], outputs):
        idx = result["indices"][name]
        ax.bar(x - 0.18, idx["S1"], 0.36, yerr=idx["S1_conf"], capsize=3, label="first order S1")
        ax.bar(x + 0.18, idx["ST"], 0.36, yerr=idx["ST_conf"], capsize=3, label="total ST")
        ax.set_xticks(x, result["names"])
        ax.set_ylabel("Sobol index (–)")
        ax.set_title(f"{name}: share of its variance")
        ax.set_ylim(bottom=min(0.0, float(np.min(idx["S1"] - idx["S1_conf"]))))
    axes[0][0].legend(loc="upper right", fontsize=8, frameon=False)
    figure = out / "sobol_indices.png"
    fig.savefig(figure, dpi=120)
    plt.close(fig)
    return [table, figure]


def report(result: dict) -> str:
    lines = [f"Sobol indices of {result['target']} ({result['runs']} runs, {result['failed']} failed), "
             "95 % confidence half-widths:"]
    for name, idx in result["indices"].items():
        lines.append(f"  {name}:")
        for k, p in enumerate(result["names"]):
            lines.append(f"    {p:>14}  S1 = {idx['S1'][k]:7.3f} ± {idx['S1_conf'][k]:.3f}   "
                         f"ST = {idx['ST'][k]:7.3f} ± {idx['ST_conf'][k]:.3f}")
    if "max_index_error" in result:
        lines.append(f"  closed form (Ishigami): S1 {ISHIGAMI_INDICES['S1']}, ST {ISHIGAMI_INDICES['ST']}; "
                     f"largest difference {result['max_index_error']:.3f}")
    return "\n".join(lines)


def summary(result: dict) -> str:
    best_value, best = -math.inf, "nan"
    for idx in result["indices"].values():
        finite = np.where(np.isfinite(idx["ST"]), idx["ST"], -np.inf)  # (a constant output has nan indices)
        k = int(np.argmax(finite))
        if finite[k] > best_value:
            best_value, best = float(finite[k]), result["names"][k]
    best_value = best_value if math.isfinite(best_value) else math.nan  # (no index, or none finite)
    line = (f"summary: runs={result['runs']} failed={result['failed']} wall_s={result['wall_s']:.1f} "
            f"speedup={result['speedup']:.2f} top_parameter={best} max_st={best_value:.3f} "
            f"target={result['target']}")
    if "max_index_error" in result:
        line += f" max_index_error={result['max_index_error']:.3f}"
    return line


def main(argv=None) -> dict | int:
    parser = ArgumentParser(description=__doc__.splitlines()[0],
                            epilog="The summary's speedup is the runs' summed time over the wall time: nan for a "
                                   "study in one process (--serial, --small).")
    parser.add_argument("--target", default=None, choices=sorted(TARGETS),
                        help=f"the model whose outputs are analysed (default {DEFAULT_TARGET})")
    parser.add_argument("--n", type=positive_int, default=None,
                        help="base samples, a power of 2 (runs: n (d + 2) for d parameters; default 64)")
    parser.add_argument("--out", type=folder_path, default=Path("sensitivity_output"),
                        help="output folder: the study's table, the indices as CSV and the bar plot "
                             "(default sensitivity_output)")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the Sobol sampling (default 0)")
    parser.add_argument("--workers", type=positive_int, default=None, help="local dask workers (default: one per core)")
    parser.add_argument("--scheduler", default=None,
                        help="a running dask scheduler (tcp://host:8786), or 'serial' (as --serial; default: a local "
                             "cluster)")
    parser.add_argument("--serial", action="store_true", help="run in this process, without dask")
    parser.add_argument("--small", action="store_true", help="the Ishigami check at n = 256, in this process")
    args = parser.parse_args(argv)
    conflict = serial_conflict(serial=args.serial, workers=args.workers, scheduler=args.scheduler)
    if conflict:
        parser.error(conflict)
    if args.workers is not None and (args.small or args.scheduler is not None):
        parser.error(f"--workers starts local dask workers; it does not go with "
                     f"{'--small' if args.small else '--scheduler'} (leave it out)")
    if args.small:
        given = [o for o, v in (("--target", args.target), ("--n", args.n), ("--scheduler", args.scheduler)) if v]
        if given:
            parser.error(f"--small is the Ishigami check at n = 256 in this process; leave out {', '.join(given)} "
                         "(or --small)")
        args.target, args.n, args.scheduler = "ishigami", 256, "serial"
    if args.serial:
        args.scheduler = "serial"
    args.target = args.target or DEFAULT_TARGET
    args.n = args.n or DEFAULT_N
    if args.n & (args.n - 1):
        parser.error(f"--n must be a power of 2 (Sobol base samples), got {args.n}")
    output_folder(parser, "--out", args.out)
    result = run(target=args.target, n=args.n, out=args.out, seed=args.seed, workers=args.workers,
                 scheduler=args.scheduler)
    if result["failed"]:
        print(f"Sobol indices not computed: {result['failed']} of {result['runs']} runs failed (their errors are in "
              f"{result['out'] / 'study' / 'runs.jsonl'}); Saltelli's estimator needs every run. The same command "
              "resumes the study and runs the failed ones again.")
        print(summary(result))
        return 1
    files = write_outputs(result)
    print(report(result))
    print("wrote " + ", ".join(str(f) for f in files))
    print(summary(result))
    return result


if __name__ == "__main__":
    run_script(main)
