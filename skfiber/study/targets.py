"""Named study targets: a run function (parameter dict → named outputs) with its warm-up and its
default parameter ranges, for ``skfiber study TARGET`` and for trying the machinery.

* ``upper-limb`` (:func:`upper_limb`): the upper-limb demo at level 1 (its default geometry, fiber–fiber
  contact off), with the parameters of ``demos/upper_limb.py``'s ``STUDY_PARAMETERS`` (Smax of biceps and
  triceps, σ0, μM, ηM, the biceps' lever); outputs the peak and final elbow angle and the peak biceps force.
* ``cable-sag`` (:func:`cable_sag`): a fiber of 1 m fixed at both ends sagging under gravity (like the
  README's first model, without its activation, with 16 elements and the paper's law with one passive
  modulus and one viscosity for muscle and tendon), run for 0.5 s; outputs the midpoint's sag and the
  largest axial force.
* ``quadratic`` (:func:`quadratic`): y = a² in closed form, failing for a < 0 (the machinery's own check).
* ``ishigami`` (:func:`ishigami`): the Ishigami function, whose Sobol indices are known in closed form
  (the sensitivity analysis's own check).

Examples
--------
>>> from skfiber.study.targets import TARGETS
>>> sorted(TARGETS)
['cable-sag', 'ishigami', 'quadratic', 'upper-limb']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import skfiber as sf

from .design import Parameter

__all__ = ["Target", "TARGETS", "cable_sag", "quadratic", "ishigami", "ISHIGAMI_INDICES", "upper_limb"]


@dataclass(frozen=True)
class Target:
    """A study target: ``run`` (parameter dict → outputs), ``warmup`` (None or a call that compiles what the
    runs need), its ``defaults`` (parameter ranges, used when none are given), the parameter names it
    ``accepts``, a one-line ``description`` and the ``units`` of its parameters (SI; none for the closed
    forms)."""

    run: Callable[[dict], dict]
    warmup: Callable[[], object] | None
    defaults: tuple
    accepts: tuple
    description: str
    units: dict = field(default_factory=dict)

    def parameters_help(self) -> str:
        """Its parameters for the command's help: the default ranges, then the others it takes, with units.

        Examples
        --------
        >>> TARGETS["cable-sag"].parameters_help()
        'sigma0=10:60 Pa, mu=50000:200000 Pa; also eta (Pa·s), density (kg/m³)'
        """
        unit = {name: f" {u}" for name, u in self.units.items()}
        given = [f"{p.name}={p.low:g}:{p.high:g}{':log' if p.log else ''}{unit.get(p.name, '')}"
                 for p in self.defaults]
        others = [f"{name}" + (f" ({self.units[name]})" if name in self.units else "") for name in self.accepts
                  if name not in {p.name for p in self.defaults}]
        return ", ".join(given) + ("; also " + ", ".join(others) if others else "")

    def check(self, parameters) -> None:
        """Raise ValueError naming the parameters the target does not take (before anything runs)."""
        unknown = [p.name for p in parameters if p.name not in self.accepts]
        if unknown:
            raise ValueError(f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                             f"this target takes {', '.join(self.accepts)}")


def quadratic(params: dict) -> dict:
    """y = a² (a ≥ 0; a negative a raises ValueError, which a study records as a failed run)."""
    a = float(params["a"])
    if a < 0:
        raise ValueError(f"a must be ≥ 0, got {a:g}")
    return {"y": a * a}


#: the Ishigami function's first-order and total Sobol indices of x1, x2, x3 for a = 7, b = 0.1 on [−π, π]³
#: (Ishigami & Homma 1990; Saltelli et al. 2008): V = a²/8 + bπ⁴/5 + b²π⁸/18 + 1/2, V1 = (1 + bπ⁴/5)²/2,
#: V2 = a²/8, V13 = b²π⁸ (1/18 − 1/50)
ISHIGAMI_INDICES = {"S1": (0.3139, 0.4424, 0.0), "ST": (0.5576, 0.4424, 0.2437)}


def ishigami(params: dict) -> dict:
    """y = sin x1 + 7 sin² x2 + 0.1 x3⁴ sin x1 (x1, x2, x3 ∈ [−π, π])."""
    x1, x2, x3 = (float(params[k]) for k in ("x1", "x2", "x3"))
    return {"y": np.sin(x1) + 7.0 * np.sin(x2) ** 2 + 0.1 * x3**4 * np.sin(x1)}


CABLE_KNOWN = ("sigma0", "mu", "eta", "density")


def cable_sag(params: dict, *, t_end: float = 0.5, n_elements: int = 16) -> dict:
    """A sagging cable with the given parameters (the README's first model without its activation): a
    straight fiber of 1 m, r0 = 0.05 m, ``n_elements`` elements, both ends
    fixed, gravity, the paper's law with prestress ``sigma0`` (Pa, default 30), passive modulus ``mu``
    (Pa, muscle and tendon, default 1e5), viscosity ``eta`` (Pa·s, default 1e4) and ``density`` (kg/m³,
    default 900); backward Euler with Δt = 0.01 s to ``t_end``.  Outputs ``sag_m`` (the midpoint's downward
    displacement, m) and ``max_force_N`` (the largest axial force along the fiber, N); the time series of
    the midpoint's height under ``series``.

    Raises
    ------
    ValueError
        For a parameter name it does not know (it names the known ones).
    """
    unknown = sorted(set(params) - set(CABLE_KNOWN))
    if unknown:
        raise ValueError(f"cable-sag does not know the parameters {unknown}; it takes {list(CABLE_KNOWN)}")
    mu = float(params.get("mu", 1e5))
    eta = float(params.get("eta", 1e4))
    law = sf.paper_law(sigma0=float(params.get("sigma0", 30.0)), mu_muscle=mu, mu_tendon=mu, eta_muscle=eta,
                       eta_tendon=eta)
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=n_elements, radius=0.05,
                              density=float(params.get("density", 900.0)), law=law)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.fix(fiber, "end")
    model.add_gravity()
    # Ctrl-C: a part of the run is no outcome of these parameters; it stops the study
    result = sf.simulate(model, t_end=t_end, dt=0.01, progress=False, on_interrupt="raise")
    d = model.discretization
    z = np.array([d.evaluate(u, 0, 0.5)[2, 0] for u in result.displacements])
    fields = sf.fiber_fields(model, result.final_state, fiber)
    return {"sag_m": float(-z[-1]), "max_force_N": float(fields.force.max()),
            "series": {"t": np.asarray(result.times), "z_mid": z}}


def _warm_cable() -> None:
    cable_sag({}, t_end=0.02)


def upper_limb(params: dict) -> dict:
    """The upper-limb demo at level 1 with ``params`` (its ``study_run``; imported when first run)."""
    from skfiber.demos.upper_limb import study_run

    return study_run(params)


def _warm_upper_limb() -> None:
    from skfiber.demos.upper_limb import study_run

    study_run({}, t_end=0.1)


#: the upper limb's study parameters (those of the demo's study_run) around Table 4's values
_UPPER_LIMB_RANGES = (Parameter("smax_biceps", 3e7, 5.5e7), Parameter("smax_triceps", 1.0e7, 1.8e7),
                      Parameter("sigma0", 20.0, 45.0), Parameter("mu_muscle", 1.5e4, 3e4),
                      Parameter("eta_muscle", 5e2, 2e3), Parameter("biceps_lever", 0.13, 0.17))

TARGETS = {
    "upper-limb": Target(upper_limb, _warm_upper_limb, _UPPER_LIMB_RANGES, tuple(p.name for p in _UPPER_LIMB_RANGES),
                         "the upper limb at level 1 (fiber–fiber contact off): peak_angle_deg, "
                         "final_angle_deg, peak_biceps_force_N, past_force_peak (1: strain softening, a motion "
                         "the mesh decides)",
                         dict(smax_biceps="Pa", smax_triceps="Pa", sigma0="Pa", mu_muscle="Pa", eta_muscle="Pa·s",
                              biceps_lever="m")),
    "cable-sag": Target(cable_sag, _warm_cable, (Parameter("sigma0", 10.0, 60.0), Parameter("mu", 5e4, 2e5)),
                        CABLE_KNOWN, "a fiber fixed at both ends sagging under gravity (0.5 s): sag_m, max_force_N",
                        dict(sigma0="Pa", mu="Pa", eta="Pa·s", density="kg/m³")),
    "ishigami": Target(ishigami, None, tuple(Parameter(k, -np.pi, np.pi) for k in ("x1", "x2", "x3")),
                       ("x1", "x2", "x3"), "the Ishigami function (Sobol indices known in closed form)"),
    "quadratic": Target(quadratic, None, (Parameter("a", 0.0, 1.0),), ("a",), "y = a² in closed form (a < 0 fails)"),
}
