r"""Multibody verification: an n-link planar pendulum chain.
========================================================

n = 1 … 8 equal links (solid cylinders, L = 0.5 m, r = 0.02 m, m = 1 kg)
hang from a base body, each hinged to the previous one about the y axis
(:class:`skfiber.rigid.Revolute`).  Every joint carries the nonlinear spring
of the multibody paper's eq. 35, M(θ) = k tan(θ/2)/cos(θ/2) with
k = 1 N·m (small-angle stiffness 0.5 N·m/rad), and a linear damper
c = 0.2 N·m·s; a "ligament" spring–damper (2 N/m, 0.2 N·s/m, rest length
= reference length) joins a base point to the tip of the chain; gravity
g = 9.81 m/s².  The chain starts at rest with the first joint at 0.5 rad.
Everything is integrated with skfiber's rigid backward Euler
(:func:`skfiber.rigid.simulate_rigid`, paper eq. 64 rigid part) over
T = 1 s with Δt = T/N (``energy_study`` and ``driven_study`` take
``method="bdf2"`` for variable-step BDF2: trajectory rates 1.96 … 1.98,
drift rates 2.1 … 2.8, see docs/theory.md).

Three studies:

(a) **Energy drift, conservative case**: no dampers, fixed base.  The
    total energy E = T + V is a first integral; backward Euler dissipates
    it, and the drift ``max_n |E_n − E_0|`` (relative to the largest kinetic
    energy of the run) goes to zero at first order in Δt.
(b) **Kinetic-energy–work relation, damped and driven**: the base moves
    with x_b(t) = A (1 − cos ωt), z_b(t) = A_z (1 − cos 2ωt)
    (A = 0.05 m, A_z = 0.02 m, ω = π rad/s; :class:`~skfiber.rigid.Prescribed`
    with exact derivatives).  Multibody paper eqs. 51–54: the relative
    kinetic energy T₂ = ½ q̇ᵀM q̇ changes by the work of all forces
    including the transport (base) inertia forces Q* = −γ and the dampers,
    T₂(t) − T₂(0) = W(t).  The work is summed along the discrete solution
    with the rule consistent with backward Euler, W_n = Σ_k (q_k − q_{k−1})·Q(q_k, p_k, t_k)
    (:func:`~skfiber.rigid.work_balance`, rule ``"right"``);
    the residual ``max_n |T₂,n − T₂,0 − W_n| / max T₂`` → 0 at first order.
(c) **Trajectory convergence** of the same damped, driven runs:
    e(Δt) = max_n ‖q_n − q(t_n)‖∞ against a reference from
    ``scipy.integrate.solve_ivp`` (DOP853, rtol = atol = 1e-10) of the same
    equations M q̈ = Q − h (:meth:`~skfiber.rigid.RigidSystem.accelerations`);
    fitted rate ≈ 1.  For n = 2 also against an *independent* reference:
    the Lagrange equations derived with sympy from scalar formulas for T,
    V and the Rayleigh function (no skfiber kinematics) and integrated with
    Radau (rtol = 1e-10, atol = 1e-12).

Rates are least-squares slopes of log(error) against log(Δt) over all
step sizes; the tables also give the local rate of the two finest steps.
The summary reports the smallest least-squares rate over the chains.

Backward Euler damps an oscillation of frequency ω by a relative energy
≈ ω² Δt T over a time T, so the first-order regime needs ω² Δt T ≪ 1: the
links are long and the springs soft (lowest frequencies ≈ 3 … 5 rad/s) and
N = 50 … 400 steps over T = 1 s.  On the coarsest steps the errors are
still 10 … 60 % and the local rates approach 1 from below.

Measured (default run, n = 1 … 8, N = 50 … 400; 5–7 s on 2 cores, ``--small`` 1–2 s):

* (a) drift 0.61 … 0.086 (n = 1) down to 0.088 … 0.012 (n = 8), fitted
  rates 0.94 … 0.97, local rates of the finest pair 0.96 … 0.97.
* (b) residual 0.20 … 0.027 (n = 1), 0.034 … 0.0044 (n = 8), rates
  0.97 … 0.99 (finest pair 0.99 … 1.00 for all n).  The work table shows the
  dampers' dissipation and the base (transport) work, e.g. for n = 8 on
  Δt = 0.0025 s: gravity 17.88 J, joint dampers −0.22 J, transport 0.69 J,
  T₂ change 18.33 J.
* (c) errors 0.042 … 0.0058 rad (n = 1) and 0.048 … 0.0078 rad (n = 8),
  rates 0.96, 0.97, 0.95, 0.93, 0.91, 0.90, 0.89, 0.88 for n = 1 … 8 (finest
  pair 0.94 … 0.99: the long chains' fast modes are still pre-asymptotic at
  Δt = 0.02 s).
  n = 2 against the sympy/Radau reference: the same errors (rate 0.97);
  the skfiber and sympy equations of motion give solutions that differ by
  7e-11 rad, so the kinematics, inertia, transport, spring, damper and
  ligament terms agree with an independent derivation.
* Newton: 1.3 … 2.0 iterations per step (predictor q + Δt p + Δt² a).

Run ``python demos/pendulum_chain.py [--small] [--links 1 2 3 …] [--plot FILE.png]``;
the last line is ``summary: energy_drift_rate=… work_residual_rate=…
trajectory_rate=… independent_rate=… ode_agreement=…`` (ode_agreement: largest
difference, rad, between the skfiber-ODE and sympy-ODE reference solutions).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.integrate import solve_ivp

from skfiber.cli import ArgumentParser, output_file, run_script
from skfiber.rigid import (
    Body,
    Characteristic,
    Fixed,
    JointSpringDamper,
    PointSpringDamper,
    Prescribed,
    Revolute,
    RigidSystem,
    ode_motion,
    simulate_rigid,
    work_balance,
)

__all__ = ["build_chain", "initial_state", "energy_study", "driven_study", "independent_reference",
           "PendulumChainResult", "run", "main"]

LINK_LENGTH = 0.5    # m
LINK_RADIUS = 0.02   # m
LINK_MASS = 1.0      # kg
GRAVITY = 9.81       # m/s²
JOINT_K = 1.0        # N·m, eq. 35 of the multibody paper (small-angle stiffness k/2)
JOINT_C = 0.2        # N·m·s
LIGAMENT_K = 2.0     # N/m
LIGAMENT_C = 0.2     # N·s/m
LIGAMENT_BASE = (0.15, 0.0, -0.05)  # m, on the base body
AMPLITUDE_X = 0.05   # m
AMPLITUDE_Z = 0.02   # m
OMEGA = np.pi        # rad/s
T_END = 1.0          # s
FIRST_ANGLE = 0.5    # rad
STEPS = (50, 100, 200, 400)
SMALL_STEPS = (25, 50, 100, 200)


def base_translation(t):
    """(x_b, 0, z_b)(t) and its first two derivatives."""
    w = OMEGA
    d = np.array([AMPLITUDE_X * (1 - np.cos(w * t)), 0.0, AMPLITUDE_Z * (1 - np.cos(2 * w * t))])
    v = np.array([AMPLITUDE_X * w * np.sin(w * t), 0.0, 2 * w * AMPLITUDE_Z * np.sin(2 * w * t)])
    a = np.array([AMPLITUDE_X * w**2 * np.cos(w * t), 0.0, 4 * w**2 * AMPLITUDE_Z * np.cos(2 * w * t)])
    return d, v, a


def build_chain(n: int, *, damped: bool = True, driven: bool = True) -> RigidSystem:
    """The n-link chain; ``damped``: joint and ligament dampers; ``driven``: moving base."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 8:
        raise ValueError(f"the chain has 1 … 8 links, got n = {n!r}")
    system = RigidSystem(gravity=(0.0, 0.0, -GRAVITY))
    joint = (Prescribed(translation=lambda t: base_translation(t)[0], velocity=lambda t: base_translation(t)[1],
                        acceleration=lambda t: base_translation(t)[2]) if driven else Fixed())
    system.add_body(Body("base", start=(0, 0, 0), axis=(0.2, 0, 0), radius=0.03), joint=joint)
    parent = "base"
    for i in range(n):
        z = -LINK_LENGTH * i
        name = f"link{i + 1}"
        system.add_body(Body(name, start=(0, 0, z), axis=(0, 0, -LINK_LENGTH), radius=LINK_RADIUS, mass=LINK_MASS),
                        parent=parent, joint=Revolute(axis=(0, 1, 0), point=(0, 0, z)))
        system.add(JointSpringDamper(name, stiffness=Characteristic.tan_sec(JOINT_K), damping=JOINT_C if damped else None))
        parent = name
    system.add(PointSpringDamper("base", LIGAMENT_BASE, parent, (0, 0, -LINK_LENGTH * n), stiffness=LIGAMENT_K,
                                 damping=LIGAMENT_C if damped else None, name="ligament"))
    return system


