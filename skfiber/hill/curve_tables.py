r"""The arrays a smooth segmented Bézier curve is evaluated from.

A :class:`~skfiber.hill.bezier.SmoothSegmentedCurve` is given by its control
points; evaluating it needs them in another form, computed once here:

* the power-basis coefficients of x(u) and y(u) on each segment (Horner's
  scheme on them gives the values and derivatives);
* a table of the inverse u(x) (:data:`TABLE_SAMPLES` samples per segment), the
  start of the Newton solve for u;
* the domain, end values and end slopes of the linear continuation.

:class:`CurveTables` holds them; :func:`skfiber.hill.curve_kernels.pack_curve`
lays them out for the compiled kernels.  This module is the data both the
curve classes and the kernels read: it imports neither.

Examples
--------
>>> import numpy as np
>>> tables = CurveTables.of(np.array([[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]]),
...                         np.array([[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]]), 0.0, 0.0)
>>> tables.x_coeffs.tolist()     # x(u) = u
[[0.0, 1.0, 0.0, 0.0, 0.0, 0.0]]
>>> tables.table_x.shape, tables.domain
((2048,), (0.0, 1.0))
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["U_TOLERANCE", "TABLE_SAMPLES", "BERNSTEIN_TO_POWER", "horner", "CurveTables"]

#: OpenSim's UTOL: the tolerance on |x(u) − x| of the parameter solve (100 machine epsilons)
U_TOLERANCE = 100.0 * float(np.finfo(float).eps)
#: samples per segment of the tabulated u(x) (the start of the parameter solve)
TABLE_SAMPLES = 2048

#: Bernstein → power basis of a quintic: the coefficient of u**j is
#: Σ_k C(5, j) C(j, k) (−1)**(j − k) P_k (k ≤ j), i.e. ``points @ BERNSTEIN_TO_POWER.T``
BERNSTEIN_TO_POWER = np.array(
    [
        [math.comb(5, j) * math.comb(j, k) * (-1) ** (j - k) if k <= j else 0 for k in range(6)]
        for j in range(6)
    ],
    dtype=float,
)


def horner(coeffs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Σ_j coeffs[:, j] u**j for per-point coefficient rows (m, k) (Horner's scheme)."""
    out = coeffs[:, -1].copy()
    for j in range(coeffs.shape[1] - 2, -1, -1):
        out = out * u + coeffs[:, j]
    return out


@dataclass(frozen=True, eq=False)
class CurveTables:
    """Coefficients, inverse table and linear ends of a chain of quintic Bézier segments.

    Attributes
    ----------
    starts : (n,) x at the start of each segment.
    x_coeffs, y_coeffs : (n, 6) power-basis coefficients of x(u) and y(u) per segment.
    table_x, table_s : (n · TABLE_SAMPLES,) the tabulated inverse: x(u) at u on a
        uniform grid of each segment, against s = segment + u (increasing in x).
    domain : (x_start, x_end) covered by the segments.
    end_values : (y(x_start), y(x_end)).
    slope_start, slope_end : slopes of the linear continuation outside the domain.
    """

    starts: np.ndarray
    x_coeffs: np.ndarray
    y_coeffs: np.ndarray
    table_x: np.ndarray
    table_s: np.ndarray
    domain: tuple[float, float]
    end_values: tuple[float, float]
    slope_start: float
    slope_end: float

    @classmethod
    def of(cls, x_points: np.ndarray, y_points: np.ndarray, slope_start: float, slope_end: float) -> "CurveTables":
        """The tables of the segments with control points (n, 6) `x_points`, `y_points` (checked by the caller)."""
        x_coeffs = x_points @ BERNSTEIN_TO_POWER.T
        y_coeffs = y_points @ BERNSTEIN_TO_POWER.T
        u = np.linspace(0.0, 1.0, TABLE_SAMPLES)
        n = x_points.shape[0]
        xs = np.stack([horner(np.repeat(x_coeffs[i:i + 1], u.size, 0), u) for i in range(n)])
        return cls(starts=x_points[:, 0], x_coeffs=x_coeffs, y_coeffs=y_coeffs, table_x=xs.ravel(),
                   table_s=(np.arange(n)[:, None] + u[None, :]).ravel(),
                   domain=(float(x_points[0, 0]), float(x_points[-1, 5])),
                   end_values=(float(y_points[0, 0]), float(y_points[-1, 5])),
                   slope_start=slope_start, slope_end=slope_end)
