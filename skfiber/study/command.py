"""``skfiber study``: run a parameter study of a named target, or summarize a study folder.

    skfiber study cable-sag --param sigma0=10:60 --param mu=5e4:2e5 --design lhs --n 32 --out DIR
    skfiber study DIR --summary

A study started again with the same command resumes (the runs that succeeded are skipped, failed ones
run again).  ``--scheduler tcp://host:8786`` runs on an existing dask cluster instead of a local one.

Examples
--------
>>> import argparse
>>> sub = argparse.ArgumentParser(prog="skfiber").add_subparsers()
>>> add_parser(sub).prog
'skfiber study'
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.interrupt import caused_by_ctrl_c
from .design import DESIGNS, make_design, parse_parameter
from .execute import serial_conflict
from .records import PLAN, StudyFolder

__all__ = ["add_parser", "command"]

#: the design, its size and its seed when the command names none (its help says so)
DEFAULT_DESIGN, DEFAULT_N, DEFAULT_SEED = "lhs", 16, 0


class StudyUsageError(ValueError):
    """A bad argument of ``skfiber study`` (exit 2, one line)."""


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``study`` command to the subparsers ``sub`` of the ``skfiber`` parser."""
    from ..cli import nonnegative_int, positive_int  # (skfiber.cli imports this module: not at its top)
    from .targets import TARGETS

    parser = sub.add_parser(
        "study", help="run a parameter study (sweep, samples, Sobol) on dask, or summarize one",
        description="Run TARGET for every row of a design on a local dask cluster (one worker per core) or "
        "on --scheduler, recording each run in --out as it finishes; the same command resumes a study. "
        "'skfiber study DIR --summary' prints the table of a study folder and plots its outputs. "
        f"Targets: {'; '.join(f'{k}: {t.description}' for k, t in TARGETS.items())}.",
        epilog="The targets' parameters, their default ranges (--param NAME=LOW:HIGH[:log] gives others) and "
        f"units: {'; '.join(f'{k}: {t.parameters_help()}' for k, t in TARGETS.items())}.",
    )
    parser.add_argument("target", metavar="TARGET|DIR", help=f"one of {', '.join(TARGETS)}, or a study folder with --summary")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=LOW:HIGH[:log]",
                        help="a parameter and its range (repeat for more; default: the target's own)")
    parser.add_argument("--design", default=None, choices=DESIGNS, help="grid, random, lhs (default) or sobol")
    parser.add_argument("--n", type=positive_int, default=None, metavar="N",
                        help="runs (random, lhs), points per parameter (grid), base samples, a power of 2 (sobol); "
                             "default 16")
    parser.add_argument("--seed", type=nonnegative_int, default=None, help="seed of the random designs (default 0)")
    parser.add_argument("--out", metavar="DIR", help="the study folder (new, or the same study's to resume)")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="a running dask scheduler, e.g. tcp://host:8786")
    parser.add_argument("--workers", type=positive_int, metavar="K", help="local workers (default: one per core)")
    parser.add_argument("--serial", action="store_true", help="run in this process, without dask")
    parser.add_argument("--summary", action="store_true", help="print the table of the study folder TARGET|DIR")
    return parser


def command(args) -> int:
    """Run ``skfiber study`` with parsed ``args``; returns the exit code.  Raises :class:`StudyUsageError`
    for bad arguments.  A Ctrl-C ends the output with the summary line of what the folder holds then
    (``summary: runs=… ok=… failed=… planned=… interrupted=1``, the keys of ``--summary``), and goes on."""
    try:
        return _command(args)
    except BaseException as err:
        if caused_by_ctrl_c(err):  # (also numba's or an import's error around it)
            print(_interrupted_summary(args), flush=True)
        raise


def _interrupted_summary(args) -> str:
    """The summary line of a study stopped by Ctrl-C: what its folder holds then (:func:`_counts`); nothing is
    made or written."""
    counts = ""
    try:
        if args.out and not args.summary and (Path(args.out) / PLAN).is_file():
            counts = _counts(StudyFolder(args.out)) + " "
    except (OSError, ValueError):  # (a folder that cannot be read: the line without counts)
        pass
    return f"summary: {counts}interrupted=1"


def _counts(folder: StudyFolder) -> str:
    """The keys of a study folder's summary line: its recorded runs, those ok and failed, the runs planned."""
    status = [r.get("status") for r in folder.records()]
    ok, planned = status.count("ok"), len((folder.plan() or {}).get("rows", []))
    return f"runs={len(status)} ok={ok} failed={len(status) - ok} planned={planned}"