def initial_state(n: int):
    """q0 (first joint at FIRST_ANGLE, the others straight), p0 = 0."""
    q0 = np.zeros(n)
    q0[0] = FIRST_ANGLE
    return q0, np.zeros(n)


def fitted_rate(dt, err) -> float:
    """Least-squares slope of log(err) against log(dt)."""
    return float(np.polyfit(np.log(dt), np.log(err), 1)[0])


def _finest_rates(dt, errors):
    """Local rate of the two finest step sizes, per row."""
    return [float(np.log(e[-2] / e[-1]) / np.log(dt[-2] / dt[-1])) for e in errors]


# --------------------------------------------------------------------------- (a)
@dataclass
class EnergyStudy:
    """(a): relative energy drift ``drift[i, j]`` of chain ``links[i]`` with Δt = ``dt[j]``."""

    links: tuple[int, ...]
    dt: np.ndarray
    drift: np.ndarray
    absolute: np.ndarray  # J
    rates: np.ndarray

    @property
    def rate(self) -> float:
        return float(self.rates.min())

    def table(self) -> str:
        lines = ["(a) conservative chain (fixed base, no dampers): energy drift max|E_n − E_0| / max T",
                 "    Δt (s)   " + "".join(f"{f'n = {n}':>12}" for n in self.links)]
        for j, h in enumerate(self.dt):
            lines.append(f"  {h:9.5f}  " + "".join(f"{d:12.3e}" for d in self.drift[:, j]))
        lines.append("      rate   " + "".join(f"{r:12.2f}" for r in self.rates))
        lines.append("    finest   " + "".join(f"{r:12.2f}" for r in _finest_rates(self.dt, self.drift)))
        return "\n".join(lines)


