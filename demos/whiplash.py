r"""Whiplash: head and C1–C7 on T1 under an 8.5 g rear-end pulse.
===============================================================

The multibody paper's numerical experiment.  Model (x anterior, z up, m;
rotations about +y, so a positive joint angle is flexion): the head and C7 … C1, 8 bodies in an open chain on T1, hinged by
:class:`~skfiber.rigid.Revolute` joints at the disc centres; the coordinates
are the 8 relative joint angles, 0 in the initial posture (multibody paper
eqs. 22–25, 36).  Every joint carries the spring of eq. 35,
k_O tan(θ/2)/cos(θ/2) (:meth:`~skfiber.rigid.Characteristic.tan_sec`), and a
damper; its rest angle holds the initial posture against gravity.  Anterior
longitudinal (ALL) and interspinous (ISL) ligaments are linear spring–dampers
between body points (:class:`~skfiber.rigid.PointSpringDamper`), T1–C7 and
C1–head included.  T1 moves forward with the triangular acceleration pulse of
eq. 48 (8.5 g at 52.5 ms, 0 from 105 ms; :class:`~skfiber.rigid.Prescribed`
with exact derivatives, :func:`pulse`).  Gravity 9.81 m/s².

The paper gives neither its coefficients nor its geometry: the values below
(the constants of this module) are chosen, the anatomy from Panjabi et al.
1991 (Spine 16:861), the head's inertia from Beier et al. 1980 (IRCOBI), the
vertebrae's from the size of de Jager's neck segments, and the stiffness and
damping, like the paper's, by trial against its figures.  The table of values
and sources, the departures from the paper (eq. 48 as printed is not the
integral of its pulse) and the measured numbers are in docs/theory.md, "The
whiplash model".

Printed: the head's motion relative to T1, the S- and C-shape phases, the
ligament forces, the kinetic-energy–work balance with the transport (moving-T1)
terms (eqs. 49–55, :func:`skfiber.rigid.work_balance`) at Δt, 2Δt, 4Δt, and a
table over the integrators of :data:`METHODS` (backward Euler and BDF2 of
:func:`~skfiber.rigid.simulate_rigid` at the fixed Δt, BDF2 with error control
at the tolerances of the Radau run, ``solve_ivp(method="Radau")``) on the
same equations: error against a tight Radau reference, e_R, wall time.

Files (``--out DIR``, default ``whiplash_output``): ``head_motion.png`` (the
paper's Fig. 8), ``ligament_forces.png`` (Fig. 9, + tension),
``spine_shape.png`` (the chain every 25 ms relative to T1, at most 13 panels: every 50 ms, 75 ms, …
on a longer run; and the joint angles,
S and C phases shaded), ``head.csv``, ``ligaments.csv``, ``angles.csv``.

Run ``python demos/whiplash.py [--small] [--level N] [--t-end T] [--out DIR]``
or ``skfiber run whiplash``; ``--level N`` divides Δt = 1e-4 s by 2^(N−1).
The last line is ``summary: max_head_disp_m=… energy_work_residual=…
bdf2_vs_radau_err=… wall_s=…`` (largest displacement of the head's centre of
mass relative to T1; e_R of the backward-Euler run; the error
max‖q − q_ref‖∞ in rad of BDF2 at the fixed Δt against the Radau reference,
``nan`` when it is not among ``--methods``; the run's wall time).
"""
from __future__ import annotations

import csv
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from scipy.optimize import brentq

from skfiber.cli import ArgumentParser, folder_path, output_folder, positive_float, positive_int, run_script
from skfiber.core.interrupt import CTRL_C, handle_ctrl_c
from skfiber.rigid import (
    Body,
    Characteristic,
    JointSpringDamper,
    PointSpringDamper,
    Prescribed,
    Revolute,
    RigidSystem,
    ode_motion,
    simulate_rigid,
    work_balance,
)

__all__ = ["pulse", "build_neck", "Neck", "METHODS", "reference_solution", "spine_phases",
           "WhiplashResult", "run", "main"]

GRAVITY = 9.81               # m/s²
PEAK_ACCELERATION = 8.5 * GRAVITY   # m/s², eq. 48
PULSE_END = 0.105            # s, t₂
PULSE_PEAK = PULSE_END / 2   # s, t₁
T_END = 0.3                  # s
DT = 1e-4                    # s, level 1
MAX_LEVEL = 8                # the finest level: Δt = DT / 128, 384,000 steps over T_END for each integrator
SMALL_T_END, SMALL_DT = 0.09, 4e-4

#: from T1 upward: body, joint spacing to the next joint (m), inclination from vertical (deg, + = forward)
SEGMENTS = (("C7", 0.019, 14.0), ("C6", 0.019, 10.0), ("C5", 0.019, 6.0), ("C4", 0.019, 2.0),
            ("C3", 0.019, -2.0), ("C2", 0.032, -6.0), ("C1", 0.015, -9.0))
