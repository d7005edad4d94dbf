"""Sobol sensitivity indices of a study's outputs (SALib), with confidence intervals.

After a study with ``design="sobol"`` (Saltelli's samples, second-order terms off),
:func:`sobol_indices` gives, per output, the first-order index S1 (the share of the
output's variance due to one parameter alone) and the total index ST (with all its
interactions), each with the half-width of its 95 % bootstrap confidence interval.

Examples
--------
>>> import tempfile
>>> import numpy as np
>>> from skfiber.study import run_study
>>> from skfiber.study.targets import ISHIGAMI_INDICES, TARGETS, ishigami
>>> params = TARGETS["ishigami"].defaults
>>> study = run_study(ishigami, params, design="sobol", n=1024, seed=1, out=tempfile.mkdtemp(), scheduler="serial",
...                   progress=False)
>>> idx = sobol_indices(study.table, params, ["y"], seed=1)["y"]
>>> bool(np.abs(idx["S1"] - ISHIGAMI_INDICES["S1"]).max() < 0.05), bool(np.abs(idx["ST"] - ISHIGAMI_INDICES["ST"]).max() < 0.05)
(True, True)
"""
from __future__ import annotations

import numpy as np

from .design import sobol_problem

__all__ = ["sobol_indices"]


def sobol_indices(table, parameters, outputs, *, seed: int = 0) -> dict:
    """{output: {"S1", "S1_conf", "ST", "ST_conf": arrays over the parameters}} from a Sobol study's table
    (its rows in run order, every run ok).

    Raises
    ------
    ValueError
        When runs failed or are missing (Saltelli's estimator needs every row), or an output is unknown.
    """
    from SALib.analyze import sobol as sobol_analyze

    table = table.sort_values("run")
    d = len(parameters)
    if len(table) % (d + 2) or (table["status"] != "ok").any():
        bad = int((table["status"] != "ok").sum())
        raise ValueError(f"Sobol indices need every run of the design ok: {len(table)} runs recorded, {bad} failed; "
                         "resume the study or fix the failing runs")
    out = {}
    for name in outputs:
        if name not in table.columns:
            raise ValueError(f"unknown output {name!r}; the table has {[c for c in table.columns]}")
        Y = table[name].to_numpy(dtype=float)
        r = sobol_analyze.analyze(sobol_problem(parameters), Y, calc_second_order=False, conf_level=0.95,
                                  print_to_console=False, seed=seed)
        out[name] = {k: np.asarray(r[k], dtype=float) for k in ("S1", "S1_conf", "ST", "ST_conf")}
    return out