def energy_study(links: Sequence[int], steps: Sequence[int], *, t_end: float = T_END, progress=None,
                 method: str = "euler") -> EnergyStudy:
    dt = t_end / np.asarray(steps, dtype=float)
    drift = np.zeros((len(links), len(steps)))
    absolute = np.zeros_like(drift)
    for i, n in enumerate(links):
        system = build_chain(n, damped=False, driven=False)
        q0, p0 = initial_state(n)
        for j, N in enumerate(steps):
            res = simulate_rigid(system, q0, p0, t_end, t_end / N, method=method, on_interrupt="raise")
            # no prescribed motion: energies of all steps in one batched call
            T = system.relative_kinetic_energy(res.q, res.p)
            E = T + system.potential_energy(res.q)
            absolute[i, j] = np.max(np.abs(E - E[0]))
            drift[i, j] = absolute[i, j] / T.max()
            if progress:
                progress(f"(a) n = {n}, N = {N}: drift {drift[i, j]:.3e}")
    rates = np.array([fitted_rate(dt, d) for d in drift])
    return EnergyStudy(tuple(links), dt, drift, absolute, rates)


# --------------------------------------------------------------------------- (b) and (c)
def library_reference(system: RigidSystem, q0, p0, t_end: float):
    """Dense solve_ivp (DOP853, 1e-10) solution of M q̈ = Q − h; returns sol(t) → (2n,) [q, p]."""
    return ode_motion(system, q0, p0, t_end, method="DOP853", rtol=1e-10, atol=1e-10)