HEAD_INCLINATION = -10.0     # deg
BODY_HEIGHT, DISC, BODY_DEPTH, SPINOUS = 0.014, 0.005, 0.016, 0.030   # m
VERTEBRA_MASS, VERTEBRA_INERTIA = 0.22, 2.2e-4   # kg, kg·m²
HEAD_MASS, HEAD_INERTIA = 4.2, 4.2 * 0.0718**2   # kg, kg·m² (radius of gyration 7.18 cm)
HEAD_COM = (0.020, 0.045)    # m, (anterior, superior) of the condyles in the head's frame
JOINT_K, JOINT_C = 400.0, 1.5            # N·m (eq. 35), N·m·s
ANTERIOR_K, ANTERIOR_C = 2e4, 20.0       # N/m, N·s/m
POSTERIOR_K, POSTERIOR_C = 5e3, 5.0      # N/m, N·s/m
REFERENCE_TOLERANCES = (1e-8, 1e-10)     # rtol, atol of the reference
SMALL_REFERENCE_TOLERANCES = (1e-7, 1e-9)
RADAU_TOLERANCES = (1e-4, 1e-6)          # rtol, atol of the compared solve_ivp run
SNAPSHOT_DT = 0.025          # s, between the chain's panels in spine_shape.png
MAX_SNAPSHOTS = 13           # panels at most (those of T_END); a longer run shows every 2nd, 3rd, … of them
UPPER, LOWER = ("head", "C1"), ("C7", "C6")   # joints (by their upper body) that decide S and C


# --------------------------------------------------------------------------- model
def pulse(t):
    """T1's anterior translation x(t), velocity and acceleration: the triangular pulse of eq. 48.

    The acceleration rises linearly to ``PEAK_ACCELERATION`` at t₁ and falls to 0
    at t₂; x and ẋ are its exact integrals from rest (T1 keeps the final
    velocity a_max t₂/2 = 4.38 m/s).  Works on numbers and arrays.
    """
    t = np.asarray(t, dtype=float)
    a, t1, w = PEAK_ACCELERATION, PULSE_PEAK, PULSE_END - PULSE_PEAK
    rise = np.clip(t, 0.0, t1)
    s = np.clip(t - t1, 0.0, w)                                   # time into the falling ramp
    after = np.maximum(t - PULSE_END, 0.0)
    v1, x1 = a * t1 / 2, a * t1**2 / 6
    v_fall = a * (w * w - (w - s) ** 2) / (2 * w)
    x_fall = a / (2 * w) * (w * w * s - (w**3 - (w - s) ** 3) / 3)
    x = np.where(t <= t1, a * rise**3 / (6 * t1), x1 + v1 * s + x_fall)
    v = np.where(t <= t1, a * rise**2 / (2 * t1), v1 + v_fall)
    v_end = v1 + a * w / 2
    x = x + v_end * after
    acc = np.where(t <= t1, a * rise / t1, np.where(t <= PULSE_END, a * (w - s) / w, 0.0))
    return x, v, acc


def _local(inclination_deg: float) -> Callable[[float, float], np.ndarray]:
    """(forward, up) in a segment's frame → world vector, the frame inclined by the angle about +y."""
    c, s = math.cos(math.radians(inclination_deg)), math.sin(math.radians(inclination_deg))
    return lambda fwd, up: np.array([fwd * c + up * s, 0.0, -fwd * s + up * c])


@dataclass
class Neck:
    """The assembled model: the rigid system and what the outputs need."""

    system: RigidSystem
    bodies: tuple[str, ...]                 # C7 … C1, head (the coordinates' order)
    joints: tuple[str, ...]                 # "C7–T1", …, "head–C1"
    anterior: tuple[PointSpringDamper, ...]
    posterior: tuple[PointSpringDamper, ...]
    pivots: np.ndarray                      # (9, 3) reference joint centres + the head's centre of mass


