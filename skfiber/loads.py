"""External loads of the cable: body forces and line loads (paper eq. 57), assembled from their forms.

A load is 3 numbers (constant), a field at the quadrature points, or a callable
f(θ, t) returning (3, …); a body force b0 is per reference volume (N/m³,
:func:`skfiber.forms.body_force`), a line load q per metre of reference length (N/m,
:func:`skfiber.forms.line_load`).  Loads are state-independent, so they are
assembled with numpy (:class:`~skfiber.assembly.BatchedAssembler`): the constant ones
once, the callables once per new time.

Examples
--------
>>> import numpy as np
>>> from skfiber import Fiber
>>> from skfiber.discretization import Discretization
>>> from skfiber.loads import ExternalLoads
>>> loads = ExternalLoads(Discretization([Fiber.straight((0, 0, 0), (2, 0, 0), n_elements=4)]))
>>> loads.add("line", (0.0, 0.0, -5.0))
>>> round(float(loads.force(0.0)[2::6].sum()), 6)  # the z forces on the nodes add up to q L
-10.0
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from . import forms

__all__ = ["ExternalLoads", "VectorField"]

VectorField = Sequence[float] | Callable[[np.ndarray, float], np.ndarray]


@dataclass(frozen=True)
class Load:
    """One load: ``kind`` "body" (N/m³) or "line" (N/m), its ``value``, the elements it acts on (bool mask)."""

    kind: str
    value: object
    elements: np.ndarray


class ExternalLoads:
    """The external loads of a discretization and their assembled vector.

    Parameters
    ----------
    discretization
        The model's :class:`~skfiber.discretization.Discretization`.
    """

    def __init__(self, discretization):
        self.discretization = discretization
        self.items: list[Load] = []
        self._cache: tuple[float, np.ndarray] | None = None  # (t, F) of the last force(t)
        self._constant: tuple | None = None  # (F of the loads without t, the callables, whether F is finite)

    def add(self, kind: str, value: VectorField, elements: np.ndarray | None = None) -> None:
        """Add a load of ``kind`` "body" or "line" on the elements ``elements`` (bool mask; None: all)."""
        d = self.discretization
        if isinstance(value, np.ndarray) and value.shape == (3,) + d.theta.shape:
            pass  # a field at the quadrature points (gravity: ρ0 g)
        elif callable(value):
            self.sample(kind, value, 0.0)  # checked when added, not in the middle of a run
        else:
            try:
                arr = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"a {kind} load is 3 numbers or a callable f(θ, t) returning (3, …); got {value!r}") \
                    from None
            if arr.shape != (3,):
                raise ValueError(f"a {kind} load is 3 numbers or a callable f(θ, t) returning (3, …); got shape {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"the {kind} load must be finite, got {arr.tolist()}")
        if elements is None:
            elements = np.ones(d.element_fiber.size, dtype=bool)
        self.items.append(Load(kind, value, elements))
        self._cache = None
        self._constant = None

    def force(self, t: float) -> np.ndarray:
        """Assembled external load vector at time t.

        Loads that do not depend on time are assembled once; callables f(θ, t)
        once per new t.  The array is shared between calls (without callables, by
        all times): read it, do not change it.
        """
        if self._cache is not None and self._cache[0] == t:
            return self._cache[1]
        if self._constant is None:
            constant = self.assemble([load for load in self.items if not callable(load.value)], t)
            self._constant = (constant, [load for load in self.items if callable(load.value)],
                              bool(np.all(np.isfinite(constant))))
        constant, timed, finite = self._constant
        F = constant + self.assemble(timed, t) if timed else constant
        if not (finite and (not timed or np.all(np.isfinite(F)))):  # the callables name themselves in sample()
            raise ValueError(f"the external load is not finite at t = {t:g} s; give finite loads")
        self._cache = (t, F)
        return F

    def sample(self, kind: str, function, t: float) -> np.ndarray:
        """``function(θ, t)`` of a callable load at the quadrature points, shape (3, e, q); TypeError or
        ValueError naming the load when it is not 3 finite numbers per point."""
        theta = self.discretization.theta
        shape = (3,) + theta.shape
        unit = "N/m³" if kind == "body" else "N/m"
        try:
            value = np.asarray(function(theta, t), dtype=float)
        except (TypeError, ValueError) as err:
            raise TypeError(f"the {kind} load f(θ, t) returned something that is not numbers at t = {t:g} s "
                            f"({err}); return an array of shape (3, …) in {unit}") from err
        if value.shape == (3,):  # one vector for every point
            value = value.reshape(3, 1, 1)
        try:
            if value.ndim != len(shape) or value.shape[0] != 3:  # (a number or a θ-shaped array is no vector)
                raise ValueError
            value = np.broadcast_to(value, shape)
        except ValueError:
            why = (": a load is a vector, a single number gives no direction" if value.ndim == 0 or
                   value.shape == theta.shape else "")
            raise ValueError(f"the {kind} load f(θ, t) returned shape {value.shape} for θ of shape {theta.shape} at "
                             f"t = {t:g} s; return shape (3,) + θ.shape, or 3 numbers (a vector, the same at every "
                             f"point), in {unit}{why}") from None
        if not np.all(np.isfinite(value)):
            raise ValueError(f"the {kind} load f(θ, t) is not finite at t = {t:g} s; return finite values in {unit}")
        return value

    def assemble(self, loads: list[Load], t: float) -> np.ndarray:
        """The assembled vector of ``loads`` at time t (their forms, with numpy)."""
        d = self.discretization
        asm = d.assembler
        F = np.zeros(d.n_dofs)
        shape = (3,) + d.theta.shape
        for load in loads:
            if callable(load.value):
                val = self.sample(load.kind, load.value, t)
            elif np.shape(load.value) == shape:
                val = load.value
            else:
                val = np.broadcast_to(np.asarray(load.value)[:, None, None], shape)
            val = np.where(load.elements[None, :, None], val, 0.0)
            if load.kind == "body":
                F += asm.linear_vector(forms.body_force, asm.parameters(b0=val, area=d.area, J=d.jacobian))
            else:
                F += asm.linear_vector(forms.line_load, asm.parameters(q=val, J=d.jacobian))
        return F