@dataclass
class DrivenStudy:
    """(b) work residuals and (c) trajectory errors of the damped, driven chains.

    ``work_residual[i, j]``: max_n |T₂,n − T₂,0 − W_n| / max T₂ of chain
    ``links[i]`` with Δt = ``dt[j]``; ``error[i, j]``: max_n ‖q_n − q(t_n)‖∞
    (rad) against the solve_ivp reference.  ``work_parts[i]``: the work of
    each force (J) up to T on the finest Δt (with ``"T2 change"``).
    """

    links: tuple[int, ...]
    dt: np.ndarray
    work_residual: np.ndarray
    error: np.ndarray
    work_parts: list[dict]
    newton_iterations: np.ndarray  # mean per step
    work_rates: np.ndarray = field(init=False)
    error_rates: np.ndarray = field(init=False)
    results: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.work_rates = np.array([fitted_rate(self.dt, r) for r in self.work_residual])
        self.error_rates = np.array([fitted_rate(self.dt, e) for e in self.error])

    def tables(self) -> str:
        head = "    Δt (s)   " + "".join(f"{f'n = {n}':>12}" for n in self.links)
        lines = ["(b) damped, driven chain: kinetic-energy–work residual max|T₂,n − T₂,0 − W_n| / max T₂", head]
        for j, h in enumerate(self.dt):
            lines.append(f"  {h:9.5f}  " + "".join(f"{d:12.3e}" for d in self.work_residual[:, j]))
        lines.append("      rate   " + "".join(f"{r:12.2f}" for r in self.work_rates))
        lines.append("    finest   " + "".join(f"{r:12.2f}" for r in _finest_rates(self.dt, self.work_residual)))
        lines.append("")
        lines.append(f"    work up to T = {T_END:g} s on the finest Δt (J):")
        keys = list(self.work_parts[0])
        lines.append("    " + f"{'':14}" + "".join(f"{f'n = {n}':>12}" for n in self.links))
        for k in keys:
            lines.append(f"    {k:14}" + "".join(f"{p.get(k, 0.0):12.4f}" for p in self.work_parts))
        lines.append("")
        lines.append("(c) trajectory error max_n ‖q_n − q(t_n)‖∞ (rad) against solve_ivp (DOP853, 1e-10)")
        lines.append(head)
        for j, h in enumerate(self.dt):
            lines.append(f"  {h:9.5f}  " + "".join(f"{d:12.3e}" for d in self.error[:, j]))
        lines.append("      rate   " + "".join(f"{r:12.2f}" for r in self.error_rates))
        lines.append("    finest   " + "".join(f"{r:12.2f}" for r in _finest_rates(self.dt, self.error)))
        lines.append("    Newton iterations per step (mean over the runs): "
                     + ", ".join(f"n = {n}: {it:.2f}" for n, it in zip(self.links, self.newton_iterations)))
        return "\n".join(lines)


def _group(parts: dict) -> dict:
    out = {"gravity": 0.0, "joint springs": 0.0, "joint dampers": 0.0, "ligament": 0.0, "transport": 0.0}
    for k, v in parts.items():
        if k.startswith("joint["):
            continue
        out[k] = out.get(k, 0.0) + v
    return out