def build_neck(*, joint_k: float = JOINT_K, gravity: bool = True, preload: bool = True) -> Neck:
    """The head–neck chain on T1 (see the module text); ``preload``: rest angles for equilibrium at t = 0."""
    shaker = Prescribed(translation=lambda t: (float(pulse(t)[0]), 0.0, 0.0),
                        velocity=lambda t: (float(pulse(t)[1]), 0.0, 0.0),
                        acceleration=lambda t: (float(pulse(t)[2]), 0.0, 0.0))
    system = RigidSystem(gravity=(0.0, 0.0, -GRAVITY if gravity else 0.0))
    system.add_body(Body("T1", start=(0, 0, -0.02), axis=(0, 0, 0.02), radius=0.01), joint=shaker)
    law = Characteristic.tan_sec(joint_k)
    joint_point = np.zeros(3)
    anterior_below = np.array([BODY_DEPTH / 2, 0.0, -DISC / 2])                 # T1's anterior-superior corner
    posterior_below = np.array([-(BODY_DEPTH / 2 + SPINOUS), 0.0, -DISC / 2 - 0.004])
    parent, bodies, joints, ant, post, pivots = "T1", [], [], [], [], [joint_point]
    layout = [(name, spacing, incl) for name, spacing, incl in SEGMENTS] + [("head", None, HEAD_INCLINATION)]
    for name, spacing, inclination in layout:
        r = _local(inclination)
        if name == "head":
            top, com = joint_point + r(0.0, 0.10), joint_point + r(*HEAD_COM)
            mass, inertia, radius = HEAD_MASS, HEAD_INERTIA, 0.07
            anterior, posterior = joint_point + r(0.015, 0.005), joint_point + r(-0.045, 0.010)
            anterior_top = posterior_top = None
        else:
            top, com = joint_point + r(0.0, spacing), joint_point + r(0.0, DISC / 2 + BODY_HEIGHT / 2)
            mass, inertia, radius = VERTEBRA_MASS, VERTEBRA_INERTIA, 0.008
            anterior, anterior_top = joint_point + r(BODY_DEPTH / 2, DISC / 2), joint_point + r(BODY_DEPTH / 2, DISC / 2 + BODY_HEIGHT)
            tip = -(BODY_DEPTH / 2 + SPINOUS)
            posterior, posterior_top = joint_point + r(tip, DISC / 2 + 0.002), joint_point + r(tip, DISC / 2 + 0.008)
        system.add_body(Body(name, start=joint_point, axis=top - joint_point, radius=radius, mass=mass,
                             inertia=(inertia, inertia), center_of_mass=com),
                        parent=parent, joint=Revolute(axis=(0, 1, 0), point=joint_point))
        joint = f"{name}–{parent}"
        system.add(JointSpringDamper(name, stiffness=law, damping=JOINT_C, name=f"joint {joint}"))
        ant.append(system.add(PointSpringDamper(parent, anterior_below, name, anterior, stiffness=ANTERIOR_K,
                                                damping=ANTERIOR_C, name=f"ALL {joint}")))
        post.append(system.add(PointSpringDamper(parent, posterior_below, name, posterior, stiffness=POSTERIOR_K,
                                                 damping=POSTERIOR_C, name=f"ISL {joint}")))
        bodies.append(name)
        joints.append(joint)
        anterior_below, posterior_below, parent, joint_point = anterior_top, posterior_top, name, top
        pivots.append(com if name == "head" else top)
    neck = Neck(system, tuple(bodies), tuple(joints), tuple(ant), tuple(post), np.array(pivots))
    if preload:
        _preload(neck, law)
    return neck


def _preload(neck: Neck, law: Characteristic) -> None:
    """Rest angles of the joint springs that hold the initial posture (q = 0) against gravity."""
    system = neck.system
    Q = system.generalized_forces(np.zeros(system.n), np.zeros(system.n), 0.0)   # weight (ligaments at rest)
    for element in system.elements:
        if isinstance(element, JointSpringDamper):
            moment = Q[system.coordinate_index(element.body)]
            element.rest = -brentq(lambda x: float(law(x)) - moment, -3.0, 3.0, xtol=1e-15)


# --------------------------------------------------------------------------- methods
@dataclass
class Trajectory:
    """A computed motion on the output grid: ``q[k]``, ``p[k]`` at ``times[k]``."""

    method: str
    setting: str
    times: np.ndarray
    q: np.ndarray
    p: np.ndarray
    wall: float
    work_rule: str           # the quadrature rule of the kinetic-energy–work balance that fits the method
    cost: str = ""           # steps taken or right-hand-side evaluations


def _simulate_rigid_method(method: str, rule: str, tolerances: tuple[float, float] | None = None):
    """A :func:`~skfiber.rigid.simulate_rigid` scheme as a table entry: fixed steps of Δt, or with
    ``tolerances`` (rtol, atol) error control, its states interpolated to the same Δt grid."""
    def run_method(system, q0, p0, t_end, dt):
        tic = time.perf_counter()
        if tolerances is None:
            res = simulate_rigid(system, q0, p0, t_end, dt, method=method, on_interrupt="raise")
            setting, cost = f"dt = {dt:g} s", f"{len(res.times) - 1} steps"
        else:
            rtol, atol = tolerances
            res = simulate_rigid(system, q0, p0, t_end, dt, method=method, rtol=rtol, atol=atol, on_interrupt="raise")
            setting = f"rtol = {rtol:g}"
            cost = f"{res.step_counts.accepted} steps + {res.step_counts.rejected} rejected"
        return Trajectory(method, setting, res.times, res.q, res.p, time.perf_counter() - tic, rule,
                          f"{cost}, {sum(res.newton_iterations)} Newton its")
    return run_method


