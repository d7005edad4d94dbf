r"""The elbow with a biceps of many fibers: 2 heads × 18 fibers at physiological scale.
====================================================================================

A biceps modelled as a bundle of fibers (by default 36: two heads of 18, each fiber standing for
about 20 motor units, as in the Cosserat-rod model of the elbow), between the fixed upper arm and
the forearm of the upper-limb demo, with fiber–fiber contact among all neighbours and fiber–bone
contact with the humerus.  Three tests:

* **isometric**: maximal activation, the elbow held at 30°, 60°, 90°, 120° and 150° (static
  equilibria, reached by continuation in the angle from the activated muscle at 0°): the joint moment
  and the muscle force against the muscle's length, and the same curve of a Hill muscle
  (:mod:`skfiber.hill`, Millard 2012) on the same path;
* **isokinetic**: maximal activation while the elbow is turned at constant speed (60°/s by default),
  force against angle (dynamics: inertia and the fibers' viscosity);
* **swelling**: the muscle's cross-sectional area at mid-belly at 0° and 90°, from the fibers' current
  radii r = r0/√λ and their packing (the area enclosed by the fibers' sections, and their sum).

Coordinates: x anterior, y lateral (the elbow axis), z up, metres.  The elbow flexes about the line
through (0, 0, −0.351) along −y (flexion lifts the hand forward), as in the upper-limb demo.

**Model** (every number ours, chosen for the reasons given):

* **Bones**: the upper arm and forearm of the upper-limb demo (fixed upper arm; the forearm's rotation
  prescribed), and the humerus shaft as a contact cylinder fixed to the upper arm (r = 11 mm, from 5 cm
  to 30 cm below the shoulder, 12 mm behind the upper arm's axis: the elbow's axis lies in front of the
  shaft).
* **Fibers**: each head a bundle (:func:`skfiber.bundle.bundle`) from a hexagonal patch on the upper arm (the
  heads side by side, moved apart until their fibers clear each other: 27 mm from the midline at the origin
  and 11 mm at the insertion row with 36 fibers, :func:`head_offsets`) that swells to its belly half-way and
  ends in a row along the elbow axis on the forearm, 5 cm below the elbow and 1.5 cm in front of it (moment
  arm 1.8 cm at full extension, 5 cm at 90°, below) (a tendon's flat insertion; a row along the axis turns
  with the forearm without lining the fibers up along the muscle).  r0 = 2 mm in the belly, 0.3 mm in the
  tendons; γM = 1 over the belly, 0 in the tendons (smooth steps over 12 % of the length at 10 % and 90 %), so
  the sections of 36 bellies add up to about 4.5 cm² (the area they enclose, gaps between them included, is
  about 9 cm²).
* **Law** (:func:`skfiber.paper_law`): Smax = 1 MPa (36 fibers: about 410 N at full extension), λopt =
  1.18, ΔW = 0.5, ν = 2, so that the fiber's force N = π r0² Smax f(λ)/λ peaks at λ ≈ 1, the length at
  full extension, and falls as the muscle shortens (on the rising branch of N(λ) at every angle: no
  strain softening; the demo checks every step of both runs, :class:`skfiber.softening.SofteningLog`,
  prints the range of stretches it saw and warns if any material left that branch); μM = 2·10⁴ Pa,
  μT = 10⁹ Pa (tendon strain about 2 % at full force), η = 10³ Pa·s, σ0 = 100 Pa, ρ = 1060 kg/m³.
* **Contact**: rational penalty law κ = 10⁴ N/m, γ = 3 between fibers and with the humerus (γ = 4).
  Between fibers the gap is the smallest (``gap="smallest"``), continuous in the state: the paper's
  closest-point gap jumps where the closest point of two nearly parallel, tapered fibers jumps, and no
  time step resolves a jump.
* **Tissue drag** c ∫ ẋ · ξ dS, c = 10 N·s/m² (the custom term of ``demos/custom_term.py``; not in the
  paper): the connective tissue and fluid around the fibers.  A fiber pressed on a single neighbour is
  unstable and slides into the groove between two within milliseconds when the muscle activates, swells
  or turns; the drag damps that slide (relaxation time 1.3 ms).  The isokinetic test prints its largest
  share of the muscle force.
* **Time steps**: backward Euler, Δt = 0.01 s; Newton gives up on a step after 10 iterations or 3 without a
  10 % drop, and the step is split in up to 2⁸ substeps, which follow a slide.  Longer steps on coarse
  meshes stall (2026-12-01, one run each): 2, 4 and 9 fibers of 2, 4 and 4 elements stopped in the isometric
  test (t = 0.5–1.9 s) with steps of 0.05 or 0.1 s, and ran through with 0.01 and 0.025 s; the default
  36 fibers of 16 elements ran through at 0.05 s in 50 s with the same peak force (410.8 N) and swelling
  (32.9 %) as at 0.02 s.  The state such a step reaches is one where the contact safeguard (paper eq. 71)
  lets each Newton iteration take only 1–2 % of its step (2 fibers at 0.1 s: Newton's step would carry a
  contact point past the penalty law's limit 1 + γg = 0), so the residual falls 1–2 % an iteration however
  short the substeps.  The demo then stops, says so, and prints the summary of what it reached with
  ``failed=1``.
* **Elements per fiber**: 16 by default (``--elements``).  The isometric forces of the 36-fiber biceps with
  8, 12, 16, 24 and 32 elements (one run each, 2026-11-30): 282.2, 310.4, 306.8, 309.8 and 309.7 N at 90°,
  212.9, 250.6, 245.4, 248.4 and 248.2 N at 120°; 16 elements lie within 1.7 % of 32 at every angle, 8
  elements up to 14 % below (a belly shortened to λ ≈ 0.4 on a few cubic elements).  The swelling of the
  enclosed area at 90° was 40.0, 31.1, 32.9, 29.3 and 30.2 %: from 12 elements on it scatters within 29–33 %,
  since which groove each fiber settles in changes with the mesh; the fibers' own area, 53.3, 46.3, 47.4,
  46.1 and 45.8 %, does not depend on the packing.
* **Moment arm**: the muscle runs straight from its belly to the insertion row, with no bone to wrap around
  at the elbow, so its line nears the elbow's axis in deep flexion: the moment arm is 1.8 cm at full
  extension, 5 cm at 90° and 0.8 cm at 150°, and of the angles held the moment is largest at 60°.

The causes of these choices, measured, are in ``docs/theory.md`` (the elbow with a biceps of many fibers).

Run ``python demos/elbow_bundle.py --help``.  The output ends with
``summary: fibers=… csa_increase_pct_90=… peak_isometric_force_N=… wall_s=… softening=0|1``.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import skfiber as sf
from skfiber.cli import ArgumentParser, folder_path, output_folder, positive_float, positive_int, run_script
from skfiber.bundle import bundle, bundle_curves, smallest_gap, smallest_spacing
from skfiber.contact import CylinderContact, FiberContact, PenaltyLaw
from skfiber.core.interrupt import CTRL_C, handle_ctrl_c
from skfiber.postprocess import fiber_fields
from skfiber.rigid import Body, Fixed, Prescribed, Revolute, RigidSystem
from skfiber.rigid.joints import rotation_about
from skfiber.simulation_result import compile_notice
from skfiber.softening import SofteningLog

if __package__:   # imported as demos.elbow_bundle / skfiber.demos.elbow_bundle (the skfiber command)
    from .custom_term import drag_term
else:             # run as a script: demos/ is on sys.path
    from custom_term import drag_term

ELBOW = np.array([0.0, 0.0, -0.351])
FOREARM_MASS = 1.50
#: flexion turns the forearm about −y (the hand moves forward, +x)
AXIS = np.array([0.0, -1.0, 0.0])
#: the centres of the heads' origins (y = ± the offset) and of the insertion row on the forearm at 0°
ORIGIN = np.array([0.035, 0.0, -0.03])
INSERTION = np.array([0.015, 0.0, -0.401])
#: the patches: origin patch, belly and insertion row pitch as multiples of the spacing of the packing
ORIGIN_SCALE, BELLY_SCALE, ROW_SCALE = 0.4, 1.0, 0.15
CLEARANCE = 0.1
R_BELLY, R_TENDON = 0.002, 0.0003
LAW = dict(sigma0=100.0, mu_muscle=2e4, mu_tendon=1e9, eta_muscle=1e3, eta_tendon=1e3, s_max=1e6,
           lam_opt=1.18, delta_w=0.5, nu=2.0)
DENSITY = 1060.0
FIBER_CONTACT = dict(stiffness=1e4, gamma=3.0)
#: tissue drag c (N·s/m²): a force −c ẋ per reference length on every fiber (see the module notes)
TISSUE_DRAG = 10.0
BONE_CONTACT = dict(stiffness=1e4, gamma=4.0)
ISOMETRIC_ANGLES = (30.0, 60.0, 90.0, 120.0, 150.0)
#: the isokinetic test: from START_DEG at SPEED_DEG_S for T_ISOKINETIC seconds
START_DEG, SPEED_DEG_S, T_ISOKINETIC = 30.0, 60.0, 2.0
#: the words of the demo's output (its --help)
TABLE_WORDS = f"""\
output:
  isometric table   per elbow angle held (0° first, after the activation): the fibers' mean length (origin to
                    insertion), the muscle force (the size of the fibers' summed pull on the forearm), the
                    flexion moment about the elbow, the force of a Hill muscle on the same lengths (its peak
                    isometric force set to the bundle's largest), the mid-belly area the fibers' sections
                    enclose, and the sum of those sections
  swelling          the enclosed and the fibers' mid-belly area at 90° against 0°, in %
  isokinetic table  the force and the moment every 15° while the elbow turns at 60°/s
  strain softening  the range of stretches over every step of both runs, and whether material left the rising
                    branch of its law (a warning; softening=1 in the summary)
  summary: …        fibers, csa_increase_pct_90 (the enclosed area's swelling), peak_isometric_force_N, wall_s,
                    softening (0: every step's fibers on the rising branch of their law) (with
                    interrupted=1 after Ctrl-C, failed=1 when a step stalls, and nan for what was not
                    reached)
VTK series (--out): every fiber with its fields (colour the axial force by force_recovered, the force the
                    weak form determines; force, from the stretch at a point, oscillates on a coarse mesh),
                    the fiber-fiber contact force per length (fiber_contact_force), and the bones with
                    levers to the fibers' attachments; elbow_bundle_isometric.pvd on the run's clock,
                    elbow_bundle_isokinetic.pvd on the test's (0 s at {START_DEG:g}°, as the isokinetic lines print)"""
#: the isokinetic test's table: the force and moment every ISOKINETIC_TABLE_DEG degrees
ISOKINETIC_TABLE_DEG = 15.0
#: the isokinetic test's progress: a line every ISOKINETIC_REPORT_S seconds of the test
ISOKINETIC_REPORT_S = 0.5
#: fewer elements per fiber than this give a swelling the mesh decides (module notes, "Elements per fiber")
MIN_ELEMENTS_SWELLING = 12
#: the most fibers the demo takes: its heads' layout starts admissible up to here (checked at 400 and 401
#: fibers; at 500 and 600 the two heads' bundles overlap at the start)
MAX_FIBERS = 400
#: elements per fiber by default (the module notes, "Elements per fiber")
N_ELEMENTS = 16
#: Newton's relative tolerance (of the largest force term)
NEWTON_RTOL = 1e-6
#: Newton gives up on a step after MAX_ITERATIONS iterations, or when the residual has not fallen by 10 % in
#: STAGNATION iterations, and the step is split in 2, 4, …, 2^MAX_HALVINGS substeps: when the bundle
#: rearranges (a fiber pressed on a neighbour slides into the groove between two, in milliseconds), short
#: substeps follow it, and giving up early wastes fewer iterations on the long step (module notes)
MAX_HALVINGS, STAGNATION, MAX_ITERATIONS = 8, 3, 10
#: after a step that had to be split, the next starts with the substep that ended it (doubled after each step
#: with no split): while the bundle comes into contact whole steps keep failing, and trying each first cost
#: 25–41 % of the activation's time at 36–144 fibers (skfiber.simulate's keep_substeps; docs/performance.md)
KEEP_SUBSTEPS = True


def isokinetic_time_max() -> float:
    """The longest isokinetic test (s) that keeps the elbow within 160°, rounded down to 0.1 ms: the value the
    help prints is accepted."""
    return math.floor((160.0 - START_DEG) / SPEED_DEG_S * 1e4) / 1e4


def newton_options() -> sf.NewtonOptions:
    """Newton's settings of the runs (:data:`NEWTON_RTOL`, :data:`STAGNATION`, :data:`MAX_ITERATIONS`)."""
    return sf.NewtonOptions(rtol=NEWTON_RTOL, stagnation_window=STAGNATION, max_iterations=MAX_ITERATIONS)


def smooth_step(x):
    """A C¹ step from 0 (x ≤ 0) to 1 (x ≥ 1), 3x² − 2x³ between: a number for a number, else an array."""
    y = np.clip(x, 0.0, 1.0)
    y = y * y * (3.0 - 2.0 * y)
    return float(y) if np.ndim(y) == 0 else y


def muscle_fraction(theta):
    """γM(θ): 1 over the belly, 0 in the tendons, smooth steps over θ ∈ [0.1, 0.22] and [0.78, 0.9]."""
    theta = np.asarray(theta, dtype=float)
    return smooth_step((theta - 0.1) / 0.12) * smooth_step((0.9 - theta) / 0.12)


def radius(theta):
    """r0(θ) (m): 2 mm in the belly, 0.3 mm in the tendons, following γM."""
    return R_TENDON + (R_BELLY - R_TENDON) * muscle_fraction(theta)


def biceps_law(**changes) -> sf.SymbolicLaw:
    """The fibers' law (module notes); ``changes``: other values of :func:`skfiber.paper_law`'s parameters."""
    return sf.paper_law(**{**LAW, **changes})


def head_sizes(n_fibers: int) -> tuple[int, int]:
    """Fibers of the long and the short head: half each (the long head one more for odd counts)."""
    if isinstance(n_fibers, bool) or not isinstance(n_fibers, (int, np.integer)) or n_fibers < 2:
        raise ValueError(f"n_fibers must be an integer ≥ 2 (two heads), got {n_fibers!r}")
    return (n_fibers + 1) // 2, n_fibers // 2


def head_points(n: int) -> np.ndarray:
    """The start, middle and end points (n, 3, 3) of a head of ``n`` fibers centred on y = 0."""
    return bundle_curves(ORIGIN, INSERTION, n, radius=radius, clearance=CLEARANCE, origin_scale=ORIGIN_SCALE,
                         belly_scale=BELLY_SCALE, insertion_scale=ROW_SCALE, up=(0, 1, 0), insertion_layout="row")


def head_offsets(n_fibers: int) -> tuple[float, float]:
    """The heads' lateral offsets (m) of the origin and of the insertion row: from the rows side by side and
    the bellies side by side, both widened together until the measured smallest gap between the heads'
    fibers is ``CLEARANCE`` (to 10⁻⁴ of the offsets)."""
    heads = [head_points(n) for n in head_sizes(n_fibers)]
    reach_belly = max(float(np.max(np.abs(p[:, 1, 1]))) for p in heads)
    reach_row = max(float(np.max(np.abs(p[:, 2, 1]))) for p in heads)
    row = reach_row + R_TENDON * (1.0 + CLEARANCE)
    base = np.array([2.0 * (reach_belly + R_BELLY * (1.0 + CLEARANCE)) - row, row])
    theta = np.linspace(0.0, 1.0, 201)
    r0 = radius(theta)
    n_long = len(heads[0])
    pairs = np.array([(i, n_long + j) for i in range(n_long) for j in range(len(heads[1]))])

    def gap(scale):
        origin_y, row_y = scale * base
        shift = np.array([[0, origin_y, 0], [0, 0.5 * (origin_y + row_y), 0], [0, row_y, 0]])
        points = np.concatenate([heads[0] + shift, heads[1] - shift])
        return smallest_gap(points[:, 0], points[:, 2], r0, pairs, middles=points[:, 1])

    scale = smallest_spacing(lambda scale: gap(scale) - CLEARANCE, 1.0, rtol=1e-4)
    return tuple(float(v) for v in scale * base)


@dataclass
class Motion:
    """The prescribed elbow angle (rad) and the activation, functions of t, changed between the tests."""

    angle: Callable[[float], float] = lambda t: 0.0
    activation: Callable[[float], float] = lambda t: 0.0
    #: the tissue drag c of the model (N·s/m², set by :func:`build_model`)
    tissue_drag: float = 0.0


def build_model(n_fibers: int = 36, n_elements: int = N_ELEMENTS, *, motion: Motion | None = None,
                fiber_contact: bool = True, bone_contact: bool = True, gravity: bool = True,
                contact_gap: str = "smallest", free_elbow: bool = False,
                tissue_drag: float | None = None) -> tuple[sf.Model, Motion]:
    """The elbow with a biceps of ``n_fibers`` fibers (two heads) of ``n_elements`` elements each.

    Returns the model and its :class:`Motion`, whose ``angle`` and ``activation`` the tests set.
    ``free_elbow``: the forearm turns freely about the elbow (a revolute joint, its angle the rigid
    coordinate q) instead of following ``motion.angle``.

    Examples
    --------
    >>> model, motion = build_model(4, 4)
    >>> len(model.fibers), [f.name for f in model.fibers][:3]
    (4, ['long0', 'long1', 'short0'])
    """
    if isinstance(n_elements, bool) or not isinstance(n_elements, (int, np.integer)) or n_elements < 1:
        raise ValueError(f"n_elements must be an integer ≥ 1, got {n_elements!r}")
    motion = Motion() if motion is None else motion
    g = (0.0, 0.0, -9.81) if gravity else (0.0, 0.0, 0.0)
    system = RigidSystem(gravity=g)
    system.add_body(Body("upper_arm", start=(0, 0, 0), axis=(0, 0, -0.351), radius=0.035, mass=1.92), joint=Fixed())
    joint = Revolute(axis=tuple(AXIS), point=tuple(ELBOW)) if free_elbow else \
        Prescribed(rotation=lambda t: rotation_about(AXIS, motion.angle(t)), center=tuple(ELBOW))
    system.add_body(Body("forearm", start=tuple(ELBOW), axis=(0, 0, -0.287), radius=0.035, mass=FOREARM_MASS),
                    joint=joint)
    system.add_body(Body("humerus", start=(-0.012, 0.0, -0.05), axis=(0.0, 0.0, -0.25), radius=0.011, mass=0.0),
                    parent="upper_arm", joint=Fixed())
    law = biceps_law()
    origin_y, row_y = head_offsets(n_fibers)
    fibers = []
    for name, side, n in zip(("long", "short"), (1.0, -1.0), head_sizes(n_fibers)):
        fibers += bundle(ORIGIN + [0, side * origin_y, 0], INSERTION + [0, side * row_y, 0], n, radius=radius,
                         n_elements=n_elements, clearance=CLEARANCE, origin_scale=ORIGIN_SCALE,
                         belly_scale=BELLY_SCALE, insertion_scale=ROW_SCALE, up=(0, 1, 0), insertion_layout="row",
                         name=name, law=law, muscle_fraction=muscle_fraction, density=DENSITY,
                         activation=lambda t: motion.activation(t))
    model = sf.Model(fibers, rigid=system)
    for f in fibers:
        model.attach(f, "start", "upper_arm", name=f"{f.name}.origin")
        model.attach(f, "end", "forearm", name=f"{f.name}.insertion")
    if gravity:
        model.add_gravity(g)
    if bone_contact:
        model.add_contact(CylinderContact.on_body(system, "humerus", law=PenaltyLaw(**BONE_CONTACT), safeguard="trial"))
    if fiber_contact:
        model.add_contact(FiberContact(PenaltyLaw(**FIBER_CONTACT), gap=contact_gap))
    c = TISSUE_DRAG if tissue_drag is None else tissue_drag
    if isinstance(c, bool) or not isinstance(c, (int, float)) or not (math.isfinite(c) and c >= 0):
        raise ValueError(f"tissue_drag must be a finite number ≥ 0 (N·s/m²), got {tissue_drag!r}")
    motion.tissue_drag = float(c)
    if c > 0:
        model.add_term(drag_term(float(c)))
    return model, motion


def insertion_forces(model: sf.Model, state) -> tuple[np.ndarray, np.ndarray]:
    """The forces (n, 3) the fibers exert on the forearm at their insertions (N) and the insertion points."""
    forces = model.attachment_forces(state)
    x = model.discretization.reference_dofs + state.u
    names = [a for a in model.attachments if a.name.endswith(".insertion")]
    return np.array([forces[a.name] for a in names]), np.array([x[a.dofs] for a in names])


def flexion_moment(model: sf.Model, state) -> float:
    """The muscle's moment about the elbow axis (N·m, > 0 flexing): Σ ((x − elbow) × F) · axis."""
    F, x = insertion_forces(model, state)
    return float(np.sum(np.cross(x - ELBOW, F) @ AXIS))


def muscle_force(model: sf.Model, state) -> float:
    """|Σ F| over the insertions (N): the muscle's pull on the forearm."""
    return float(np.linalg.norm(insertion_forces(model, state)[0].sum(axis=0)))


def muscle_length(model: sf.Model, state) -> float:
    """The mean current length of the fibers (m): the musculotendon length."""
    lengths = []
    for k in range(len(model.fibers)):
        x = fiber_fields(model, state, k, points_per_element=8).position
        lengths.append(np.sum(np.linalg.norm(np.diff(x, axis=1), axis=0)))
    return float(np.mean(lengths))


def drag_force(model: sf.Model, state, tissue_drag: float) -> float:
    """|c ∫ ẋ dS| summed over the fibers (N): the pull of a tissue drag c = ``tissue_drag`` on the muscle."""
    d = model.discretization
    theta = np.linspace(0.0, 1.0, 65)
    total = np.zeros(3)
    for k, fiber in enumerate(model.fibers):
        speed = d.evaluate(state.v, k, theta)
        dS = np.linalg.norm(fiber.reference_tangent(theta), axis=0)
        f = speed * dS
        total += 0.5 * np.sum((f[:, 1:] + f[:, :-1]) * np.diff(theta), axis=1)  # the trapezoidal rule
    return float(tissue_drag * np.linalg.norm(total))


#: the unit and meaning of :func:`fiber_contact_fields`' array, written into the VTK files
FIBER_CONTACT_FORCE = ("N/m", "line force of the other fibers on this fiber, per current length")


def fiber_contact_fields(contact: FiberContact):
    """``extra_fields`` of :class:`skfiber.io.VTKSeries`: ``fiber_contact_force``, the line force of the
    other fibers on each fiber (N/m per current length, :meth:`skfiber.contact.FiberContact.point_forces`),
    interpolated linearly from the contact's quadrature points to the written points."""
    memo: dict = {}

    def fields(model, state, k, theta):
        key = (id(model), float(state.t), state.u.tobytes())
        if memo.get("key") != key:
            fiber, at, force = contact.point_forces(model, state.u)
            memo.update(key=key, force=force, fiber=fiber, theta=at)
        mine = memo["fiber"] == k
        at, force = memo["theta"][mine], memo["force"][mine]
        order = np.argsort(at)
        return {"fiber_contact_force": np.column_stack([np.interp(theta, at[order], force[order, i])
                                                        for i in range(3)])}

    return fields


def cross_section(model: sf.Model, state, *, theta_mid: float = 0.5) -> tuple[float, float]:
    """The muscle's cross-sectional area at mid-belly (m²): (enclosed, sum of the fibers').

    The plane goes through the mean of the fibers' points at θ = ``theta_mid``, normal to their mean
    tangent there.  Each fiber crosses it at a point with its current radius r = r0/√λ; "enclosed" is the
    area of the convex hull of those circles (the fibers and the space their packing leaves between them),
    "sum" is Σ π r².  (A fiber crossing the plane obliquely has an elliptic section, slightly larger; the
    fibers run within a few degrees of the normal.)
    """
    from scipy.spatial import ConvexHull

    theta = np.linspace(max(theta_mid - 0.25, 0.0), min(theta_mid + 0.25, 1.0), 201)
    fields = [fiber_fields(model, state, k, theta=theta) for k in range(len(model.fibers))]
    k_mid = int(np.argmin(np.abs(theta - theta_mid)))
    centre = np.mean([f.position[:, k_mid] for f in fields], axis=0)
    normal = np.mean([f.tangent[:, k_mid] for f in fields], axis=0)
    normal /= np.linalg.norm(normal)
    e1 = np.cross(normal, [1.0, 0.0, 0.0] if abs(normal[0]) < 0.9 else [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(normal, e1)
    circle = np.linspace(0.0, 2.0 * np.pi, 64, endpoint=False)
    outline, fiber_area = [], 0.0
    for k, f in enumerate(fields):
        side = (f.position.T - centre) @ normal
        crossings = np.flatnonzero(np.diff(np.sign(side)) != 0)
        if crossings.size == 0:
            raise ValueError(f"fiber {k} does not cross the mid-belly plane within θ = {theta[0]:g} … {theta[-1]:g}; "
                             "the muscle is too far from straight for this cross-section")
        j = int(crossings[np.argmin(np.abs(crossings - k_mid))])  # the crossing nearest θ_mid
        w = side[j] / (side[j] - side[j + 1])
        point = (1 - w) * f.position[:, j] + w * f.position[:, j + 1]
        r = (1 - w) * f.radius[j] + w * f.radius[j + 1]
        fiber_area += math.pi * r * r
        xy = np.array([(point - centre) @ e1, (point - centre) @ e2])
        outline.append(xy + r * np.column_stack([np.cos(circle), np.sin(circle)]))
    return float(ConvexHull(np.concatenate(outline)).volume), fiber_area


@dataclass
class Isometric:
    """One isometric equilibrium: elbow angle (°), flexion moment (N·m), muscle force (N), musculotendon
    length (m), mid-belly areas (m², enclosed and fibers'), Newton iterations to reach it, and the state."""

    angle_deg: float
    moment_Nm: float
    force_N: float
    length_m: float
    csa_m2: float
    csa_fibers_m2: float
    iterations: int
    state: object = field(repr=False, default=None)


#: the isometric schedule (s): activation rise, then per angle a turn and a hold (see :func:`isometric`)
T_ACTIVATE, T_SETTLE, T_TURN, T_HOLD = 0.2, 0.3, 0.25, 0.25


def isometric_schedule(angles_deg) -> tuple[Callable[[float], float], Callable[[float], float], list[float]]:
    """(angle(t) in rad, activation(t), the sample times): the activation rises to 1 over ``T_ACTIVATE`` at
    0° and the muscle settles until ``T_SETTLE`` (first sample, 0°); then per angle the elbow turns to it
    over ``T_TURN`` and is held for ``T_HOLD``, sampled at the end of the hold."""
    angles = [0.0] + [float(a) for a in angles_deg]
    ends = [T_SETTLE + k * (T_TURN + T_HOLD) for k in range(len(angles))]

    def angle(t):
        k = min(max(int((t - T_SETTLE) // (T_TURN + T_HOLD)), 0), len(angles) - 2)
        local = (t - T_SETTLE - k * (T_TURN + T_HOLD)) / T_TURN
        return math.radians(angles[k] + (angles[k + 1] - angles[k]) * smooth_step(local))

    return angle, (lambda t: smooth_step(t / T_ACTIVATE)), ends


def isometric(model: sf.Model, motion: Motion, angles_deg=ISOMETRIC_ANGLES, *, dt: float = 0.01,
              progress: bool = True, writer=None, out: list | None = None,
              softening: SofteningLog | None = None) -> list[Isometric]:
    """Isometric equilibria at maximal activation with the elbow held at ``angles_deg`` (and at 0°, first).

    One run (backward Euler, step ``dt``): the activation rises to 1 at 0°, then the elbow turns from
    angle to angle in increasing order (:func:`isometric_schedule`), held still at each long enough for the
    muscle to settle (the fibers' viscous stress relaxes in milliseconds; the step damps their transverse
    vibrations); each point is the state at the end of its hold.  The points are appended to ``out`` (a
    new list if None) as they are reached, so that a caller keeps them when Ctrl-C stops the run.
    ``softening`` checks every step's state.
    """
    angles = sorted(float(a) for a in angles_deg)
    if not angles or not all(0.0 < a <= 160.0 for a in angles) or len(set(angles)) < len(angles):
        raise ValueError(f"isometric angles must be distinct and lie in (0°, 160°], got {list(angles_deg)!r}")
    motion.angle, motion.activation, times = isometric_schedule(angles)
    if not all(abs(t / dt - round(t / dt)) < 1e-6 for t in times):
        raise ValueError(f"dt must divide the schedule's sample times {[round(t, 6) for t in times]} s (its "
                         f"settle {T_SETTLE:g} s and its turn + hold {T_TURN + T_HOLD:g} s), got {dt!r}")
    samples = {round(t / dt): (t, a) for t, a in zip(times, [0.0] + angles)}
    out = [] if out is None else out
    newton = [0]
    notice = compile_notice("  (the first steps of a machine's first run wait for numba to compile the kernels, a "
                            "minute or two; later runs load them)", enabled=progress)

    def record(state, info):
        notice.cancel()
        newton[0] += info.newton_iterations
        step = round(state.t / dt)
        if softening is not None:
            softening(state)
        if writer is not None:
            writer.write(state, step, time=round(state.t, 12))  # (the step's time without the sum's round-off)
        if step in samples:
            enclosed, fibers = cross_section(model, state)
            point = Isometric(samples[step][1], flexion_moment(model, state), muscle_force(model, state),
                              muscle_length(model, state), enclosed, fibers, newton[0], state)
            out.append(point)
            newton[0] = 0
            if progress:
                print(f"  isometric {point.angle_deg:5.1f}°: moment {point.moment_Nm:6.2f} N·m, force "
                      f"{point.force_N:7.1f} N, length {100 * point.length_m:5.2f} cm, mid-belly area "
                      f"{1e4 * enclosed:5.2f} cm²", flush=True)

    start = model.initial_state()
    if writer is not None:
        writer.write(start, 0)
    # Ctrl-C stops the tests; the VTK series keeps the steps done
    try:
        sf.simulate(model, t_end=times[-1], dt=dt, state=start, newton_options=newton_options(), callback=record,
                    progress=False, store_every=10**9, max_halvings=MAX_HALVINGS, keep_substeps=KEEP_SUBSTEPS,
                    on_interrupt="raise")
    finally:
        notice.cancel()
    return out


def isokinetic(model: sf.Model, motion: Motion, start, *, start_deg: float = START_DEG,
               speed_deg_s: float = SPEED_DEG_S, t_end: float = T_ISOKINETIC, dt: float = 0.01,
               progress: bool = True, writer=None, softening: SofteningLog | None = None) -> np.ndarray:
    """Maximal activation while the elbow turns at ``speed_deg_s`` from ``start_deg`` for ``t_end`` seconds,
    from ``start`` (an equilibrium held at ``start_deg``, e.g. from :func:`isometric`); ``softening`` checks
    every step's state.

    Returns
    -------
    numpy.ndarray
        (steps, 5): time from the start (s), angle (°), muscle force (N), flexion moment (N·m), and the
        tissue drag on the fibers (N, :func:`drag_force`).
    """
    t0 = float(start.t)
    motion.activation = lambda t: 1.0
    motion.angle = lambda t: math.radians(start_deg + speed_deg_s * max(t - t0, 0.0))
    rows = []

    def record(state, info):
        if softening is not None:
            softening(state)
        rows.append((state.t - t0, start_deg + speed_deg_s * (state.t - t0), muscle_force(model, state),
                     flexion_moment(model, state), drag_force(model, state, motion.tissue_drag)))
        if writer is not None:  # on the test's clock, as printed: 0 s at start_deg
            writer.write(state, info.step, time=round(state.t - t0, 12))
        if progress and info.step % report_every == 0:
            print(f"  isokinetic t = {rows[-1][0]:5.2f} s, {rows[-1][1]:6.1f}°: force {rows[-1][2]:7.1f} N", flush=True)

    report_every = max(1, round(ISOKINETIC_REPORT_S / dt))  # a progress line every ISOKINETIC_REPORT_S
    if writer is not None:
        writer.write(start, 0, time=0.0)
    # Ctrl-C stops the demo; the VTK series keeps the steps done
    sf.simulate(model, t_end=t0 + t_end, dt=dt, state=start, callback=record, progress=False, store_every=10**9,
                max_halvings=MAX_HALVINGS, keep_substeps=KEEP_SUBSTEPS, newton_options=newton_options(),
                on_interrupt="raise")
    return np.array(rows)


def hill_forces(points: list[Isometric]) -> np.ndarray:
    """The isometric force of a Hill muscle (:class:`skfiber.hill.Millard2012Muscle`, OpenSim's curves) on
    the same path: the musculotendon lengths of ``points``, maximal activation; its optimal fiber length
    is the fibers' belly at full extension (γM > 1/2: 68 % of the length), its tendon slack length the
    rest, its peak force the bundle's largest isometric force."""
    from skfiber.hill import Millard2012Muscle, MuscleParameters

    lengths = np.array([p.length_m for p in points])
    rest = lengths[0]
    belly = 0.68 * rest
    muscle = Millard2012Muscle(MuscleParameters(max_isometric_force=max(p.force_N for p in points),
                                                optimal_fiber_length=belly, tendon_slack_length=rest - belly))
    return np.asarray(muscle.static_equilibrium(activation=np.ones_like(lengths), musculotendon_length=lengths)
                      .tendon_force)


def main(argv: list[str] | None = None) -> dict | int:
    """Run the three tests and print the tables and the summary line (130 when Ctrl-C stopped them)."""
    parser = ArgumentParser(
        description="The elbow with a biceps of many fibers (isometric, isokinetic and swelling tests).  Prints "
                    "a table of the isometric points, the swelling at mid-belly, the isokinetic force against "
                    "angle, and ends with 'summary: fibers=… csa_increase_pct_90=… peak_isometric_force_N=… "
                    "wall_s=… softening=…'.  The first run on a machine compiles the model's kernels (a minute or "
                    "two).",
        epilog=TABLE_WORDS, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fibers", type=int, default=36,
                        help=f"fibers of the biceps, two heads (2 … {MAX_FIBERS}, default 36); each has a 2 mm belly "
                             "radius, so the muscle grows with their number: the 36 bellies' sections add up to "
                             "about 4.5 cm², and 410 N, a biceps")
    parser.add_argument("--elements", type=positive_int, default=N_ELEMENTS,
                        help=f"elements per fiber (default {N_ELEMENTS}; fewer give a coarser answer: see the "
                             "module notes, 'Elements per fiber')")
    parser.add_argument("--dt", type=positive_float, default=0.01,
                        help=f"time step (s, default 0.01); it must divide {T_SETTLE:g} s and {T_TURN + T_HOLD:g} s "
                             "(the isometric schedule's settle, and its turn + hold at each angle); steps of 0.05 s "
                             "and more stall on coarse meshes (module notes, 'Time steps')")
    parser.add_argument("--angles", type=float, nargs="+", default=list(ISOMETRIC_ANGLES),
                        help=f"elbow angles of the isometric test (°, in (0, 160]; default 30 60 90 120 150); they "
                             f"must include {START_DEG:g} (the isokinetic test starts there), and the swelling needs "
                             "90")
    parser.add_argument("--isokinetic-time", type=float, default=T_ISOKINETIC,
                        help=f"duration of the isokinetic test (s, default {T_ISOKINETIC:g}; at least one time step, "
                             f"at most {isokinetic_time_max():.4f} s: the elbow stays within 160°)")
    parser.add_argument("--out", type=folder_path, default=None,
                        help="folder of the VTK series elbow_bundle_isometric.pvd and elbow_bundle_isokinetic.pvd "
                             "(none by default)")
    args = parser.parse_args(argv)
    _, _, sample_times = isometric_schedule(args.angles)
    if args.dt > T_SETTLE or not all(abs(t / args.dt - round(t / args.dt)) < 1e-6 for t in sample_times):
        parser.error(f"--dt must divide {T_SETTLE:g} s and {T_TURN + T_HOLD:g} s (the isometric schedule's "
                     f"settle and turn + hold), e.g. 0.01 or 0.025; got {args.dt!r}")
    if not args.dt <= args.isokinetic_time <= isokinetic_time_max():
        parser.error(f"--isokinetic-time must be at least one time step (--dt {args.dt:g} s) and keep the elbow "
                     f"within 160° (at most {isokinetic_time_max():.4f} s), got {args.isokinetic_time!r}")
    if len(set(args.angles)) != len(args.angles):
        parser.error(f"--angles must be different angles, got {args.angles}")
    if not all(0.0 < a <= 160.0 for a in args.angles) or START_DEG not in args.angles:
        parser.error(f"--angles must lie in (0, 160] and include {START_DEG:g} (the isokinetic test starts "
                     f"there), got {args.angles}")
    if not 2 <= args.fibers <= MAX_FIBERS:
        parser.error(f"argument --fibers: must be 2 … {MAX_FIBERS} (one fiber a head at least; the heads' layout "
                     f"is checked up to {MAX_FIBERS}, and at 500 their bundles overlap at the start), "
                     f"got {args.fibers}")
    wall = time.perf_counter()
    notice = compile_notice("building the model (a machine's first run compiles the bundle's and the forms' "
                            "kernels first, about half a minute) …")
    try:
        model, motion = build_model(args.fibers, args.elements)
    except np.linalg.LinAlgError:  # (a ValueError: the computation's failure, not the options')
        raise
    except ValueError as error:
        parser.error(str(error))
    finally:
        notice.cancel()
    if args.out is not None:  # (once the options and the model are checked: a refused option leaves no folder)
        output_folder(parser, "--out", args.out)
    writers = [None, None]  # the isometric and the isokinetic series
    if args.out is not None:
        from skfiber.coupling import body_cylinders
        from skfiber.io import VTKSeries
        contact = next((c for c in model.contacts if isinstance(c, FiberContact)), None)
        writers = [VTKSeries(args.out, model, name=name, bodies=body_cylinders(model),
                             extra_fields=None if contact is None else fiber_contact_fields(contact),
                             extra_units={"fiber_contact_force": FIBER_CONTACT_FORCE})
                   for name in ("elbow_bundle_isometric", "elbow_bundle_isokinetic")]
    print(f"elbow with a biceps of {len(model.fibers)} fibers × {args.elements} elements ({model.n_dofs} d.o.f.)")
    points: list[Isometric] = []  # the isometric points as they are reached (what a Ctrl-C leaves)
    softening = SofteningLog(model)
    kept = "" if args.out is None else f"; the VTK series in {args.out} hold the steps computed so far"
    try:
        return _tests(args, model, motion, writers, wall, points, softening)
    except CTRL_C as err:
        handle_ctrl_c(err)
        wall = time.perf_counter() - wall
        print(f"interrupted (Ctrl-C) after {wall:.1f} s{kept}")
        print(softening.describe())
        softening.warn()
        print(_summary(model, points, wall, softening) + " interrupted=1")
        return 130
    except sf.ConvergenceError as err:  # (a step that stalls: say what to change, keep what was reached)
        wall = time.perf_counter() - wall
        print(f"{parser.prog}: the run stopped at t = {err.t:.4g} s, where Newton did not converge in "
              f"2^{MAX_HALVINGS} substeps{kept}.  Try a shorter --dt (0.01 s, the default) or more --elements: "
              "steps of 0.05–0.1 s stalled with 2–4 elements a fiber (module notes, 'Time steps').",
              file=sys.stderr)
        print(softening.describe())
        softening.warn()
        print(_summary(model, points, wall, softening) + " failed=1")
        return 1


def _summary(model: sf.Model, points: list[Isometric], wall: float, softening: SofteningLog) -> str:
    """The summary line of the isometric points reached (nan for what they do not hold) and of the steps
    checked for strain softening."""
    csa_increase, _, peak = isometric_figures(points)
    return (f"summary: fibers={len(model.fibers)} csa_increase_pct_90={csa_increase:.1f} "
            f"peak_isometric_force_N={peak:.1f} wall_s={wall:.1f} softening={int(softening.softening)}")


def isometric_figures(points: list[Isometric]) -> tuple[float, float, float]:
    """(the enclosed mid-belly area's increase from 0° to 90° in %, the fibers' area's increase in %, the
    largest isometric force in N) of the points reached; nan for what they do not hold."""
    at = {p.angle_deg: p for p in points}
    if 0.0 in at and 90.0 in at:
        csa_increase = 100.0 * (at[90.0].csa_m2 / at[0.0].csa_m2 - 1.0)
        fiber_increase = 100.0 * (at[90.0].csa_fibers_m2 / at[0.0].csa_fibers_m2 - 1.0)
    else:
        csa_increase = fiber_increase = math.nan
    return csa_increase, fiber_increase, max((p.force_N for p in points), default=math.nan)


def _tests(args, model: sf.Model, motion: Motion, writers, wall: float, points: list,
           softening: SofteningLog) -> dict:
    """:func:`main`'s three tests, their tables and the summary line (``wall``: the start's perf_counter);
    ``points`` receives the isometric points as they are reached, ``softening`` checks every step."""
    print("isometric test (maximal activation):")
    isometric(model, motion, args.angles, dt=args.dt, writer=writers[0], out=points, softening=softening)
    hill = hill_forces(points)
    print(f"{'angle °':>8} {'length cm':>10} {'force N':>9} {'moment N·m':>11} {'Hill N':>8} {'enclosed cm²':>13} "
          f"{'fibers cm²':>11}")
    for p, h in zip(points, hill):
        print(f"{p.angle_deg:8.1f} {100 * p.length_m:10.2f} {p.force_N:9.1f} {p.moment_Nm:11.2f} {h:8.1f} "
              f"{1e4 * p.csa_m2:13.2f} {1e4 * p.csa_fibers_m2:11.2f}")
    print("  (length: the fibers' mean length, origin to insertion; Hill: a Hill muscle on the same lengths, its\n"
          "   peak force set to the bundle's largest; enclosed: the mid-belly area the fibers' sections enclose;\n"
          "   fibers: the sum of those sections)")
    shape = np.array([p.force_N for p in points]) / max(p.force_N for p in points) - hill / np.max(hill)
    print(f"force–length shape against the Hill muscle: largest difference {100 * np.max(np.abs(shape)):.1f} % "
          "of the peak")
    at = {p.angle_deg: p for p in points}
    csa_increase, fiber_increase, peak = isometric_figures(points)
    if 90.0 in at:  # (the angles held: --angles, and 0°)
        print(f"swelling at mid-belly, 0° → 90°: enclosed area +{csa_increase:.1f} %, fibers' area "
              f"+{fiber_increase:.1f} % (the Cosserat-rod elbow of Zhang et al., Nat. Commun. 2019: about 28 %; "
              "measured in people, as they report: 30–34 %)")
    else:
        print("swelling at mid-belly, 0° → 90°: not measured, --angles does not include 90 "
              "(csa_increase_pct_90=nan in the summary)")
    if 90.0 in at and args.elements < MIN_ELEMENTS_SWELLING:
        print(f"  (with fewer than {MIN_ELEMENTS_SWELLING} elements per fiber the swelling is the mesh's: a belly "
              "on a few cubic elements shortens too far; see the module notes, 'Elements per fiber')")
    start = at[START_DEG].state
    print(f"isokinetic test ({SPEED_DEG_S:g}°/s from {START_DEG:g}° for {args.isokinetic_time:g} s):")
    rows = isokinetic(model, motion, start, t_end=args.isokinetic_time, dt=args.dt, writer=writers[1],
                      softening=softening)
    wall = time.perf_counter() - wall
    shown = np.arange(START_DEG, rows[-1, 1] + 1e-9, ISOKINETIC_TABLE_DEG)
    if len(shown) > 1:  # (from the start, the isometric point at START_DEG, through the steps)
        angles = np.concatenate([[START_DEG], rows[:, 1]])
        forces = np.concatenate([[at[START_DEG].force_N], rows[:, 2]])
        moments = np.concatenate([[at[START_DEG].moment_Nm], rows[:, 3]])
        print(f"{'angle °':>8} {'force N':>9} {'moment N·m':>11}   (isokinetic, every {ISOKINETIC_TABLE_DEG:g}°; "
              "interpolated between steps)")
        for angle, force, moment in zip(shown, np.interp(shown, angles, forces), np.interp(shown, angles, moments)):
            print(f"{angle:8.1f} {force:9.1f} {moment:11.2f}")
    print(f"isokinetic force: {rows[0, 2]:.1f} N at {rows[0, 1]:.1f}° … {rows[-1, 2]:.1f} N at {rows[-1, 1]:.1f}°; "
          f"the tissue drag at most {np.max(rows[:, 4]):.2f} N ({100 * np.max(rows[:, 4] / rows[:, 2]):.2f} % of "
          "the force)")
    print(softening.describe())
    softening.warn()
    print(_summary(model, points, wall, softening))
    return dict(points=points, hill=hill, isokinetic=rows, csa_increase_pct_90=csa_increase, wall_s=wall,
                softening=softening)


if __name__ == "__main__":
    run_script(main)