def driven_study(links: Sequence[int], steps: Sequence[int], *, t_end: float = T_END, progress=None,
                 method: str = "euler") -> DrivenStudy:
    """(b) and (c) with ``method`` ("euler" or "bdf2"; the work is summed with the backward-Euler rule in
    both, so (b) converges at first order for BDF2 too: only (c) shows BDF2's order)."""
    dt = t_end / np.asarray(steps, dtype=float)
    residual = np.zeros((len(links), len(steps)))
    error = np.zeros_like(residual)
    parts_out, iterations, results = [], [], {}
    for i, n in enumerate(links):
        system = build_chain(n)
        q0, p0 = initial_state(n)
        ref = library_reference(system, q0, p0, t_end)
        its = []
        for j, N in enumerate(steps):
            res = simulate_rigid(system, q0, p0, t_end, t_end / N, method=method, on_interrupt="raise")
            results[(n, N)] = res
            its.append(np.mean(res.newton_iterations))
            balance = work_balance(system, res.times, res.q, res.p)   # the backward-Euler rule
            residual[i, j] = balance.relative_error
            T2 = balance.relative_kinetic_energy
            parts = {name: float(w[-1]) for name, w in balance.work.items()}
            error[i, j] = np.max(np.abs(res.q - ref(res.times)[:n].T))
            if progress:
                progress(f"(b, c) n = {n}, N = {N}: work residual {residual[i, j]:.3e}, error {error[i, j]:.3e}")
        # split the joint work into springs and dampers (finest run) for the table
        finest = results[(n, steps[-1])]
        grouped = _group(parts)
        springs, dampers = _joint_work(system, finest)
        grouped["joint springs"], grouped["joint dampers"] = springs, dampers
        grouped["T2 change"] = float(T2[-1] - T2[0])
        parts_out.append(grouped)
        iterations.append(float(np.mean(its)))
    return DrivenStudy(tuple(links), dt, residual, error, parts_out, np.array(iterations), results=results)


def _joint_work(system: RigidSystem, res):
    """Work of the joint springs and of the joint dampers along a run (backward-Euler rule)."""
    springs = dampers = 0.0
    dq = np.diff(res.q, axis=0)
    for e in system.elements:
        if isinstance(e, JointSpringDamper):
            i = system.coordinate_index(e.body)
            springs -= float(dq[:, i] @ e.stiffness(res.q[1:, i] - e.rest))
            if e.damping is not None:
                dampers -= float(dq[:, i] @ e.damping(res.p[1:, i]))
    return springs, dampers


# --------------------------------------------------------------------------- independent reference (n = 2)
def independent_equations():
    """Lagrange equations of the driven double pendulum from scalar sympy formulas.

    Returns ``f(t, y) → ẏ`` with y = (θ₁, θ₂, θ̇₁, θ̇₂): absolute link angles
    φ₁ = θ₁, φ₂ = θ₁ + θ₂ about +y (a point (0, 0, −s) of link i is at
    joint_i + s (−sin φ_i, 0, −cos φ_i)), T = Σ ½ m |v_S|² + ½ I φ̇², I =
    m (3r² + L²)/12, V = Σ m g z_S + Σ 2k (sec(θ_i/2) − 1) + ½ k_l (ξ − ξ0)²,
    Rayleigh function Σ ½ c θ̇_i² + ½ c_l ξ̇².
    """
    import sympy as sp

    t = sp.symbols("t")
    th = [sp.Function(f"theta{i}")(t) for i in (1, 2)]
    L, r, m, g = (sp.Float(v) for v in (LINK_LENGTH, LINK_RADIUS, LINK_MASS, GRAVITY))
    k, c, kl, cl = (sp.Float(v) for v in (JOINT_K, JOINT_C, LIGAMENT_K, LIGAMENT_C))
    w, Ax, Az = sp.Float(OMEGA), sp.Float(AMPLITUDE_X), sp.Float(AMPLITUDE_Z)
    base = sp.Matrix([Ax * (1 - sp.cos(w * t)), 0, Az * (1 - sp.cos(2 * w * t))])
    phi = [th[0], th[0] + th[1]]
    e = [sp.Matrix([-sp.sin(f), 0, -sp.cos(f)]) for f in phi]
    joint2 = base + L * e[0]
    com = [base + L / 2 * e[0], joint2 + L / 2 * e[1]]
    tip = joint2 + L * e[1]
    inertia = m * (3 * r**2 + L**2) / 12
    T = sum(m / 2 * (s.diff(t).T * s.diff(t))[0] for s in com) + sum(inertia / 2 * f.diff(t) ** 2 for f in phi)
    anchor = base + sp.Matrix(LIGAMENT_BASE)
    d = tip - anchor
    xi = sp.sqrt((d.T * d)[0])
    xi0 = float(np.linalg.norm(np.array([0, 0, -2 * LINK_LENGTH]) - np.array(LIGAMENT_BASE)))
    V = (sum(m * g * s[2] for s in com) + sum(2 * k * (1 / sp.cos(q / 2) - 1) for q in th)
         + kl / 2 * (xi - xi0) ** 2)
    R = sum(c / 2 * q.diff(t) ** 2 for q in th) + cl / 2 * xi.diff(t) ** 2
    q_s = sp.symbols("q1 q2")
    v_s = sp.symbols("v1 v2")
    a_s = sp.symbols("a1 a2")
    eqs = []
    for qi in th:
        eq = (T.diff(qi.diff(t)).diff(t) - T.diff(qi) + V.diff(qi) + R.diff(qi.diff(t)))
        eqs.append(eq)
    subs = {}
    for qi, qs, vs, as_ in zip(th, q_s, v_s, a_s):
        subs[qi.diff(t, 2)] = as_
    eqs = [e_.subs(subs) for e_ in eqs]
    subs = {qi.diff(t): vs for qi, vs in zip(th, v_s)}
    eqs = [e_.subs(subs) for e_ in eqs]
    subs = {qi: qs for qi, qs in zip(th, q_s)}
    eqs = [e_.subs(subs) for e_ in eqs]
    Msym = sp.Matrix([[e_.diff(a) for a in a_s] for e_ in eqs])
    rest = sp.Matrix([e_.subs({a: 0 for a in a_s}) for e_ in eqs])
    # one scalar function (math module) for the 2×2 system M a = −rest, solved by Cramer's rule
    f = sp.lambdify((t, q_s, v_s), [Msym[0, 0], Msym[0, 1], Msym[1, 0], Msym[1, 1], rest[0], rest[1]],
                    modules="math", cse=True)

    def rhs(tt, y):
        m00, m01, m10, m11, r0, r1 = f(tt, (y[0], y[1]), (y[2], y[3]))
        det = m00 * m11 - m01 * m10
        return np.array([y[2], y[3], (-r0 * m11 + r1 * m01) / det, (-r1 * m00 + r0 * m10) / det])

    return rhs