def _radau(system, q0, p0, t_end, dt):
    rtol, atol = RADAU_TOLERANCES
    tic = time.perf_counter()
    motion = ode_motion(system, q0, p0, t_end, method="Radau", rtol=rtol, atol=atol)
    times = np.linspace(0.0, t_end, max(1, round(t_end / dt)) + 1)
    return Trajectory("radau", f"rtol = {rtol:g}", times, motion.q(times), motion.p(times), time.perf_counter() - tic,
                      "trapezoid", f"{motion.evaluations} f-evals, {motion.jacobians} Jacobians")


#: The compared integrators: name → f(system, q0, p0, t_end, dt) → Trajectory.  Backward Euler and BDF2 at
#: the fixed Δt, BDF2 with error control at Radau's tolerances, and ``solve_ivp``'s Radau.
METHODS = {
    "euler": _simulate_rigid_method("euler", "right"),
    "bdf2": _simulate_rigid_method("bdf2", "trapezoid"),
    "bdf2-ec": _simulate_rigid_method("bdf2", "trapezoid", RADAU_TOLERANCES),
    "radau": _radau,
}


def reference_solution(system: RigidSystem, q0, p0, t_end: float, *, tolerances=REFERENCE_TOLERANCES):
    """Tight Radau motion (:func:`skfiber.rigid.ode_motion`) restarted at the pulse's kinks, and its wall time."""
    tic = time.perf_counter()
    motion = ode_motion(system, q0, p0, t_end, method="Radau", rtol=tolerances[0], atol=tolerances[1],
                        breaks=(PULSE_PEAK, PULSE_END))
    return motion, time.perf_counter() - tic


# --------------------------------------------------------------------------- outputs of a motion
def _points_along(neck: Neck, traj: Trajectory):
    """Joint centres and the head's centre of mass (B, 9, 3), their velocities, and T1's origin (B, 3)."""
    system = neck.system
    kin = system.kinematics(traj.q, traj.times, traj.p)
    owners = np.array([system.body_index(b) for b in ("T1",) + neck.bodies], dtype=int)
    x = kin.positions(owners, neck.pivots)
    v = np.einsum("xpkc,xk->xpc", kin.twists(owners, x), kin.zeta_rate)
    base = kin.positions(owners[:1], np.zeros((1, 3)))[:, 0]
    return x, v, base


@dataclass
class HeadMotion:
    """The head's centre of mass: displacement relative to T1 (m) and absolute velocity (m/s), (B, 3) each."""

    times: np.ndarray
    displacement: np.ndarray
    velocity: np.ndarray
    base_velocity: np.ndarray   # T1's (anterior) velocity (B,)

    @property
    def max_displacement(self) -> float:
        """Largest |displacement| (m)."""
        return float(np.max(np.linalg.norm(self.displacement, axis=1)))


def head_motion(neck: Neck, traj: Trajectory) -> HeadMotion:
    x, v, base = _points_along(neck, traj)
    relative = x[:, -1] - base
    return HeadMotion(traj.times, relative - relative[0], v[:, -1], pulse(traj.times)[1])


def snapshot_times(t_end: float) -> np.ndarray:
    """The times of the chain's panels in spine_shape.png: every :data:`SNAPSHOT_DT`, or every 2nd, 3rd, … of
    those on a run so long that they would be more than :data:`MAX_SNAPSHOTS`.

    >>> len(snapshot_times(T_END)), len(snapshot_times(5.0)), round(float(snapshot_times(5.0)[1]), 6)
    (13, 12, 0.425)
    """
    every = SNAPSHOT_DT * max(1, math.ceil(t_end / SNAPSHOT_DT / (MAX_SNAPSHOTS - 1) - 1e-9))
    return np.arange(0.0, t_end + 1e-9, every)


def spine_shape(neck: Neck, traj: Trajectory) -> np.ndarray:
    """Joint centres and the head's centre of mass relative to T1's origin (B, 9, 3)."""
    x, _, base = _points_along(neck, traj)
    return x - base[:, None]


def ligament_forces(neck: Neck, traj: Trajectory) -> dict[str, np.ndarray]:
    """Tension F = k(ξ − ξ₀) + c ξ̇ (N, > 0 stretched) of every ligament along the motion."""
    ctx = neck.system.context(traj.q, traj.p, traj.times)
    return {e.name: e.tension(ctx) for e in neck.anterior + neck.posterior}


