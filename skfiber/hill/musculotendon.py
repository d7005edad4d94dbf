"""Hill-type musculotendon models of Millard et al. (2013) (OpenSim's
``Millard2012EquilibriumMuscle``), vectorized over any number of muscles or
time points.

Three formulations (``Millard2012Muscle(formulation=...)``):

``"equilibrium"``
    Elastic tendon, no damping: the fiber velocity follows from the force
    equilibrium eq. (1) solved for it, eq. (2): ṽM = (f^V)⁻¹((f^T/cos α − f^PE)/(a f^L)).
    The four singularities of eq. (2) are kept away as the paper describes:
    a ≥ ``minimum_activation`` > 0, f^L ≥ its ``minimum_value`` > 0 (0.1 by
    default), α ≤ ``maximum_pennation_angle`` < 90° and f^V with positive end
    slopes (so (f^V)⁻¹ is finite everywhere).
``"damped"`` (default, as in OpenSim)
    Elastic tendon with a damper β in parallel, eq. (3), solved for ṽM by
    Newton's method; free of singularities for a ≥ 0 as long as α < 90°.
``"rigid"``
    Inextensible tendon, eqs. (4)–(7): fiber length and velocity follow from the
    musculotendon length and velocity; force f^M* = f_o(a f^L f^V + f^PE + βṽ) cos α,
    kept ≥ 0 (tension only).

State variables: the elastic-tendon formulations have two, the activation a
(dimensionless, in [``minimum_activation``, 1]) and the fiber length l^M (m);
d l^M/dt is :attr:`MusculotendonResponse.fiber_velocity` and da/dt is
:meth:`Millard2012Muscle.activation_rate` (first-order activation dynamics).
The rigid-tendon formulation has only the activation.  The inputs of every
call are the musculotendon (path) length l^MT and lengthening speed v^MT.

All fiber lengths are kept above the minimum fiber length (the larger of the
length where the fixed-height parallelogram reaches the maximum pennation angle
and the shortest length of the active force–length curve), and a fiber at its
minimum length may not shorten (the paper's unilateral constraint).

This module holds the model, :class:`Millard2012Muscle`; its parts live in
their own modules and are importable from here too: the parameters, formulation
names and curves per formulation (:mod:`skfiber.hill.parameters`), the pennation
model (:mod:`skfiber.hill.pennation`), the activation dynamics
(:mod:`skfiber.hill.activation`), the response (:mod:`skfiber.hill.response`)
and the damped fiber-velocity solve of eq. (3) (:mod:`skfiber.hill.damped`).

Examples
--------
>>> from skfiber.hill import Millard2012Muscle, MuscleParameters
>>> muscle = Millard2012Muscle(MuscleParameters(max_isometric_force=1000.0,
...     optimal_fiber_length=0.1, tendon_slack_length=0.2, pennation_angle_at_optimal=0.2))
>>> rest = muscle.static_equilibrium(activation=0.5, musculotendon_length=0.3)
>>> bool(abs(rest.fiber_velocity) < 1e-9), bool(abs(rest.equilibrium_residual) < 1e-6)
(True, True)
>>> round(float(rest.tendon_force), 3) == round(float(rest.fiber_force_along_tendon), 3)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .activation import FirstOrderActivation
from .checks import SIGNIFICANT_REAL
from .damped import solve_damped_fiber_velocity
from .parameters import FORMULATIONS, Formulation, MuscleCurves, MuscleParameters
from .pennation import FixedHeightPennation
from .response import MusculotendonResponse

__all__ = [
    "Formulation",
    "FORMULATIONS",
    "MuscleParameters",
    "FixedHeightPennation",
    "FirstOrderActivation",
    "MuscleCurves",
    "MusculotendonResponse",
    "Millard2012Muscle",
]


@dataclass(frozen=True)
class Millard2012Muscle:
    """A Millard (2013) musculotendon actuator.

    Parameters
    ----------
    parameters : :class:`MuscleParameters`.
    formulation : ``"damped"`` (eq. 3, default), ``"equilibrium"`` (eqs. 1–2) or
        ``"rigid"`` (eqs. 4–7).
    curves : the five curves; default :meth:`MuscleCurves.for_formulation`.  Given
        curves are used as they are (checked for the equilibrium formulation).
    activation_dynamics : :class:`FirstOrderActivation` for :meth:`activation_rate`.

    Examples
    --------
    >>> m = Millard2012Muscle(formulation="rigid")
    >>> r = m.evaluate(activation=1.0, musculotendon_length=0.3)   # fiber at l_o, v = 0
    >>> round(float(r.tendon_force), 6)
    1000.0
    """

    parameters: MuscleParameters = field(default_factory=MuscleParameters)
    formulation: Formulation = "damped"
    curves: MuscleCurves | None = None
    activation_dynamics: FirstOrderActivation = field(default_factory=FirstOrderActivation)

    def __post_init__(self):
        if self.formulation not in FORMULATIONS:
            raise ValueError(f"formulation={self.formulation!r} is unknown; pick one of {', '.join(FORMULATIONS)}")
        if self.curves is None:
            object.__setattr__(self, "curves", MuscleCurves.for_formulation(self.formulation))
        p, c = self.parameters, self.curves
        if self.formulation != "rigid" and p.maximum_pennation_angle >= math.pi / 2 - 1e-12:
            raise ValueError(f"maximum_pennation_angle={p.maximum_pennation_angle!r} rad: an elastic-tendon "
                             "model needs a maximum pennation angle below pi/2 (cos α > 0); "
                             "OpenSim uses acos(0.1)")
        if self.formulation == "damped" and p.fiber_damping <= 0:
            raise ValueError(f"fiber_damping={p.fiber_damping!r}: the damped formulation needs β > 0 "
                             "(OpenSim's default is 0.1); use formulation='equilibrium' for β = 0")
        if self.formulation == "equilibrium":
            if p.minimum_activation <= 0:
                raise ValueError(f"minimum_activation={p.minimum_activation!r}: eq. (2) is singular at a = 0; "
                                 "use minimum_activation > 0 (OpenSim requires >= 0.01) or "
                                 "formulation='damped'")
            if c.active_force_length.minimum_value <= 0:
                raise ValueError(f"active_force_length.minimum_value={c.active_force_length.minimum_value!r}: "
                                 "eq. (2) is singular where f^L = 0; use a minimum value > 0 "
                                 "(OpenSim uses 0.1) or formulation='damped'")
            f = np.linspace(0.0, c.force_velocity.max_eccentric_velocity_force_multiplier, 9)
            err = np.max(np.abs(c.force_velocity(c.force_velocity_inverse(f)) - f))
            if not err < 1e-9:
                raise ValueError("force_velocity_inverse does not invert force_velocity (error "
                                 f"{err:.3g}); build it with ForceVelocityInverseCurve.of(force_velocity)")

    # -- derived quantities ---------------------------------------------------
    @property
    def pennation(self) -> FixedHeightPennation:
        """The fixed-height pennation model of this muscle."""
        p = self.parameters
        return FixedHeightPennation(p.optimal_fiber_length, p.pennation_angle_at_optimal,
                                    p.maximum_pennation_angle)

    @property
    def minimum_fiber_length(self) -> float:
        """max(pennation limit, shortest active length of f^L) (m)."""
        p = self.parameters
        return max(SIGNIFICANT_REAL, self.curves.active_force_length.min_norm_active_fiber_length
                   * p.optimal_fiber_length, self.pennation.minimum_fiber_length)

    @property
    def damping(self) -> float:
        """β used by the force equation (0 for the equilibrium formulation)."""
        return 0.0 if self.formulation == "equilibrium" else self.parameters.fiber_damping

    def activation_rate(self, activation, excitation) -> np.ndarray:
        """da/dt of the first-order activation dynamics (1/s)."""
        return self.activation_dynamics.derivative(activation, excitation,
                                                   minimum_activation=self.parameters.minimum_activation)

    # -- evaluation -----------------------------------------------------------
    def evaluate(self, *, activation, musculotendon_length, fiber_length=None,
                 musculotendon_velocity=0.0, tol: float = 1e-12, checked: bool = True) -> MusculotendonResponse:
        """Fiber velocity, forces and tangent at a state (all arguments broadcast).

        Parameters
        ----------
        activation : a (clamped to [a_min, 1]).
        musculotendon_length : l^MT (m).
        fiber_length : l^M (m), the state of the elastic-tendon formulations
            (required there, not accepted for ``"rigid"``).
        musculotendon_velocity : v^MT (m/s); the elastic formulations use it only
            for the tendon velocity.
        tol : damped formulation: tolerance on the normalized force residual of eq. (3).
        checked : refuse values that are not finite, lengths ≤ 0 and shapes that do not broadcast
            (ValueError naming the argument); False skips the checks (an integrator's trial states, which
            may leave the domain before its Newton iteration steps back).
        """
        if checked:
            _checked_inputs(activation=activation, musculotendon_length=musculotendon_length,
                            fiber_length=fiber_length, musculotendon_velocity=musculotendon_velocity)
        if self.formulation == "rigid":
            if fiber_length is not None:
                raise ValueError("the rigid-tendon formulation computes the fiber length from "
                                 "musculotendon_length (eq. 4); do not pass fiber_length")
            return self._evaluate_rigid(activation, musculotendon_length, musculotendon_velocity)
        if fiber_length is None:
            raise ValueError(f"fiber_length is the state of the {self.formulation!r} formulation; pass it "
                             "(e.g. from static_equilibrium) or use formulation='rigid'")
        return self._evaluate_elastic(activation, musculotendon_length, fiber_length,
                                      musculotendon_velocity, tol)

    def _activation(self, activation) -> tuple[np.ndarray, np.ndarray]:
        a_raw = np.asarray(activation, dtype=float)
        a_min = self.parameters.minimum_activation
        a = np.clip(a_raw, a_min, 1.0)
        return a, ((a_raw >= a_min) & (a_raw <= 1.0)).astype(float)   # one-sided at the bounds

    def _geometry(self, lce):
        pen = self.pennation
        phi = pen.pennation_angle(lce)
        return phi, np.cos(phi), np.sin(phi), pen.d_pennation_angle_d_fiber_length(lce)

    def _evaluate_elastic(self, activation, musculotendon_length, fiber_length, musculotendon_velocity, tol):
        p, c = self.parameters, self.curves
        f0, lopt, lts, vscale = (p.max_isometric_force, p.optimal_fiber_length, p.tendon_slack_length,
                                 p.max_fiber_velocity)
        a_in, lmt, lce_in, vmt = np.broadcast_arrays(
            *(np.asarray(v, dtype=float) for v in (activation, musculotendon_length, fiber_length,
                                                   musculotendon_velocity)))
        a, a_free = self._activation(a_in)
        l_min = self.minimum_fiber_length
        lce = np.maximum(lce_in, l_min)
        lce_free = (lce_in > l_min).astype(float)
        phi, cos, sin, dphi = self._geometry(lce)
        lt = lmt - lce * cos
        fal = c.active_force_length.evaluate(lce / lopt)
        fpe = c.fiber_force_length.evaluate(lce / lopt)
        fse = c.tendon_force_length.evaluate(lt / lts)
        beta = self.damping
        target = fse.value / cos - fpe.value          # what a f^L f^V + β ṽ must equal
        if self.formulation == "equilibrium":
            v_norm = c.force_velocity_inverse(target / (a * fal.value))       # eq. (2)
        else:
            v_norm = solve_damped_fiber_velocity(c, a, fal.value, target, beta, tol)     # eq. (3)
        clamped = (lce_in <= l_min) & (v_norm <= 0)
        v_norm = np.where(clamped, 0.0, v_norm)
        fv = c.force_velocity.evaluate(v_norm)
        fv_value = np.where(clamped, 1.0, fv.value)
        # tangent of the fiber velocity (implicit function theorem on the residual
        # r = a fL fV + fPE + β ṽ − fT / cos α, which eq. (2) also solves)
        dlt_dlce = -(cos - lce * sin * dphi)
        d_inv_cos = sin * dphi / cos**2
        r_v = a * fal.value * fv.derivative + beta
        r_a = fal.value * fv_value * a_free
        r_lce = lce_free * ((a * fal.derivative * fv_value + fpe.derivative) / lopt
                            - (fse.derivative * dlt_dlce / lts) / cos - fse.value * d_inv_cos)
        r_lmt = -fse.derivative / (lts * cos)
        free = ~clamped
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(free, -vscale / r_v, 0.0)
        active = f0 * a * fal.value * fv_value
        passive = f0 * fpe.value
        damping = f0 * beta * v_norm
        fiber_force = active + passive + damping
        tendon_force = f0 * fse.value
        v = v_norm * vscale
        dphidt = self.pennation.pennation_angular_velocity(lce, v)
        zero = np.zeros_like(lce)
        return MusculotendonResponse(
            activation=a, fiber_length=lce, normalized_fiber_length=lce / lopt, pennation_angle=phi,
            tendon_length=lt, normalized_tendon_length=lt / lts,
            fiber_velocity=v, normalized_fiber_velocity=v_norm, pennation_angular_velocity=dphidt,
            tendon_velocity=vmt - v * cos + lce * sin * dphidt,
            active_force_length_multiplier=fal.value, force_velocity_multiplier=fv_value,
            passive_force_multiplier=fpe.value, tendon_force_multiplier=fse.value,
            active_fiber_force=active, passive_fiber_force=passive, damping_force=damping,
            fiber_force=fiber_force, fiber_force_along_tendon=fiber_force * cos, tendon_force=tendon_force,
            equilibrium_residual=fiber_force * cos - tendon_force, clamped=clamped,
            d_tendon_force_d_musculotendon_length=f0 * fse.derivative / lts,
            d_tendon_force_d_musculotendon_velocity=zero,
            d_tendon_force_d_activation=zero,
            d_tendon_force_d_fiber_length=lce_free * f0 * fse.derivative * dlt_dlce / lts,
            d_fiber_velocity_d_musculotendon_length=scale * r_lmt,
            d_fiber_velocity_d_activation=scale * r_a,
            d_fiber_velocity_d_fiber_length=scale * r_lce,
        )

    def _evaluate_rigid(self, activation, musculotendon_length, musculotendon_velocity):
        p, c = self.parameters, self.curves
        f0, lopt, lts, vscale = (p.max_isometric_force, p.optimal_fiber_length, p.tendon_slack_length,
                                 p.max_fiber_velocity)
        a_in, lmt, vmt = np.broadcast_arrays(
            *(np.asarray(v, dtype=float) for v in (activation, musculotendon_length, musculotendon_velocity)))
        a, a_free = self._activation(a_in)
        l_min = self.minimum_fiber_length
        lce_pen = self.pennation.fiber_length(lmt, lts)                      # eqs. (4), (6)
        lce = np.maximum(lce_pen, l_min)
        phi, cos, sin, dphi = self._geometry(lce)
        lt = lmt - lce * cos
        slack = lt < lts - SIGNIFICANT_REAL                                 # tendon buckles
        v = np.where(slack, 0.0, self.pennation.fiber_velocity(lce, vmt))    # eqs. (5), (7)
        clamped = slack | ((lce <= l_min) & (v <= 0))
        v = np.where(clamped, 0.0, v)
        v_norm = v / vscale
        fal = c.active_force_length.evaluate(lce / lopt)
        fpe = c.fiber_force_length.evaluate(lce / lopt)
        fv = c.force_velocity.evaluate(v_norm)
        beta = self.damping
        g = a * fal.value * fv.value + fpe.value + beta * v_norm
        force_star = f0 * g * cos
        transmits = ~clamped & (force_star > 0)                              # tension only
        tendon_force = np.where(transmits, force_star, 0.0)
        # tangent: dl^M/dl^MT = cos α where l^M is free, and cos α depends on l^MT
        dlce = np.where(lce_pen > l_min, cos, 0.0)
        dcos = -sin * dphi * dlce
        dv_norm = np.where(clamped, 0.0, vmt * dcos / vscale)
        dg = (a * fal.derivative * fv.value + fpe.derivative) / lopt * dlce + \
            (a * fal.value * fv.derivative + beta) * dv_norm
        d_lmt = np.where(transmits, f0 * (dg * cos + g * dcos), 0.0)
        d_vmt = np.where(transmits, f0 * (a * fal.value * fv.derivative + beta) * cos * cos / vscale, 0.0)
        d_a = np.where(transmits, f0 * fal.value * fv.value * cos * a_free, 0.0)
        fiber_force = np.where(clamped, 0.0, f0 * g)
        zero = np.zeros_like(lce)
        return MusculotendonResponse(
            activation=a, fiber_length=lce, normalized_fiber_length=lce / lopt, pennation_angle=phi,
            tendon_length=lt, normalized_tendon_length=lt / lts,
            fiber_velocity=v, normalized_fiber_velocity=v_norm,
            pennation_angular_velocity=self.pennation.pennation_angular_velocity(lce, v),
            tendon_velocity=zero,
            active_force_length_multiplier=fal.value, force_velocity_multiplier=fv.value,
            passive_force_multiplier=fpe.value, tendon_force_multiplier=tendon_force / f0,
            active_fiber_force=np.where(clamped, 0.0, f0 * a * fal.value * fv.value),
            passive_fiber_force=np.where(clamped, 0.0, f0 * fpe.value),
            # tension only: a negative f^M* is cancelled by the damper (as OpenSim reports it)
            damping_force=np.where(clamped, 0.0, np.where(transmits, f0 * beta * v_norm,
                                                          -f0 * (a * fal.value * fv.value + fpe.value))),
            fiber_force=np.where(transmits, fiber_force, 0.0),
            fiber_force_along_tendon=tendon_force, tendon_force=tendon_force,
            equilibrium_residual=zero, clamped=clamped,
            d_tendon_force_d_musculotendon_length=d_lmt,
            d_tendon_force_d_musculotendon_velocity=d_vmt,
            d_tendon_force_d_activation=d_a,
            d_tendon_force_d_fiber_length=zero,
            d_fiber_velocity_d_musculotendon_length=zero,
            d_fiber_velocity_d_activation=zero,
            d_fiber_velocity_d_fiber_length=zero,
        )

    # -- initialization -------------------------------------------------------
    def static_equilibrium(self, *, activation, musculotendon_length, tol: float = 1e-12,
                           max_iter: int = 200) -> MusculotendonResponse:
        """Fiber length at which fiber and tendon are in equilibrium at rest (ṽM = 0).

        Solves (a f^L + f^PE) cos α − f^T = 0 (eq. 1 with f^V = 1) for l^M on the
        bracket [minimum fiber length, length with a slack tendon] by Newton's
        method with bisection; a fiber that cannot stretch the tendon enough stays
        at its minimum length.  Returns :meth:`evaluate` at that length, whose
        fiber velocity is zero (to the tolerance).  The rigid tendon needs no
        solve: this is then ``evaluate`` with v^MT = 0.
        """
        _checked_inputs(activation=activation, musculotendon_length=musculotendon_length)
        if self.formulation == "rigid":
            return self.evaluate(activation=activation, musculotendon_length=musculotendon_length)
        p, c = self.parameters, self.curves
        lopt, lts = p.optimal_fiber_length, p.tendon_slack_length
        a_in, lmt = np.broadcast_arrays(np.asarray(activation, dtype=float),
                                        np.asarray(musculotendon_length, dtype=float))
        a = self._activation(a_in)[0].ravel()
        lmt_f = lmt.ravel()
        l_min = self.minimum_fiber_length

        def residual(lce, a, lmt):
            phi, cos, sin, dphi = self._geometry(lce)
            lt = lmt - lce * cos
            fal = c.active_force_length.evaluate(lce / lopt)
            fpe = c.fiber_force_length.evaluate(lce / lopt)
            fse = c.tendon_force_length.evaluate(lt / lts)
            g = a * fal.value + fpe.value
            r = g * cos - fse.value
            dr = ((a * fal.derivative + fpe.derivative) / lopt * cos - g * sin * dphi
                  + fse.derivative * (cos - lce * sin * dphi) / lts)
            return r, dr

        lo = np.full(lmt_f.shape, l_min)
        hi = np.maximum(self.pennation.fiber_length(lmt_f, lts), l_min)      # tendon at slack length
        r_lo, _ = residual(lo, a, lmt_f)
        lce = np.where(r_lo >= 0, lo, 0.5 * (lo + hi))
        active = r_lo < 0
        for _ in range(max_iter):
            if not active.any():
                break
            idx = np.flatnonzero(active)
            li = lce[idx]
            r, dr = residual(li, a[idx], lmt_f[idx])
            done = np.abs(r) <= tol
            lo_i = np.where(r < 0, li, lo[idx])
            hi_i = np.where(r > 0, li, hi[idx])
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = li - r / dr
            inside = (newton > lo_i) & (newton < hi_i) & np.isfinite(newton)
            step = np.where(inside, newton, 0.5 * (lo_i + hi_i))
            done |= (hi_i - lo_i) <= 4 * np.finfo(float).eps * li
            lce[idx] = np.where(done, li, step)
            lo[idx], hi[idx] = lo_i, hi_i
            active[idx[done]] = False
        if active.any():
            raise RuntimeError(f"static equilibrium not found at {active.sum()} points within "
                               f"max_iter={max_iter}; increase max_iter or tol")
        return self.evaluate(activation=a_in, musculotendon_length=lmt,
                             fiber_length=lce.reshape(lmt.shape))


def _checked_inputs(**values) -> None:
    """ValueError naming the argument unless every value is finite (``fiber_length`` None: not given), the
    lengths are > 0, and the shapes broadcast together."""
    shapes = {}
    for name, value in values.items():
        if value is None and name == "fiber_length":
            continue
        try:
            if value is None:
                raise TypeError
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}") from None
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name} must be finite, got {value!r}")
        if name.endswith("length") and not np.all(array > 0):
            raise ValueError(f"{name} must be > 0 (m), got {value!r}")
        shapes[name] = array.shape
    try:
        np.broadcast_shapes(*shapes.values())
    except ValueError:
        listing = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"the arguments' shapes do not broadcast together: {listing}") from None