@dataclass
class IndependentCheck:
    """(c, n = 2): BE errors against the sympy/Radau reference, and the two references' difference."""

    dt: np.ndarray
    error: np.ndarray
    ode_agreement: float   # max |q_sympy − q_skfiber| of the two reference solutions (rad)
    rate: float

    def table(self) -> str:
        lines = ["(c) n = 2 against the independent reference (sympy Lagrange equations, Radau 1e-10)",
                 "    Δt (s)        error (rad)"]
        for h, e in zip(self.dt, self.error):
            lines.append(f"  {h:9.5f}  {e:14.3e}")
        lines.append(f"      rate   {self.rate:14.2f}")
        lines.append(f"    skfiber ODE vs sympy ODE (both solve_ivp): max difference {self.ode_agreement:.2e} rad")
        return "\n".join(lines)


def independent_reference(study: DrivenStudy, steps: Sequence[int], *, t_end: float = T_END) -> IndependentCheck:
    rhs = independent_equations()
    q0, p0 = initial_state(2)
    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([q0, p0]), method="Radau", rtol=1e-10, atol=1e-12,
                    dense_output=True)
    if not sol.success:  # pragma: no cover
        raise RuntimeError(f"independent reference failed: {sol.message}")
    errors = []
    for N in steps:
        res = study.results[(2, N)]
        errors.append(np.max(np.abs(res.q - sol.sol(res.times)[:2].T)))
    ref = library_reference(build_chain(2), q0, p0, t_end)
    grid = np.linspace(0.0, t_end, 201)
    agreement = float(np.max(np.abs(ref(grid)[:2] - sol.sol(grid)[:2])))
    dt = t_end / np.asarray(steps, dtype=float)
    errors = np.array(errors)
    return IndependentCheck(dt, errors, agreement, fitted_rate(dt, errors))