@dataclass
class Phases:
    """When the spine is S-shaped (upper joints flexed, lower extended) and C-shaped (all extended)."""

    times: np.ndarray
    s_shape: np.ndarray    # bool per time
    c_shape: np.ndarray

    @property
    def s_interval(self) -> tuple[float, float]:
        t = self.times[self.s_shape]
        return (float(t[0]), float(t[-1])) if len(t) else (math.nan, math.nan)

    @property
    def c_start(self) -> float:
        return float(self.times[self.c_shape][0]) if self.c_shape.any() else math.nan

    @property
    def s_then_c(self) -> bool:
        """An S-shape phase first, ended when the C-shape phase begins."""
        s0, s1 = self.s_interval
        return bool(s0 < self.c_start and s1 <= self.c_start)


def spine_phases(neck: Neck, traj: Trajectory, *, tolerance_deg: float = 0.05) -> Phases:
    """S- and C-shape phases from the joint angles (relative to the initial posture) of :data:`UPPER` and :data:`LOWER`."""
    tol = math.radians(tolerance_deg)
    upper = [neck.bodies.index(b) for b in UPPER]
    lower = [neck.bodies.index(b) for b in LOWER]
    theta = traj.q - traj.q[0]
    s = (theta[:, upper].max(axis=1) > tol) & (theta[:, lower].max(axis=1) < -tol)
    c = theta.max(axis=1) < -tol
    return Phases(traj.times, s, c)


def trajectory_error(traj: Trajectory, reference) -> float:
    """max_k ‖q_k − q(t_k)‖∞ (rad) against the reference."""
    return float(np.max(np.abs(traj.q - reference.q(traj.times))))


# --------------------------------------------------------------------------- the study
@dataclass
class MethodRow:
    name: str
    setting: str = ""
    error: float = math.nan           # rad
    head_error: float = math.nan      # m, head centre of mass
    energy_work: float = math.nan     # e_R with the method's rule
    wall: float = math.nan            # s
    cost: str = ""


@dataclass
class WhiplashResult:
    neck: Neck
    euler: Trajectory
    head: HeadMotion
    ligaments: dict[str, np.ndarray]
    phases: Phases
    energy_work: float
    work_parts: dict[str, float]
    residual_study: list[tuple[float, float, float]]   # (dt, e_R, max|q − q_ref|) of backward Euler, coarse first
    methods: list[MethodRow]
    reference_wall: float
    wall_time: float = math.nan
    shape: np.ndarray = field(default=None, repr=False)

    def method(self, name: str) -> MethodRow | None:
        return next((m for m in self.methods if m.name == name), None)

    def _rate(self, column: int) -> float:
        coarse, fine = self.residual_study[-2:]
        return float(math.log(coarse[column] / fine[column]) / math.log(coarse[0] / fine[0]))

    @property
    def residual_rate(self) -> float:
        """Observed order of e_R on the two finest steps."""
        return self._rate(1)

    @property
    def error_rate(self) -> float:
        """Observed order of backward Euler's error against the reference on the two finest steps."""
        return self._rate(2)

    @property
    def summary(self) -> str:
        bdf2 = self.method("bdf2")
        err = bdf2.error if bdf2 is not None else math.nan
        return (f"summary: max_head_disp_m={self.head.max_displacement:.4f} energy_work_residual={self.energy_work:.2e} "
                f"bdf2_vs_radau_err={err:.2e} wall_s={self.wall_time:.1f}")

    def tables(self) -> str:
        h, ph = self.head, self.phases
        k = int(np.argmax(np.linalg.norm(h.displacement, axis=1)))
        s0, s1 = ph.s_interval
        theta = np.degrees(self.euler.q - self.euler.q[0])
        total = theta.sum(axis=1)
        lines = [f"head–neck chain on T1, 8.5 g pulse, backward Euler Δt = {self.euler.times[1]:.3g} s, "
                 f"T = {self.euler.times[-1]:g} s",
                 f"  head c.o.m. relative to T1: largest displacement {h.max_displacement * 1e3:.1f} mm at "
                 f"t = {h.times[k] * 1e3:.0f} ms (x {h.displacement[k, 0] * 1e3:+.1f} mm, z {h.displacement[k, 2] * 1e3:+.1f} mm)",
                 f"  head–T1 extension (sum of the joint angles): largest {-total.min():.1f}° at "
                 f"t = {self.euler.times[int(np.argmin(total))] * 1e3:.0f} ms",
                 f"  spine: S-shape {s0 * 1e3:.1f} … {s1 * 1e3:.1f} ms, C-shape from {ph.c_start * 1e3:.1f} ms "
                 f"({'S then C' if ph.s_then_c else 'NOT S then C'})",
                 "  ligament forces (N, + tension):      min      max"]
        for name, F in self.ligaments.items():
            lines.append(f"    {name:30s} {F.min():8.1f} {F.max():8.1f}")
        lines.append("")
        lines.append("kinetic-energy–work balance with the transport (moving-T1) terms, backward Euler, rule 'right':")
        lines.append("  work up to T (J): " + ", ".join(f"{k} {v:+.3f}" for k, v in self.work_parts.items()))
        lines.append("    Δt (s)      e_R = max|T₂ − T₂(0) − W| / max T₂    max|q − q_ref| (rad)")
        for dt, e, err in self.residual_study:
            lines.append(f"  {dt:9.2e}   {e:10.3e}                            {err:10.3e}")
        if len(self.residual_study) > 1:
            lines.append(f"  observed order (finest pair)     {self.residual_rate:.2f}                       "
                         f"       {self.error_rate:.2f}")
        lines.append("")
        lines.append(f"methods on the same equations; error against the Radau reference ({self.reference_wall:.1f} s):")
        lines.append(f"  {'method':8s} {'setting':18s} {'max|q−q_ref| rad':>17s} {'head err m':>11s} {'e_R':>10s} "
                     f"{'wall s':>8s}  cost")
        for m in self.methods:
            lines.append(f"  {m.name:8s} {m.setting:18s} {m.error:17.3e} {m.head_error:11.3e} {m.energy_work:10.3e} "
                         f"{m.wall:8.2f}  {m.cost}")
        return "\n".join(lines)