def _command(args) -> int:
    run_options = [name for name, given in (("--param", bool(args.param)), ("--design", args.design is not None),
                                            ("--n", args.n is not None), ("--seed", args.seed is not None),
                                            ("--out", args.out is not None),
                                            ("--scheduler", args.scheduler is not None),
                                            ("--workers", args.workers is not None), ("--serial", args.serial))
                   if given]
    if args.summary:
        if run_options:
            raise StudyUsageError(f"--summary prints the table of the study folder {args.target}; it runs nothing, "
                                  f"so leave out {', '.join(run_options)}")
        return _summary(Path(args.target))
    conflict = serial_conflict(serial=args.serial, workers=args.workers, scheduler=args.scheduler)
    if conflict:
        raise StudyUsageError(conflict)
    design = DEFAULT_DESIGN if args.design is None else args.design
    n = DEFAULT_N if args.n is None else args.n
    seed = DEFAULT_SEED if args.seed is None else args.seed
    from .execute import run_study
    from .targets import TARGETS

    key = args.target.replace("_", "-")
    target = TARGETS.get(key)
    if target is None:
        hint = " (a study folder? add --summary)" if (Path(args.target) / PLAN).exists() else ""
        raise StudyUsageError(f"unknown target {args.target!r}{hint}; pick one of {', '.join(TARGETS)}")
    if not args.out:
        raise StudyUsageError("--out DIR is needed: the folder where the runs are recorded")
    try:
        parameters = [parse_parameter(p) for p in args.param] or list(target.defaults)
        target.check(parameters)
        make_design(parameters, design, n=n, seed=seed)  # (a bad n: an error before the folder)
        folder = StudyFolder(args.out)  # (unwritable: a clear error before the cluster starts)
        del folder
    except ValueError as err:
        raise StudyUsageError(str(err)) from None
    try:
        result = run_study(target.run, parameters, design=design, n=n, seed=seed, out=args.out,
                           scheduler="serial" if args.serial else args.scheduler, workers=args.workers,
                           warmup=target.warmup, target=_recorded_spelling(args.out, key))
    except ValueError as err:
        raise StudyUsageError(str(err)) from None
    print(f"study: {result.completed} runs done, {result.failed} failed, {result.skipped} succeeded before; "
          f"table {result.table_path}")
    print(f"summary: runs={len(result.table)} completed={result.completed} failed={result.failed} "
          f"skipped={result.skipped} wall_s={result.wall_s:.2f}")
    return 1 if result.failed else 0  # (skfiber's exit code 1: a run or study failed)


def _recorded_spelling(out, key: str) -> str:
    """The target's name as the study folder ``out`` records it, when it is ``key`` spelt with ``_`` (folders
    of earlier versions recorded the name as typed), else ``key``: either spelling resumes a study."""
    try:
        plan = StudyFolder(out).plan() or {}
    except (OSError, ValueError):
        return key
    recorded = str(plan.get("target", ""))
    return recorded if recorded.replace("_", "-") == key else key


def _summary(path: Path) -> int:
    folder_plan = path / PLAN
    if not folder_plan.exists():
        raise StudyUsageError(f"{str(path)!r} is not a study folder (no {PLAN}); run 'skfiber study TARGET --out DIR' first")
    folder = StudyFolder(path)
    plan = folder.plan()
    table = folder.table()
    print(f"study {plan['target']}: {plan['design']} design, n = {plan['n']}, seed {plan['seed']}, "
          f"{len(plan['rows'])} runs planned, {len(table)} recorded")
    if len(table):
        print(table.to_string(index=False, max_rows=200))
    names = [p[0] for p in plan["parameters"]]
    outputs = [c for c in table.columns if c not in names + ["run", "status", "error", "wall_s", "worker"]]
    plot = _plot(table, names, outputs, path / "summary.png") if len(table) and outputs else None
    if plot:
        print(f"plot: {plot}")
    print(f"summary: {_counts(folder)}")
    return 0


def _plot(table, names, outputs, path: Path):
    """Each output against each parameter (ok runs), one panel per pair."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = table[table["status"] == "ok"]
    fig, axes = plt.subplots(len(outputs), len(names), figsize=(3.2 * len(names), 2.6 * len(outputs)),
                             squeeze=False, constrained_layout=True)
    for i, out in enumerate(outputs):
        for j, name in enumerate(names):
            ax = axes[i][j]
            ax.plot(ok[name], ok[out], "o", ms=3)
            ax.set_xlabel(name)
            ax.set_ylabel(out)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> int:  # pragma: no cover - for ``python -m skfiber.study.command``
    parser = argparse.ArgumentParser(prog="skfiber")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["study", *(sys.argv[1:] if argv is None else argv)])
    try:
        return command(args)
    except StudyUsageError as err:
        print(f"skfiber study: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