# --------------------------------------------------------------------------- driver
@dataclass
class PendulumChainResult:
    energy: EnergyStudy
    driven: DrivenStudy
    independent: IndependentCheck | None
    wall_time: float

    @property
    def summary(self) -> str:
        s = (f"summary: energy_drift_rate={self.energy.rate:.2f} work_residual_rate={self.driven.work_rates.min():.2f} "
             f"trajectory_rate={self.driven.error_rates.min():.2f}")
        if self.independent is not None:
            s += f" independent_rate={self.independent.rate:.2f} ode_agreement={self.independent.ode_agreement:.1e}"
        else:  # (the independent check is of the chain of 2 links: nan when --links leaves n = 2 out)
            s += " independent_rate=nan ode_agreement=nan"
        return s


def run(*, small: bool = False, links: Sequence[int] | None = None, progress: bool = False) -> PendulumChainResult:
    """Run the three studies.

    Parameters
    ----------
    small
        Quick version: chains n = 2 only, N = 25 … 200 steps (instead of
        n = 1 … 8 and N = 50 … 400).
    links
        Chain lengths to study (1 … 8); the independent check runs when 2 is among them.
    progress
        Print one line per run to stderr.
    """
    import sys

    start = time.perf_counter()
    if links is None:
        links = (2,) if small else tuple(range(1, 9))
    links = tuple(int(n) for n in links)
    for n in links:
        if not 1 <= n <= 8:
            raise ValueError(f"links must be between 1 and 8, got {n}")
    steps = SMALL_STEPS if small else STEPS
    say = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else None
    energy = energy_study(links, steps, progress=say)
    driven = driven_study(links, steps, progress=say)
    independent = independent_reference(driven, steps) if 2 in links else None
    return PendulumChainResult(energy, driven, independent, time.perf_counter() - start)


def plot(result: PendulumChainResult, filename: str) -> None:
    """Convergence plots (log–log) and the n = 2 trajectory, saved to ``filename`` (needs matplotlib)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 4), layout="constrained")
    axes = fig.subplots(1, 3)
    e, d = result.energy, result.driven
    for ax, data, title in ((axes[0], e.drift, "(a) energy drift"), (axes[1], d.work_residual, "(b) T₂ − W residual"),
                            (axes[2], d.error, "(c) trajectory error (rad)")):
        for n, row in zip(e.links, data):
            ax.loglog(e.dt, row, "o-", label=f"n = {n}")
        ax.loglog(e.dt, data.max() * e.dt / e.dt[0], "k--", label="slope 1")
        ax.set_xlabel("Δt (s)")
        ax.set_title(title)
    if result.independent is not None:
        axes[2].loglog(result.independent.dt, result.independent.error, "kx:", label="n = 2 vs sympy/Radau")
    for ax in axes:
        ax.set_xticks(e.dt, [f"{h:g}" for h in e.dt])
        ax.minorticks_off()
        ax.legend(fontsize=8)
    fig.savefig(filename, dpi=120)


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true",
                        help="n = 2 only (unless --links is given) and fewer steps (a few seconds)")
    parser.add_argument("--links", type=int, nargs="+", default=None,
                        help="chain lengths n (1 … 8), default all eight; the independent check needs n = 2 "
                             "(without it, its summary keys are nan)")
    parser.add_argument("--plot", metavar="FILE.png", help="save the convergence plots (needs matplotlib)")
    parser.add_argument("--progress", action="store_true", help="one line per run on stderr")
    args = parser.parse_args(argv)
    if args.plot:
        output_file(parser, "--plot", args.plot, figure=True)
    if args.links is not None and not all(1 <= n <= 8 for n in args.links):
        parser.error(f"--links must be between 1 and 8, got {args.links}")
    if args.links is not None and len(set(args.links)) < len(args.links):
        parser.error(f"--links names a chain twice, got {args.links}: give each number of links once")
    result = run(small=args.small, links=args.links, progress=args.progress)
    print(result.energy.table())
    print()
    print(result.driven.tables())
    if result.independent is not None:
        print()
        print(result.independent.table())
    print(f"total wall time {result.wall_time:.1f} s")
    if args.plot:
        plot(result, args.plot)
        print(f"plot saved to {args.plot}")
    print(result.summary)
    return 0


if __name__ == "__main__":
    run_script(main)