def run(*, t_end: float | None = None, dt: float | None = None, small: bool = False, methods: Sequence[str] = tuple(METHODS),
        residual_levels: int = 3, progress: bool = False, rows: list[MethodRow] | None = None) -> WhiplashResult:
    """Simulate the whiplash and compare the methods (see the module text).

    Parameters
    ----------
    t_end, dt
        Simulated time and the fixed step of the step-based methods (s);
        default 0.3 s and 1e-4 s.
    small
        Quick version: by default T = 0.09 s (through the S → C transition),
        Δt = 4e-4 s, and a reference to rtol 1e-7.
    methods
        Names from :data:`METHODS` to compare.
    residual_levels
        Backward-Euler runs at Δt, 2Δt, 4Δt, … for the order of the energy–work residual.
    progress
        One line per run on stderr.
    rows
        A list that receives each method's row as it is computed (a new one if None), so that a caller
        keeps them when Ctrl-C stops the run.
    """
    start = time.perf_counter()
    t_end = (SMALL_T_END if small else T_END) if t_end is None else t_end
    dt = (SMALL_DT if small else DT) if dt is None else dt
    if not (t_end > 0 and dt > 0 and dt < t_end):
        raise ValueError(f"need 0 < dt < t_end, got dt = {dt!r}, t_end = {t_end!r}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; pick from {', '.join(METHODS)}")
    if isinstance(residual_levels, bool) or not isinstance(residual_levels, int) or residual_levels < 1:
        raise ValueError(f"residual_levels must be an integer ≥ 1, got {residual_levels!r}")
    say = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else (lambda msg: None)
    neck = build_neck()
    system = neck.system
    q0 = p0 = np.zeros(neck.system.n)
    reference, reference_wall = reference_solution(system, q0, p0, t_end,
                                                   tolerances=SMALL_REFERENCE_TOLERANCES if small else REFERENCE_TOLERANCES)
    say(f"reference solution: {reference_wall:.1f} s")
    rows = [] if rows is None else rows
    euler, head_ref = None, None
    for name in methods:
        traj = METHODS[name](system, q0, p0, t_end, dt)
        if head_ref is None:
            ref_traj = Trajectory("reference", "", traj.times, reference.q(traj.times), reference.p(traj.times), 0.0,
                                  "trapezoid")
            head_ref = head_motion(neck, ref_traj).displacement
        head = head_motion(neck, traj).displacement if len(traj.times) == len(head_ref) else None
        rows.append(MethodRow(name, traj.setting, trajectory_error(traj, reference),
                              float(np.max(np.linalg.norm(head - head_ref, axis=1))) if head is not None else math.nan,
                              work_balance(system, traj.times, traj.q, traj.p, rule=traj.work_rule).relative_error,
                              traj.wall, traj.cost))
        say(f"{name}: {traj.wall:.1f} s, error {rows[-1].error:.2e} rad")
        if name == "euler":
            euler = traj
    if euler is None:
        euler = METHODS["euler"](system, q0, p0, t_end, dt)
    balance = work_balance(system, euler.times, euler.q, euler.p, rule="right")
    study = [(dt, balance.relative_error, trajectory_error(euler, reference))]
    for level in range(1, residual_levels):
        h = dt * 2**level
        coarse = METHODS["euler"](system, q0, p0, t_end, h)
        study.append((h, work_balance(system, coarse.times, coarse.q, coarse.p, rule="right").relative_error,
                      trajectory_error(coarse, reference)))
        say(f"euler Δt = {h:g}: e_R {study[-1][1]:.2e}")
    study.sort(key=lambda x: -x[0])
    parts = {"gravity": 0.0, "joints": 0.0, "ligaments": 0.0, "transport": 0.0}
    for key, w in balance.work.items():
        group = "joints" if key.startswith("joint") else "ligaments" if key.startswith(("ALL", "ISL")) else key
        parts[group] = parts.get(group, 0.0) + float(w[-1])
    parts["T2 change"] = float(balance.relative_kinetic_energy[-1] - balance.relative_kinetic_energy[0])
    result = WhiplashResult(neck, euler, head_motion(neck, euler), ligament_forces(neck, euler),
                            spine_phases(neck, euler), balance.relative_error, parts, study, rows, reference_wall,
                            shape=spine_shape(neck, euler))
    result.wall_time = time.perf_counter() - start
    return result


