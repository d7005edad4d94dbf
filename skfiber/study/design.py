"""The parameters of a study and the designs that sample them.

A :class:`Parameter` is a named range [low, high] (optionally sampled on a log
scale); :func:`make_design` turns a list of them into the rows of a study, one
parameter dict per run: a full grid, uniform random samples, a Latin hypercube
(:mod:`scipy.stats.qmc`), or the Saltelli/Sobol samples of SALib for Sobol
sensitivity indices.  Every random design takes a seed, so that a study is
reproducible and can be resumed.

Examples
--------
>>> from skfiber.study.design import Parameter, make_design
>>> rows = make_design([Parameter("sigma0", 10.0, 60.0), Parameter("smax", 2e7, 6e7)], "grid", n=2)
>>> [tuple(r.values()) for r in rows]
[(10.0, 20000000.0), (10.0, 60000000.0), (60.0, 20000000.0), (60.0, 60000000.0)]
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .records import TABLE_COLUMNS

__all__ = ["DESIGNS", "MAX_GRID_RUNS", "Parameter", "parameter_list", "parse_parameter", "make_design",
           "sobol_problem"]

#: the designs :func:`make_design` knows
DESIGNS = ("grid", "random", "lhs", "sobol")
#: the most runs a grid design may have (n to the power of the number of parameters: 16 values of 6 parameters
#: are 16.8 million runs, whose table alone takes gigabytes)
MAX_GRID_RUNS = 1_000_000


@dataclass(frozen=True)
class Parameter:
    """A parameter of a study: ``name`` and its range [``low``, ``high``] (SI units), sampled uniformly or,
    with ``log=True``, uniformly in log(value).

    Raises
    ------
    ValueError
        For a name that is not an identifier, a range that is not finite and increasing, or a log range
        that is not positive.

    Examples
    --------
    >>> from skfiber.study import Parameter
    >>> smax = Parameter("smax", 1e5, 1e7, log=True)
    >>> smax.scale([0.0, 0.5, 1.0]).round(3).tolist()     # the middle of a log range: its geometric mean
    [100000.0, 1000000.0, 10000000.0]
    """

    name: str
    low: float
    high: float
    log: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"a parameter name must be an identifier like 'smax_biceps', got {self.name!r}")
        if self.name in TABLE_COLUMNS + ("series",):
            raise ValueError(f"a parameter may not be named {self.name!r}: the results table has a column of that "
                             f"name ({', '.join(TABLE_COLUMNS)}; 'series' holds a run's time series); rename it")
        try:
            low, high = float(self.low), float(self.high)
        except (TypeError, ValueError):
            raise ValueError(f"parameter {self.name!r}: low and high must be numbers, got {self.low!r}, "
                             f"{self.high!r}") from None
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"parameter {self.name!r}: the range must be finite with low < high, got "
                             f"[{self.low!r}, {self.high!r}]")
        if self.log and low <= 0:
            raise ValueError(f"parameter {self.name!r}: a log range must be positive, got [{low:g}, {high:g}]")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    def scale(self, unit: np.ndarray) -> np.ndarray:
        """Values for points of [0, 1]."""
        unit = np.asarray(unit, dtype=float)
        if self.log:  # (clipped: exp(log(high)) may round past high)
            values = np.exp(np.log(self.low) + unit * (np.log(self.high) - np.log(self.low)))
        else:
            values = self.low + unit * (self.high - self.low)
        return np.clip(values, self.low, self.high)


def parse_parameter(text: str) -> Parameter:
    """A parameter from ``"name=low:high"`` (``"name=low:high:log"`` for a log scale), as the command line
    gives it.

    >>> parse_parameter("smax_biceps=2e7:6e7")
    Parameter(name='smax_biceps', low=20000000.0, high=60000000.0, log=False)
    """
    name, sep, rest = str(text).partition("=")
    parts = rest.split(":")
    if not sep or len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "log"):
        raise ValueError(f"a parameter is given as NAME=LOW:HIGH or NAME=LOW:HIGH:log, got {text!r}")
    try:
        low, high = float(parts[0]), float(parts[1])
    except ValueError:
        raise ValueError(f"parameter {name!r}: LOW and HIGH must be numbers, got {parts[0]!r} and {parts[1]!r}") \
            from None
    return Parameter(name.strip(), low, high, log=len(parts) == 3)


def sobol_problem(parameters) -> dict:
    """The ``problem`` dict of SALib for the parameters (on the unit cube; values are scaled by
    :meth:`Parameter.scale`)."""
    return {"num_vars": len(parameters), "names": [p.name for p in parameters],
            "bounds": [[0.0, 1.0]] * len(parameters)}


def parameter_list(parameters) -> list[Parameter]:
    """The parameters of a study or a calibration as a list of :class:`Parameter`: a list or tuple of them, or of
    ``(name, low, high)`` / ``(name, low, high, log)`` tuples, at least one, with distinct names; else a ValueError
    that says what was given and what is expected.

    Examples
    --------
    >>> [p.name for p in parameter_list([("a", 0.0, 1.0), Parameter("b", 1.0, 2.0)])]
    ['a', 'b']
    """
    example = "e.g. [Parameter('sigma0', 10.0, 60.0)] or [('sigma0', 10.0, 60.0)]"
    if isinstance(parameters, (Parameter, str, dict)) or not isinstance(parameters, (list, tuple)):
        raise ValueError(f"parameters must be a list of Parameter or of (name, low, high) tuples, {example}; got "
                         f"{type(parameters).__name__} {parameters!r}")
    out = []
    for p in parameters:
        if isinstance(p, Parameter):
            out.append(p)
        elif isinstance(p, (list, tuple)) and len(p) in (3, 4):
            out.append(Parameter(*p))
        else:
            raise ValueError(f"a parameter must be a Parameter or a (name, low, high[, log]) tuple, {example}; "
                             f"got {p!r}")
    if not out:
        raise ValueError(f"a study needs at least one parameter, {example}")
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise ValueError(f"parameter names must be distinct, got {names}")
    return out


def make_design(parameters, design: str, *, n: int, seed: int = 0) -> list[dict]:
    """The parameter dicts of a study, in a fixed order.

    Parameters
    ----------
    parameters
        :class:`Parameter` objects, distinct names.
    design
        ``"grid"`` (n points per parameter, ends included: nᵈ runs), ``"random"`` (n uniform samples),
        ``"lhs"`` (a Latin hypercube of n samples) or ``"sobol"`` (SALib's Saltelli samples with
        second-order terms off: n (d + 2) runs; n a power of 2).
    n
        See ``design``.
    seed
        Seed of the random designs (the same seed, the same rows).

    Raises
    ------
    ValueError
        For an unknown design, no or repeated parameters, or a bad n.
    ImportError
        For ``"sobol"`` without SALib (``pip install SALib``).

    Examples
    --------
    >>> from skfiber.study import Parameter, make_design
    >>> make_design([Parameter("a", 0.0, 1.0)], "grid", n=3)
    [{'a': 0.0}, {'a': 0.5}, {'a': 1.0}]
    >>> params = [Parameter("a", 0.0, 1.0), Parameter("b", 1e3, 1e5, log=True)]
    >>> rows = make_design(params, "random", n=4, seed=1)
    >>> len(rows), sorted(rows[0]), rows == make_design(params, "random", n=4, seed=1)   # the same seed, the same rows
    (4, ['a', 'b'], True)
    """
    parameters = parameter_list(parameters)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer ≥ 0, got {seed!r}")
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; pick one of {', '.join(DESIGNS)}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < (2 if design == "grid" else 1):
        raise ValueError(f"n must be an integer ≥ {2 if design == 'grid' else 1} for the {design} design, got {n!r}")
    d = len(parameters)
    if design == "grid" and int(n) ** d > MAX_GRID_RUNS:
        raise ValueError(f"a grid of n = {n} values for each of the {d} parameters has {int(n) ** d:,} runs, more "
                         f"than {MAX_GRID_RUNS:,}; give a smaller n (--n) or fewer parameters, or take the random, lhs "
                         "or sobol design, whose size is n")
    if design == "grid":
        unit = np.array(list(itertools.product(np.linspace(0.0, 1.0, int(n)), repeat=d)))
    elif design == "random":
        unit = np.random.default_rng(seed).random((int(n), d))
    elif design == "lhs":
        from scipy.stats import qmc

        unit = qmc.LatinHypercube(d=d, seed=np.random.default_rng(seed)).random(int(n))
    else:
        if n & (n - 1):
            raise ValueError(f"the sobol design needs n a power of 2 (base samples), got {n}")
        try:
            from SALib.sample import sobol as sobol_sample
        except ImportError as err:
            raise ImportError("the sobol design needs SALib: pip install SALib (or skfiber[study])") from err
        unit = sobol_sample.sample(sobol_problem(parameters), int(n), calc_second_order=False, seed=seed)
    values = np.column_stack([p.scale(unit[:, k]) for k, p in enumerate(parameters)])
    names = [p.name for p in parameters]
    return [{name: float(v) for name, v in zip(names, row)} for row in values]