# --------------------------------------------------------------------------- files
def write_csv(result: WhiplashResult, folder: Path) -> list[Path]:
    """head.csv, ligaments.csv, angles.csv of the backward-Euler run."""
    folder.mkdir(parents=True, exist_ok=True)
    t, h = result.euler.times, result.head
    tables = {
        "head.csv": (["t_s", "T1_acceleration_m_s2", "dx_m", "dz_m", "vx_m_s", "vz_m_s", "T1_vx_m_s"],
                     np.column_stack([t, pulse(t)[2], h.displacement[:, 0], h.displacement[:, 2], h.velocity[:, 0],
                                      h.velocity[:, 2], h.base_velocity])),
        "ligaments.csv": (["t_s"] + [f"{k}_N" for k in result.ligaments],
                          np.column_stack([t] + list(result.ligaments.values()))),
        "angles.csv": (["t_s"] + [f"{j}_deg" for j in result.neck.joints],
                       np.column_stack([t, np.degrees(result.euler.q - result.euler.q[0])])),
    }
    paths = []
    for name, (header, data) in tables.items():
        path = folder / name
        with path.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(data.tolist())
        paths.append(path)
    return paths


def plot(result: WhiplashResult, folder: Path) -> list[Path]:
    """head_motion.png, ligament_forces.png, spine_shape.png (needs matplotlib)."""
    from matplotlib.figure import Figure

    folder.mkdir(parents=True, exist_ok=True)
    t, h, ph = result.euler.times, result.head, result.phases
    t_ms = t * 1e3
    figures = {name: Figure(figsize=size, layout="constrained") for name, size in
               (("head_motion.png", (11, 4)), ("ligament_forces.png", (11, 4)), ("spine_shape.png", (12, 7)))}

    axes = figures["head_motion.png"].subplots(1, 2)
    curves = ((h.displacement[:, 0] * 1e3, "x (anterior)"), (h.displacement[:, 2] * 1e3, "z (superior)")), \
             ((h.velocity[:, 0], "head vx"), (h.velocity[:, 2], "head vz"), (h.base_velocity, "T1 vx"))
    for ax, lines, label in zip(axes, curves, ("head c.o.m. relative to T1 (mm)", "velocity (m/s)")):
        twin = ax.twinx()
        twin.fill_between(t_ms, pulse(t)[2] / GRAVITY, color="0.9")
        twin.set_ylabel("T1 acceleration (g)", color="0.5")
        ax.set_zorder(twin.get_zorder() + 1)
        ax.patch.set_visible(False)
        for y, name in lines:
            ax.plot(t_ms, y, "k--" if name == "T1 vx" else "-", label=name)
        ax.set(xlabel="t (ms)", ylabel=label)
        ax.legend(fontsize=8)

    axes = figures["ligament_forces.png"].subplots(1, 2, sharey=True)
    for ax, group, title in zip(axes, ("ALL", "ISL"), ("anterior longitudinal ligaments", "interspinous ligaments")):
        for name, F in result.ligaments.items():
            if name.startswith(group):
                ax.plot(t_ms, F, label=name.split(" ", 1)[1])
        ax.axhline(0.0, color="k", lw=0.5)
        ax.set(title=title, xlabel="t (ms)")
        ax.legend(fontsize=7, ncol=2)
    axes[0].set_ylabel("force (N), + tension")

    top, bottom = figures["spine_shape.png"].subfigures(2, 1, height_ratios=[1.2, 1])
    snaps = snapshot_times(t[-1])
    axes = np.atleast_1d(top.subplots(1, len(snaps), sharex=True, sharey=True))
    for ax, ts in zip(axes, snaps):
        k = int(np.argmin(np.abs(t - ts)))
        x = result.shape[k] * 1e3
        ax.plot(result.shape[0, :, 0] * 1e3, result.shape[0, :, 2] * 1e3, color="0.8", lw=1)
        ax.plot(x[:-1, 0], x[:-1, 2], "o-", ms=3, color="C0")
        ax.plot(x[-2:, 0], x[-2:, 2], "-", x[-1:, 0], x[-1:, 2], "o", ms=12, mfc="none", color="C1")
        tag = " S" if ph.s_shape[k] else " C" if ph.c_shape[k] else ""
        ax.set_title(f"{t[k] * 1e3:.0f} ms{tag}", fontsize=9)
        ax.set_aspect("equal")
        ax.set_xlabel("x (mm)", fontsize=8)
    axes[0].set_ylabel("z relative to T1 (mm)")
    ax = bottom.subplots()
    for j, name in enumerate(result.neck.joints):
        ax.plot(t_ms, np.degrees(result.euler.q[:, j] - result.euler.q[0, j]), label=name)
    ax.axhline(0.0, color="k", lw=0.5)
    for mask, color, label in ((ph.s_shape, "C2", "S-shape"), (ph.c_shape, "C3", "C-shape")):
        ax.fill_between(t_ms, 0, 1, where=mask, color=color, alpha=0.12, transform=ax.get_xaxis_transform(), label=label)
    ax.set(xlabel="t (ms)", ylabel="joint angle (deg), + flexion")
    ax.legend(fontsize=7, ncol=5)

    paths = []
    for name, fig in figures.items():
        paths.append(folder / name)
        fig.savefig(paths[-1], dpi=110)
    return paths


# --------------------------------------------------------------------------- command line
def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--small", action="store_true",
                        help=f"a short run for a check: T = {SMALL_T_END} s, Δt = {SMALL_DT} s (a few seconds of wall time)")
    parser.add_argument("--level", type=positive_int, default=1,
                        help=f"Δt = 1e-4 s / 2^(level − 1) (with --small {SMALL_DT:g} s / 2^(level − 1)), level 1 … "
                             f"{MAX_LEVEL} (default 1)")
    parser.add_argument("--t-end", type=positive_float, default=None, help=f"simulated time in s (default {T_END})")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS),
                        help="integrators to compare (default all)")
    parser.add_argument("--out", type=folder_path, default=Path("whiplash_output"),
                        help="folder for the PNG and CSV files (default whiplash_output)")
    parser.add_argument("--no-plots", action="store_true", help="write the CSV files only")
    parser.add_argument("--progress", action="store_true", help="one line per run on stderr")
    args = parser.parse_args(argv)
    if args.level > MAX_LEVEL:
        parser.error(f"--level must be 1 … {MAX_LEVEL} (level {MAX_LEVEL}: Δt = {DT / 2 ** (MAX_LEVEL - 1):g} s, "
                     f"{round(T_END / DT) * 2 ** (MAX_LEVEL - 1):,} steps for each integrator), got {args.level}")
    dt = (SMALL_DT if args.small else DT) / 2 ** (args.level - 1)
    if args.t_end is not None and args.t_end <= dt:
        parser.error(f"argument --t-end: must be longer than the step Δt = {dt:g} s of --level {args.level}"
                     + (" with --small" if args.small else "") + f", got {args.t_end:g}")
    output_folder(parser, "--out", args.out)
    rows: list[MethodRow] = []
    tic = time.perf_counter()
    try:
        result = run(t_end=args.t_end, dt=dt, small=args.small, methods=args.methods, progress=args.progress,
                     rows=rows)
    except CTRL_C as err:
        handle_ctrl_c(err)
        wall = time.perf_counter() - tic
        print(f"interrupted (Ctrl-C) after {wall:.1f} s; the methods compared so far (error against the Radau "
              "reference):" if rows else f"interrupted (Ctrl-C) after {wall:.1f} s, before any method was compared")
        for m in rows:
            print(f"  {m.name:8s} {m.setting:18s} max|q−q_ref| {m.error:.3e} rad, head {m.head_error:.3e} m, "
                  f"e_R {m.energy_work:.3e}, {m.wall:.2f} s")
        bdf2 = next((m.error for m in rows if m.name == "bdf2"), math.nan)
        print(f"summary: max_head_disp_m=nan energy_work_residual=nan bdf2_vs_radau_err={bdf2:.2e} wall_s={wall:.1f} "
              "interrupted=1")
        return 130
    print(result.tables())
    files = write_csv(result, args.out)
    if not args.no_plots:
        files += plot(result, args.out)
    print(f"files: {', '.join(str(f) for f in files)}")
    print(result.summary)
    return 0


if __name__ == "__main__":
    run_script(main)
