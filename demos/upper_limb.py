r"""The upper limb of paper §5.4: forearm driven by 2 biceps and 3 triceps fibers.
==============================================================================

Model (paper Table 4, eqs. 77–78, all as printed; coordinates: x anterior, y lateral,
z up, metres):

* **Bones** (:mod:`skfiber.rigid`): the upper arm is fixed (start (0, 0, 0),
  axis (0, 0, −0.351), r = 0.035 m, 1.92 kg); the forearm (start
  (0, 0, −0.351), axis (0, 0, −0.287), r = 0.035 m, 1.50 kg, solid cylinder)
  turns about the elbow axis through (0, 0, −0.351) along −y, so the
  coordinate q = elbow flexion (q > 0 lifts the hand forward).  Gravity
  9.81 m/s² on bones and fibers.
* **Fibers** (Table 4a, eq. 77): r0(θ) = 0.06 (1 + 16 θ²(1 − θ)²) m and
  γM(θ) = 16 θ²(1 − θ)²; ρ = 900 kg/m³, μM = 2·10⁴, μT = 10⁶, η = 10³ (both),
  λopt = 1.3, ΔW = 0.3, ν = 4; biceps σ0 = 32.7 Pa, Smax = 4.2·10⁷ Pa,
  triceps σ0 = 16 Pa, Smax = 1.4·10⁷ Pa.  Activations (eq. 78):
  α_bi = 0.0704 tanh(πt) + 0.0608 sin(πt), α_tri = 0.008 (1 − cos πt).
* **Contact** (Table 4c): the triceps on a wrapping cylinder fixed to the
  forearm (κ = 768 N/m, γ = 4), and fiber–fiber contact on **all** pairs of
  the 5 fibers (κ = 768 N/m, γ = 3; ``--fiber-contact off`` switches it off).
  5 contact points per element, as in the paper.

**Geometry** (:data:`TABLE4`; the paper gives none of it, so every number is
ours, chosen for the reasons given):

* **Biceps**: two straight fibers from (0.15, y, −0.03) to (0.15, y, −0.40),
  y = ±0.085 — parallel to the upper arm, 15 cm in front of the elbow axis
  (moment arm 15 cm), inserting 5 cm below the elbow.
* **Triceps**: three straight fibers from (−0.07, y, −0.05) to (−0.07, y, −0.40),
  y = 0, ±0.17 — 7 cm behind the elbow axis (olecranon lever 7 cm).
* **Wrapping cylinder**: coaxial with the elbow, r = 5 mm, 0.6 m long
  (y ∈ [−0.3, 0.3], under all three triceps and their radius).
* **Why these numbers.**  Eq. 77 makes the fibers fat: r0 = 0.12 m at the
  belly.  Fiber–fiber contact is admissible only while 1 + γg > 0, i.e. the
  centerlines stay more than (1 − 1/γ)(r_x + r_y) = 0.16 m apart at two
  bellies (γ = 3).  Fibers of one muscle 0.17 m apart start just inside it
  and touch (1 + γg = 0.125 at rest); biceps and triceps lie 0.22 m apart in
  x.  At rest 7 of the 10 pairs touch (the two biceps, neighbouring triceps,
  each biceps with the two nearest triceps).  The triceps' insertion radius
  r0 ≈ 0.07 m at 7 cm behind the elbow axis makes it rest on a thin cylinder
  (1 + γg = 0.23 at rest); a shorter lever starts inadmissible (6 cm:
  1 + γg = −0.03 after the first step).  The levers decide the stretch
  of the triceps: with a 10 cm olecranon lever (the earlier geometry below), or
  a 12 cm biceps lever, the triceps' pure-muscle belly is stretched past its
  force peak (see *Strain softening*); 15 cm / 7 cm keeps every fiber on the
  rising branch in every step (checked each run, below).
* **Flexion reached** (level 1–3, Table 4 as printed): the elbow flexes
  to 20.8° at t = 0.5 s and then cycles with α_bi between about 7.5° and
  21.9° (period 2 s; the triceps' α_tri pulls it back at t ≈ 1.5, 3.5, …).
  The range is small because the biceps' force–length curve is narrow
  (ΔW = 0.3 around λopt = 1.3): a 15 cm lever shortens the biceps by 15 cm per
  radian, and at 20° its belly is already far from λopt.  The paper's Fig. 10
  cannot be compared quantitatively (its geometry is unknown).
* **Levels agree**: ``docs/theory.md`` (upper limb) has the measured
  differences of the elbow angle and the attachment forces between levels 1–4.

**Strain softening.**  The axial force of a fiber is N = π r0² λ S.  Where the
active stress (eq. 32) dominates the passive one, N(λ) rises, peaks and falls
again: for the triceps' pure-muscle belly (θ ≈ 0.5, γM = 1) at α = 0.016 the
peak is at λ ≈ 1.15 (≈ 9 kN), because μM = 2·10⁴ Pa is 50× softer than μT.
Past the peak a stretched piece carries the same force at a larger stretch
and the rest unloads: the stretch *localizes* in a band whose width the
continuum model does not fix — it is one or two elements wide, set by the
mesh — and so is everything that depends on it (strain softening).  With the
earlier geometry (``--geometry softening``, :data:`SOFTENING`: biceps lever
3 cm, olecranon lever 0.1 m) a band about 0.06 wide in θ stretches to
λ ≈ 3.3–4 and later collapses: the elbow angle drops by about 35° within 2
steps at a time that depends on the mesh, the levels do not converge, and
N(θ) jumps within one element at the band's edges (Gibbs-type oscillations,
not contact).  Each run checks the state at the end of every step (with
``--rtol``: at every output time; :class:`skfiber.softening.SofteningLog`), prints the largest λ per fiber
and warns (:class:`skfiber.softening.SofteningWarning`) if material went past
its force peak.  An option, not the paper's model and off by default:
``--stretch-gradient C`` adds the gradient-of-stretch term
(c/2) ∫ (dλ/dS)² dS (:func:`stretch_gradient_form`, a user term whose tangent
skfiber derives), which gives the band a width ℓ ≈ √(c/N) of its own: with
c = 20 N·m² the softening geometry's levels 1, 2, 3 differ by 1.29° and 1.09°
instead of 29° and 12.7° (whole run, fiber–fiber contact off).

**Contact near the singular limit.**  The fibers carry kN while Table 4's
κ = 768 N/m is small: a triceps of ~4 kN bent around the elbow presses with
~5·10⁴ N/m, which the rational law F = −κg/(1 + γg) only reaches close to
1 + γg = 0.  So the contact runs near the law's limit (measured at level 1:
smallest 1 + γg 0.0034 on the wrapping cylinder, 0.015 between fibers) — it
acts as a nearly hard constraint at g ≈ −1/γ, and the results barely depend on
κ and on the number of contact points: at level 1 from t = 0.25 s on, 8 contact
points per element instead of 5 change the elbow angle by 0.0007° and the
attachment forces by 0.03 %, doubling κ by 0.13° and 1.2 % (``docs/theory.md``).
Between the contact points the law can be out of range (1 + γg ≤ 0); the VTK
field ``contact_force`` is capped there at its value at 1 + γg = 10⁻³
(:data:`skfiber.contact.cylinder_line_force.OUT_OF_RANGE_MARGIN`), so it is
finite everywhere.

* **Bending stiffness** (optional, ``--bending EI``, off by default; not in
  the paper, whose fibers are cables): adds to every fiber the residual ::

      EI ∫ x_ss · ξ_ss dS  =  EI ∫ x″ · ξ″ / |A1|³ dθ

  with EI in N·m² (x_ss, ξ_ss: second derivatives in reference arc length;
  exact for the straight reference fibers here), the scikit-fem
  ``LinearForm`` of the README's "A new law, a new term", through
  ``model.add_term(bending_form(EI), name="bending")`` and without a tangent:
  the form compiler derives it and runs the term in the model's generated
  kernel, with the cable.  The fiber ends keep their
  attachments (positions); their slopes stay free, so the bending moment is
  zero there (pinned ends).  EI must be finite and ≥ 0; EI = 0 adds no term.
  For scale: EI = 1e-4 N·m² moves the elbow by 3·10⁻⁵° in the first
  1/32 s at level 1 (the Table-4 fibers carry kN).
* At t = 0 the model is at rest in the reference configuration (q = 0: the
  forearm hangs straight down).  With Table 4's small prestress it is close
  to equilibrium there, as the paper says (static angle −0.26°); the start
  transient is the "oscillations related to the initial conditions" of the paper.

**The start transient, and the start steps.**  The biceps' activation rises from
t = 0 (α̇ = 0.41 s⁻¹) and its active stress pulls far harder than the hanging
forearm needs: with very small steps (1/4096 s) the biceps force reaches 1.8 kN
after 10 ms, the forearm is flung up (9° at 20 ms), the biceps goes slack (below
50 N from 23 to 42 ms), snaps taut again and rings, force peaks 20–50 ms apart,
still about ±8 % around its trend at 0.1–0.25 s.  It is the fibers' first axial
mode with the forearm at their end (a fiber weighs about 9 kg, the forearm
1.5 kg; quarter-wave estimate 25–39 ms from the slope of the force–length
curve).  No level's step resolves it (ωΔt ≈ 0.6–8), and backward Euler damps it
by an amount that depends on Δt: with Table 5's uniform steps the levels
differed there by up to 1.1 %, 4.2 % and 9.0 % of the force (levels 1–2, 2–3,
3–4), a difference of time steps, not of meshes (at equal steps of 1/256 s the
level-3 and level-4 meshes agree to 0.01 %).  So every level takes its steps of
the first :data:`START_TIME` = 1/8 s in substeps of :data:`START_DT` = 1/256 s,
the level-4 step (level 1: 8 per step, level 2: 4, level 3: 2, level 4: 1;
:func:`start_substeps`) — a departure from Table 5's uniform steps, the model
unchanged.  The recorded times stay the level's steps (the level comparisons
and checkpoints are unchanged); ``run(..., start_dt=None)`` gives the uniform
steps.  Cost at level 1, measured when the substeps came in (Newton's tolerance then 10⁻⁹, that day's
code): 655 instead of 596 Newton iterations, wall 2.83–2.86 s against 2.65–2.77 s (two runs each, 2-core
shared VM); today's code takes 656 at 10⁻⁹ (below, "Newton's tolerance").  The start is not the
Δt → 0 solution at any level: ``docs/theory.md`` (upper limb) has the
measurements.

Levels (Table 5): 8, 16, 32, 64 elements per fiber with 256, 512, 1024,
2048 backward-Euler steps over T = 8 s (the first 1/8 s of levels 1–3 in
substeps of 1/256 s, see above).  The d.o.f. count is the paper's
(positions and velocities of all Hermite DOFs plus q, q̇): 542, 1022, 1982,
3902.  Fiber–fiber contact runs compiled on the coupled solver's fast path;
the run times with and without it are in ``docs/performance.md``.

Outputs (``--output DIR``, default ``upper_limb_output``), per level L run:
``angle_levelL.csv`` (t, elbow angle, the forces at the upper-arm attachments of biceps1 and triceps1) and
``axial_force_levelL.csv`` (N(θ) at t = 1 s and 4 s), and for all levels run
together ``angle.png`` (paper Fig. 10), ``forces.png`` (Fig. 11),
``axial_force.png`` (Fig. 12) and with ``--snapshots`` ``snapshots.png``
(Fig. 13: tubes of the true radius, bones; needs pyvista)
(:mod:`demos._upper_limb_figures`); the timing table next to the paper's
Table 5, the flexion range, the largest stretch per fiber, the contact counts
and margins, the wiggles of N(θ) per level, and with several levels their
differences.

**Newton's tolerance.**  Each step's Newton iteration stops at ‖G‖ ≤ 10⁻⁵ × the largest
force term (:data:`NEWTON_RTOL`; the library's default is 10⁻⁹).  Measured over the whole 8 s
against 10⁻⁹ (2-core shared VM): the elbow angle differs by at most 1.5·10⁻⁵°, 1.9·10⁻⁵°,
7.0·10⁻⁵° and 7.1·10⁻⁵° at levels 1–4, the attachment forces by at most 1.3·10⁻⁵ of their
largest — about 600 times below the smallest difference between levels (0.044°), and orders
below every check of the demo; with ``--geometry softening`` (level 1) 2.1·10⁻⁴°, where the
localized band is sensitive to everything.  The Newton iterations drop from 656, 997, 1,336 and
2,279 (10⁻⁹) to 398, 586, 982 and 1,644: at level 1 most steps stop after one iteration
instead of two.  ``--newton-rtol`` (``run(..., newton_rtol=…)``) sets another tolerance;
error-controlled runs (``--rtol``) keep 10⁻⁹, well below their local errors.

**Wiggles of N(θ).**  N along a fiber is nearly constant but wiggles from
sample to sample on coarse meshes, by tens of percent of the mean force at
level 1 and well below 1 % at level 4 (the figures: ``docs/theory.md``).  It is
the error of N at a point, which comes from the stretch of the cubic Hermite
field (an error like h³, times the steep ∂N/∂λ where eq. 77 makes the stretch
vary along the fiber); a single fiber without load, whose exact N is constant,
wiggles alike.  Fig. 12 therefore shows the recovered N
(:func:`skfiber.recovered_axial_force`: the L2 projection onto the derivatives of
the test functions, which the weak form determines), with N at the samples
thin beside it; at level 1 it is within 1 % of level 4's.  The demo prints the
largest deviation of a sample from its neighbours' mean for both: for the
recovered N relative to the force range, for N at the samples relative to the
range (that value stays large until the wiggles are smaller than the true
variation of N) and to the mean force.

**Checkpoints and resume.** The run goes through :func:`skfiber.run.run_simulation`. Every
``--checkpoint-every K`` steps (default 50), at the end, on Ctrl-C and after a failed step
it saves ``upper_limb_levelL_checkpoint.npz`` in the output folder (atomically: a temporary
file renamed): the state and everything the run has recorded
(:mod:`demos._upper_limb_history`: the per-step angle, forces and Newton iterations, the
sampled checks, the profiles and the snapshot states; 81 kB for 8 s at level 1, 123 kB at
level 2). ``--resume`` continues from it: a run killed at any moment (``kill -9`` included)
and resumed writes the same CSV tables, figures and VTK series, and ends in the same state,
bit for bit, as a run that was never stopped (tested, and ``benchmarks/kill_resume.py``).
With ``--rtol`` the checkpoint also holds the step control (every K output times, after the
step that passes the output); resumed from such a checkpoint the run takes the same steps bit
for bit, resumed from one written on Ctrl-C or after a failed step it differs at Newton's
tolerance (modified Newton's kept factorization is not saved), and the whole run stays one
solver call.
Resuming needs the same options: a checkpoint of another level, geometry, fiber–fiber
contact, bending, stretch gradient, Newton tolerance or Δt is refused before anything runs, in one line that
names the options that differ. ``--t-end`` may be later than the first run's (fixed steps) when Δt stays
the same (Δt is t_end over the level's steps scaled to t_end: 1/32 s at level 1 for t_end a
multiple of 1/32 s). With ``--levels`` the first level must have a checkpoint; a later one
without a checkpoint starts afresh. With checkpoints every step is a solver call of its own
(what makes the resume exact), which costs time (measured in ``docs/performance.md``, Upper
limb); ``--no-checkpoints`` runs all steps in one call. The
reported wall time covers the time steps only (not the VTK files, checkpoints and run
checks), of the steps after the checkpoint when resumed (then not compared with the paper's).

Run::

    python demos/upper_limb.py              # level 1
    python demos/upper_limb.py --levels 1 2 3   # compare levels (angle, forces, N(θ))
    python demos/upper_limb.py --fiber-contact off   # without fiber–fiber contact (fast path)
    python demos/upper_limb.py --geometry softening  # the earlier geometry: strain softening, warns
    python demos/upper_limb.py --vtk out    # + VTK series out/upper_limb.pvd (fibers, bones)
    python demos/upper_limb.py --out out    # CSV/PNG and the VTK series, all in out/
    python demos/upper_limb.py --bending 1e-4   # with bending stiffness EI = 1e-4 N·m²
    python demos/upper_limb.py --method bdf2    # BDF2 (order 2) at the level's fixed step (levels
                                                # 1–3; at level 4 Newton stalls in the start
                                                # transient: docs/theory.md)
    python demos/upper_limb.py --rtol 1e-2   # BDF2, steps by error control (the smallest contact
                                             # gap; many small steps: docs/performance.md)
    python demos/upper_limb.py --fiber-contact off --rtol 1e-2   # the same without fiber–fiber contact
    python demos/upper_limb.py --level 3 --out out --resume   # continue a stopped run from out/

The last line of the output is ``summary: level=… dofs=… … ff_contacts_max=… softening=0|1 …
bending_EI=…`` (``softening=1``: material past the force peak (or, shortened, the force minimum) of its law
in a state checked at the end of a step, at any level run; ``bending_EI=0`` without bending; a resumed run adds
``resumed_from_step=…``: its ``wall_s`` is that of the steps after it); a run stopped by Ctrl-C gives the
steps it took and ends with ``interrupted_at_s=… steps_planned=… interrupted=1``.
"""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import math
import numbers
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from skfem import LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber.cli import (ArgumentParser, folder_path, nonnegative_float, output_folders, positive_float, positive_int,
                         run_script)
from skfiber.contact import FiberContact, PenaltyLaw
from skfiber.contact.cylinder import CylinderContact
from skfiber.core.numbers import MAX_STEPS
from skfiber.coupling import body_cylinders
from skfiber.io import VTKSeries, check_series, hold_run, load_checkpoint
from skfiber.progress import PROGRESS_TERMS, Progress
from skfiber.rigid import Body, Fixed, Revolute, RigidSystem
from skfiber.run import checkpoint_options, resume_point, run_simulation
from skfiber.solver import StepInfo
from skfiber.softening import SofteningWarning
from skfiber.terms import d1, d2

# the run checks and level comparisons (re-exported here for the tests and users)
if __package__:   # imported as demos.upper_limb / skfiber.demos.upper_limb
    from ._upper_limb_checks import (RunChecks, angle_difference, check_sample, check_states,  # noqa: F401
                                    describe_checks, describe_wiggles, force_difference, profile_oscillation,
                                    run_checks)
    from ._upper_limb_figures import SNAPSHOT_TIMES
    from ._upper_limb_history import PROFILE_FIBERS, History, axial_force
    from .custom_term import bending as readme_bending  # (the README's bending form)
    from .custom_term import check_straight_fibers
else:             # run as a script: demos/ is on sys.path
    from _upper_limb_checks import (RunChecks, angle_difference, check_sample, check_states,  # noqa: F401
                                   describe_checks, describe_wiggles, force_difference, profile_oscillation,
                                   run_checks)
    from _upper_limb_figures import SNAPSHOT_TIMES
    from _upper_limb_history import PROFILE_FIBERS, History, axial_force
    from custom_term import bending as readme_bending
    from custom_term import check_straight_fibers

T_END = 8.0
#: level → (elements per fiber, time steps)   (paper Table 5)
LEVELS = {1: (8, 256), 2: (16, 512), 3: (32, 1024), 4: (64, 2048)}
#: paper Table 5: level → (d.o.f., elapsed seconds of the authors' MATLAB code)
PAPER_TABLE5 = {1: (542, 66.0), 2: (1022, 281.3), 3: (1982, 958.2), 4: (3902, 5579.6)}
#: times of the axial-force profiles (paper Fig. 12)
PROFILE_TIMES = (1.0, 4.0)
#: the runs are checked (stretch, contact) every SAMPLE_DT seconds (the level-1 step); the force peak every step
SAMPLE_DT = T_END / LEVELS[1][1]
#: the start transient (see the module notes): every level takes its steps of the first START_TIME
#: seconds (4 level-1 steps) as substeps of at most START_DT, the level-4 step, so that the
#: transient is integrated with the same step at every level (level 4 is unchanged)
START_TIME = 4 * SAMPLE_DT
START_DT = T_END / LEVELS[4][1]
#: a run saves its checkpoint every CHECKPOINT_EVERY steps (and at its end, on Ctrl-C and after a failed step)
CHECKPOINT_EVERY = 50
#: Newton's relative tolerance at fixed steps: ‖G‖ ≤ NEWTON_RTOL × the largest force term (the library's
#: default is 1e-9).  Against 1e-9 the elbow angle moves by at most 7.1e-5° and the attachment forces by
#: 1.3e-5 of their largest, about 600 times below the smallest difference between levels, with 26–41 % fewer
#: Newton iterations than with 1e-9 (module notes, "Newton's tolerance").  Runs with error control
#: (``rtol``/``atol``) keep the library's 1e-9 unless ``newton_rtol`` is given.
NEWTON_RTOL = 1e-5

ELBOW = np.array([0.0, 0.0, -0.351])
#: Table 4c: contact parameters (κ in N/m, γ)
FIBER_CONTACT = dict(stiffness=768.0, gamma=3.0)
WRAP_CONTACT = dict(stiffness=768.0, gamma=4.0)


@dataclass(frozen=True)
class Geometry:
    """Where the fibers run and the wrapping cylinder sits (not given in the paper).

    ``biceps`` and ``triceps``: (origin on the upper arm, insertion on the forearm) per
    fiber (m); the wrapping cylinder is coaxial with the elbow, ``wrap_length`` long and
    centred on it; ``fiber_contact``: whether fiber–fiber contact is on by default.
    """

    name: str
    biceps: tuple
    triceps: tuple
    wrap_radius: float
    wrap_length: float
    fiber_contact: bool


#: The default (see the module notes): straight fibers parallel to the upper arm, biceps
#: 15 cm in front of the elbow axis, triceps 7 cm behind it, spread sideways so that all
#: fiber pairs start admissible; a 5 mm wrapping cylinder 0.6 m long (over all triceps).
TABLE4 = Geometry(
    "table4",
    biceps=tuple(((0.15, y, -0.03), (0.15, y, -0.40)) for y in (-0.085, 0.085)),
    triceps=tuple(((-0.07, y, -0.05), (-0.07, y, -0.40)) for y in (-0.17, 0.0, 0.17)),
    wrap_radius=0.005, wrap_length=0.6, fiber_contact=True,
)
#: The earlier geometry, kept to show strain softening (see the module notes): biceps lever
#: 3 cm, olecranon lever 0.1 m, fibers 2–3 cm apart (fiber–fiber contact off: they overlap
#: far beyond the penalty law's range), wrapping cylinder r = 0.025 m, 0.16 m long.
SOFTENING = Geometry(
    "softening",
    biceps=tuple(((0.06, y, -0.03), (0.03, y, -0.40)) for y in (-0.02, 0.02)),
    triceps=tuple(((-0.10, y, -0.05), (-0.10, y, -0.40)) for y in (-0.03, 0.0, 0.03)),
    wrap_radius=0.025, wrap_length=0.16, fiber_contact=False,
)
GEOMETRIES = {g.name: g for g in (TABLE4, SOFTENING)}


def radius(theta):
    """r0(θ) of eq. 77 (m)."""
    return 0.06 * (1.0 + 16.0 * (1.0 - theta) ** 2 * theta**2)


def muscle_fraction(theta):
    """γM(θ) of eq. 77."""
    return 16.0 * (1.0 - theta) ** 2 * theta**2


def alpha_biceps(t):
    return 0.0704 * math.tanh(math.pi * t) + 0.0608 * math.sin(math.pi * t)


def alpha_triceps(t):
    return 0.008 * (1.0 - math.cos(math.pi * t))


def bending_stiffness(EI) -> float:
    """EI (N·m²) as a float, or a ``ValueError`` naming the value: finite and ≥ 0 (``None``: 0)."""
    if EI is None:
        return 0.0
    if isinstance(EI, bool) or not isinstance(EI, numbers.Real):
        raise ValueError(f"bending stiffness EI must be a number in N·m², got {EI!r}")
    value = float(EI)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"bending stiffness EI must be finite and ≥ 0 (N·m²), got {EI!r}")
    return value


def bending_form(EI: float) -> LinearForm:
    """The README's bending residual EI ∫ x_ss · ξ_ss dS = EI ∫ x″ · ξ″ / |A1|³ dθ
    (straight reference fibers).

    Added with ``model.add_term(bending_form(EI), name="bending")``, without a tangent (derived by skfiber).
    The form is :func:`skfiber.demos.custom_term.bending`, with EI checked here.
    """
    return readme_bending(bending_stiffness(EI))


def stretch_gradient_form(c: float) -> LinearForm:
    """Gradient-of-stretch regularization: the residual of W = (c/2) ∫ (dλ/dS)² dS, c in N·m².

    With λ = |x′|/|A1| and dS = |A1| dθ (straight reference fibers, |A1| constant),
    δW = c ∫ λ′ δλ′ / |A1| dθ with λ′ = x′·x″ / (|x′| |A1|) and
    δλ′ = (x″·ξ′ + x′·ξ″)/(|x′| |A1|) − (x′·ξ′)(x′·x″)/(|x′|³ |A1|).  It penalizes
    sharp changes of stretch along the fiber and gives a localizing band the width
    ℓ ≈ √(c/N) instead of the element size (not in the paper; an option, off by default).

    Examples
    --------
    >>> model = build_model(4, geometry="softening")
    >>> _ = model.add_term(stretch_gradient_form(20.0), name="stretch_gradient")   # tangent derived
    """
    c = float(c)
    if not (math.isfinite(c) and c >= 0.0):
        raise ValueError(f"stretch-gradient modulus c must be finite and ≥ 0 (N·m²), got {c!r}")

    @LinearForm
    def stretch_gradient(v, w):
        xp, xpp, vp, vpp = d1(w.x), d2(w.x), d1(v), d2(v)
        n = dot(xp, xp) ** 0.5
        lam_p = dot(xp, xpp) / (n * w.J)
        dlam_p = (dot(xpp, vp) + dot(xp, vpp)) / (n * w.J) - dot(xp, vp) * dot(xp, xpp) / (n**3 * w.J)
        return c * lam_p * dlam_p / w.J

    return stretch_gradient


def triceps_law(**changes) -> sf.SymbolicLaw:
    """Table 4a, triceps: eqs. 30, 32, 34 with σ0 = 16 Pa, Smax = 1.4·10⁷ Pa (``changes``: other values of
    :func:`skfiber.paper_law`'s parameters, for parameter studies)."""
    return sf.paper_law(**{**dict(sigma0=16.0, s_max=1.4e7), **_TABLE4_COMMON, **changes})


def biceps_law(**changes) -> sf.SymbolicLaw:
    """Table 4a, biceps: eqs. 30, 32, 34 with σ0 = 32.7 Pa, Smax = 4.2·10⁷ Pa (``changes`` as for
    :func:`triceps_law`)."""
    return sf.paper_law(**{**dict(sigma0=32.7, s_max=4.2e7), **_TABLE4_COMMON, **changes})


_TABLE4_COMMON = dict(mu_muscle=2e4, mu_tendon=1e6, eta_muscle=1e3, eta_tendon=1e3, lam_opt=1.3, delta_w=0.3, nu=4.0)


def build_model(n_elements: int = 8, *, geometry: Geometry | str = TABLE4, gravity: bool = True, wrap: bool = True,
                fiber_contact: bool | None = None, bending: float | None = None, contact_points: int = 5,
                contact_stiffness_factor: float = 1.0, stretch_gradient: float = 0.0,
                biceps_law_changes: dict | None = None, triceps_law_changes: dict | None = None,
                contact_gap: str = "closest_point") -> sf.Model:
    """The upper-limb model with ``n_elements`` per fiber (see the module notes).

    ``geometry``: :data:`TABLE4` (default) or :data:`SOFTENING` (or their names).
    ``fiber_contact``: fiber–fiber contact on all pairs (Table 4c: κ = 768 N/m, γ = 3);
    ``None``: the geometry's default (on for :data:`TABLE4`).  ``bending``: bending
    stiffness EI (N·m²) of every fiber, added as the term ``"bending"`` (:func:`bending_form`);
    ``None`` or 0: none (the paper's cables).  ``contact_points`` (Gauss points per element
    of both contacts) and ``contact_stiffness_factor`` (κ of both contacts times this) are for
    the sensitivity study of the module notes; the defaults are the paper's.
    ``stretch_gradient``: modulus c (N·m²) of the gradient-of-stretch regularization
    (:func:`stretch_gradient_form`, term ``"stretch_gradient"``); 0: none (the paper's model).
    ``biceps_law_changes``, ``triceps_law_changes``: other values of the laws' parameters
    (:func:`biceps_law`, :func:`triceps_law`; parameter studies).
    ``contact_gap``: the gap of fiber–fiber contact, ``"closest_point"`` (the paper's eqs. 40, 66) or
    ``"smallest"`` (continuous in the state; see :class:`skfiber.contact.FiberContact`).
    """
    EI = bending_stiffness(bending)
    if isinstance(geometry, str):
        if geometry not in GEOMETRIES:
            raise ValueError(f"geometry must be one of {sorted(GEOMETRIES)}, got {geometry!r}")
        geometry = GEOMETRIES[geometry]
    if not (isinstance(contact_stiffness_factor, numbers.Real) and contact_stiffness_factor > 0
            and math.isfinite(contact_stiffness_factor)):
        raise ValueError(f"contact_stiffness_factor must be a finite number > 0, got {contact_stiffness_factor!r}")
    fiber_contact = geometry.fiber_contact if fiber_contact is None else bool(fiber_contact)
    g = (0.0, 0.0, -9.81) if gravity else (0.0, 0.0, 0.0)
    system = RigidSystem(gravity=g)
    system.add_body(Body("upper_arm", start=(0, 0, 0), axis=(0, 0, -0.351), radius=0.035, mass=1.92), joint=Fixed())
    system.add_body(Body("forearm", start=tuple(ELBOW), axis=(0, 0, -0.287), radius=0.035, mass=1.50),
                    joint=Revolute(axis=(0, -1, 0), point=tuple(ELBOW)))
    half = 0.5 * geometry.wrap_length
    system.add_body(Body("wrap", start=tuple(ELBOW + [0, -half, 0]), axis=(0, 2 * half, 0),
                         radius=geometry.wrap_radius, mass=0.0), parent="forearm", joint=Fixed())
    fibers = []
    for muscle, law, activation, ends in (("biceps", biceps_law(**(biceps_law_changes or {})), alpha_biceps,
                                           geometry.biceps),
                                          ("triceps", triceps_law(**(triceps_law_changes or {})), alpha_triceps,
                                           geometry.triceps)):
        for k, (a, b) in enumerate(ends):
            fibers.append(sf.Fiber.straight(a, b, n_elements=n_elements, radius=radius,
                                            muscle_fraction=muscle_fraction, density=900.0, law=law,
                                            activation=activation, name=f"{muscle}{k + 1}"))
    model = sf.Model(fibers, rigid=system)
    for f in fibers:
        model.attach(f, "start", "upper_arm", name=f"{f.name}.origin")
        model.attach(f, "end", "forearm", name=f"{f.name}.insertion")
    if gravity:
        model.add_gravity(g)
    k = contact_stiffness_factor
    if wrap:
        law = PenaltyLaw(stiffness=k * WRAP_CONTACT["stiffness"], gamma=WRAP_CONTACT["gamma"])
        model.add_contact(CylinderContact.on_body(system, "wrap", law=law, safeguard="trial",
                                                  quadrature_points=contact_points,
                                                  fibers=[f.name for f in fibers if f.name.startswith("triceps")]))
    if fiber_contact:
        law = PenaltyLaw(stiffness=k * FIBER_CONTACT["stiffness"], gamma=FIBER_CONTACT["gamma"])
        model.add_contact(FiberContact(law, quadrature_points=contact_points, gap=contact_gap))
    if EI > 0:
        check_straight_fibers(model, term="bending")
        model.add_term(bending_form(EI), name="bending")   # tangent derived automatically
    if stretch_gradient:
        check_straight_fibers(model, term="stretch-gradient")
        model.add_term(stretch_gradient_form(stretch_gradient), name="stretch_gradient")
    return model


#: the parameters of :func:`study_run` (a parameter study's names → what they change)
STUDY_PARAMETERS = {
    "smax_biceps": "Smax of the biceps' law (Pa; Table 4: 4.2e7)",
    "smax_triceps": "Smax of the triceps' law (Pa; Table 4: 1.4e7)",
    "sigma0": "prestress σ0 of both muscles (Pa; Table 4: biceps 32.7, triceps 16), as the biceps' value, "
              "the triceps' in the same ratio",
    "mu_muscle": "passive modulus μM of both muscles (Pa; Table 4: 2e4)",
    "eta_muscle": "viscosity ηM of both muscles (Pa·s; Table 4: 1e3)",
    "biceps_lever": "the biceps' distance in front of the elbow axis (m; default geometry 0.15)",
}


def study_run(params: dict, *, level: int = 1, t_end: float = T_END, fiber_contact: bool = False) -> dict:
    """One run of the default geometry with the parameters ``params`` (:data:`STUDY_PARAMETERS`; the others
    as in Table 4), for parameter studies (``skfiber study upper-limb``): outputs ``peak_angle_deg``,
    ``final_angle_deg``, ``peak_biceps_force_N`` (the largest origin force of one biceps fiber) and
    ``past_force_peak`` (1 when material went past the force peak, or the force minimum, of its law: strain
    softening, whose motion depends on the mesh), and the elbow angle over time under ``series``.  Fiber–fiber
    contact is off by default (the study's many runs; with it a level-1 run takes seconds instead of a fraction of
    one).

    Raises
    ------
    ValueError
        For a parameter it does not know (naming the known ones).
    """
    unknown = sorted(set(params) - set(STUDY_PARAMETERS))
    if unknown:
        raise ValueError(f"the upper limb does not know the parameters {unknown}; it takes {sorted(STUDY_PARAMETERS)}")
    biceps, triceps = {}, {}
    if "smax_biceps" in params:
        biceps["s_max"] = float(params["smax_biceps"])
    if "smax_triceps" in params:
        triceps["s_max"] = float(params["smax_triceps"])
    if "sigma0" in params:
        biceps["sigma0"] = float(params["sigma0"])
        triceps["sigma0"] = float(params["sigma0"]) * 16.0 / 32.7
    for key in ("mu_muscle", "eta_muscle"):
        if key in params:
            biceps[key] = triceps[key] = float(params[key])
    geometry = TABLE4
    if "biceps_lever" in params:
        x = float(params["biceps_lever"])
        if not (math.isfinite(x) and x > 0):  # (at or behind the axis the biceps is no flexor: Newton stagnates)
            raise ValueError(f"biceps_lever must be a distance > 0 in front of the elbow axis (m), got {x!r}")
        geometry = dataclasses.replace(TABLE4, name="table4",
                                       biceps=tuple(((x, a[1], a[2]), (x, b[1], b[2])) for a, b in TABLE4.biceps))
    with warnings.catch_warnings(record=True) as caught:  # softening is an output of a study, not a warning
        warnings.simplefilter("always", SofteningWarning)
        result = run(level, t_end=t_end, progress=False, geometry=geometry, fiber_contact=fiber_contact,
                     biceps_law_changes=biceps, triceps_law_changes=triceps)
    if result.interrupted:  # Ctrl-C: a part of the run is no outcome of these parameters; stop the study
        raise KeyboardInterrupt
    for w in caught:
        if not issubclass(w.category, SofteningWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return {"peak_angle_deg": float(np.max(result.angle_deg)), "final_angle_deg": float(result.angle_deg[-1]),
            "peak_biceps_force_N": float(np.max(result.biceps_origin_force)),
            "past_force_peak": float(any(n for n, _ in result.checks.past_peak.values())),
            "series": {"t": np.asarray(result.times), "angle_deg": np.asarray(result.angle_deg)}}


def paper_dofs(model: sf.Model) -> int:
    """The paper's d.o.f. count: positions and velocities of all Hermite DOFs, plus q and q̇."""
    return 2 * model.n_dofs + 2 * model.rigid.n


@dataclass
class UpperLimbResult:
    """Time series and statistics of one run."""

    level: int
    n_elements: int
    n_steps: int
    dofs: int
    unknowns: int
    times: np.ndarray
    angle_deg: np.ndarray
    #: force (N) of biceps1 and triceps1 at their upper-arm attachment, magnitude
    biceps_origin_force: np.ndarray
    triceps_origin_force: np.ndarray
    #: seconds of the time stepping (without the VTK output, checkpoints and the run checks)
    wall_time: float
    #: Newton iterations per step (of the whole run, also the steps before a resume)
    newton_iterations: np.ndarray
    retries: int
    max_contacts: int
    #: θ and axial force N (N) of biceps1 / triceps1 at PROFILE_TIMES
    profiles: dict = field(default_factory=dict)
    model: sf.Model | None = None
    final_state: sf.State | None = None
    #: the end time asked for, and whether Ctrl-C stopped the run before it
    t_end: float = T_END
    interrupted: bool = False
    #: seconds of the throw-away first step (kernel compilation on a first run), not in wall_time
    warmup_time: float = 0.0
    #: bending stiffness EI (N·m²) of the fibers; 0: no bending term
    bending_EI: float = 0.0
    geometry: str = TABLE4.name
    fiber_contact: bool = True
    #: the sampled states (every SAMPLE_DT seconds) nearest to the snapshot times of paper Fig. 13, and the last
    states: list = field(default_factory=list)
    #: what the states sampled every SAMPLE_DT seconds (and the last) show, and every step's for strain softening
    checks: RunChecks | None = None
    #: the step the run was resumed from (None: not resumed; wall_time then covers the steps after it)
    resumed_from: int | None = None
    #: Newton's relative tolerance of the run (:func:`newton_options`)
    newton_rtol: float = NEWTON_RTOL

    @property
    def complete(self) -> bool:
        """A full paper run (T = 8 s, not interrupted, not resumed): only then is the time comparable with Table 5."""
        return not self.interrupted and self.resumed_from is None and abs(self.t_end - T_END) < 1e-12


#: the name of the VTK series (upper_limb.pvd)
SERIES_NAME = "upper_limb"


def checkpoint_file(folder: Path, level: int) -> Path:
    """Where :func:`main` keeps the checkpoint of a level: ``upper_limb_levelL_checkpoint.npz`` in ``folder``."""
    return Path(folder) / f"{SERIES_NAME}_level{level}_checkpoint.npz"


def start_substeps(dt: float, start_dt: float | None = START_DT, start_time: float = START_TIME) -> tuple[int, int]:
    """(K, m): the first K steps of a run with step ``dt`` are taken as m equal substeps each.

    K covers ``start_time`` (K dt ≥ start_time) and dt / m ≤ ``start_dt``; ``start_dt`` None (or
    ≥ dt): (0, 1), every step whole.  At the levels of Table 5 (start_dt = 1/256 s): level 1
    (4, 8), level 2 (8, 4), level 3 (16, 2), level 4 (0, 1).

    >>> start_substeps(1 / 32), start_substeps(1 / 128), start_substeps(1 / 256)
    ((4, 8), (16, 2), (0, 1))
    """
    if start_dt is None:
        return 0, 1
    start_dt = float(start_dt)
    if not (math.isfinite(start_dt) and start_dt > 0):
        raise ValueError(f"start_dt must be a finite step > 0 in s (or None), got {start_dt!r}")
    m = max(1, int(math.ceil(dt / start_dt - 1e-9)))
    if m == 1:
        return 0, 1
    return int(math.ceil(start_time / dt - 1e-9)), m


def run_options(level: int = 1, *, t_end: float = T_END, n_elements: int | None = None, n_steps: int | None = None,
                bending: float | None = None, geometry: Geometry | str = TABLE4, fiber_contact: bool | None = None,
                method: str = "euler", start_dt: float | None = START_DT, newton_rtol: float | None = None,
                adaptive: bool = False, **model_options) -> tuple[int, int, float, dict]:
    """(elements per fiber, steps, Δt, the options a checkpoint records) of a :func:`run` with these arguments.

    A run resumes only from a checkpoint with the same options and Δt (Δt = ``t_end`` over the level's
    steps scaled to ``t_end``, so a later ``t_end`` resumes when Δt stays the same) and the same
    start step ``start_dt`` (:func:`start_substeps`) and Newton's tolerance (:func:`newton_options` of
    ``newton_rtol`` and ``adaptive``, whether the steps are error-controlled).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {sorted(LEVELS)}, got {level!r}")
    if isinstance(geometry, str):
        if geometry not in GEOMETRIES:
            raise ValueError(f"geometry must be one of {sorted(GEOMETRIES)}, got {geometry!r}")
        geometry = GEOMETRIES[geometry]
    ne, nt = LEVELS[level]
    ne = ne if n_elements is None else int(n_elements)
    nt = nt if n_steps is None else int(n_steps)
    if t_end != T_END and n_steps is None:
        nt = max(1, int(round(nt * t_end / T_END)))
    if nt > MAX_STEPS:
        raise ValueError(f"t_end = {t_end:g} s would take {nt:.3g} steps of {t_end / nt:.3g} s at level {level}, "
                         f"more than {MAX_STEPS:.0e}; give a shorter t_end")
    unknown = sorted(set(model_options) - set(_MODEL_DEFAULTS))
    if unknown:
        raise TypeError(f"unknown model options {unknown}; build_model takes {sorted(_MODEL_DEFAULTS)}")
    options = dict(level=level, elements_per_fiber=ne, geometry=geometry.name,
                   fiber_contact=geometry.fiber_contact if fiber_contact is None else bool(fiber_contact),
                   bending_EI=bending_stiffness(bending), method=method,
                   start_dt=None if start_dt is None else float(start_dt),
                   newton_rtol=newton_options(newton_rtol, adaptive=adaptive).rtol,
                   **{**_MODEL_DEFAULTS, **model_options})
    start_substeps(t_end / nt, start_dt)   # checks start_dt
    return ne, nt, t_end / nt, options


def _checked_newton_rtol(value) -> float:
    """``value`` as a float in (0, 1), else a ValueError that names it."""
    real = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    rtol = float(value) if real else math.nan
    if not 0 < rtol < 1:
        raise ValueError(f"newton_rtol must be a number in (0, 1) (Newton's relative tolerance, e.g. 1e-5), "
                         f"got {value!r}")
    return rtol


def newton_options(newton_rtol: float | None = None, *, adaptive: bool = False) -> sf.NewtonOptions:
    """Newton's options of a run: ``rtol`` = ``newton_rtol``, or by default :data:`NEWTON_RTOL` at fixed steps
    and the library's default (1e-9) with error-controlled steps (``adaptive``).

    >>> newton_options().rtol, newton_options(adaptive=True).rtol, newton_options(1e-8).rtol
    (1e-05, 1e-09, 1e-08)
    """
    if newton_rtol is not None:
        return sf.NewtonOptions(rtol=_checked_newton_rtol(newton_rtol))
    return sf.NewtonOptions() if adaptive else sf.NewtonOptions(rtol=NEWTON_RTOL)


#: build_model's other keyword options and their defaults (a checkpoint records them all)
_MODEL_DEFAULTS = {name: p.default for name, p in inspect.signature(build_model).parameters.items()
                   if p.kind is p.KEYWORD_ONLY and name not in ("geometry", "fiber_contact", "bending")}


def run(level: int = 1, *, t_end: float = T_END, n_elements: int | None = None, n_steps: int | None = None,
        progress: bool = True, vtk: Path | None = None, vtk_every: int = 1, bending: float | None = None,
        geometry: Geometry | str = TABLE4, fiber_contact: bool | None = None, method: str = "euler",
        rtol: float | None = None, atol: float | None = None, checkpoint: Path | None = None,
        checkpoint_every: int = CHECKPOINT_EVERY, resume: bool = False, start_dt: float | None = START_DT,
        newton_rtol: float | None = None, **model_options) -> UpperLimbResult:
    """Simulate one level (or explicit ``n_elements``/``n_steps`` over ``t_end``).

    With ``vtk`` a folder: a VTK series (fibers with their fields, bones as cylinders) of every
    ``vtk_every``-th step, ``upper_limb.pvd`` for ParaView.  With ``checkpoint`` a file, the run
    goes through :func:`skfiber.run.run_simulation`: the state and everything the run recorded
    (:class:`History`) are saved every ``checkpoint_every`` steps, at the end, on Ctrl-C and after
    a failed step; ``resume=True`` continues from it (same options and Δt, :func:`run_options`;
    the VTK series keeps its steps up to the checkpoint), and the outputs equal an uninterrupted
    run's bit for bit.  Each step is then a call of :func:`skfiber.simulate` of its own (what
    makes the resume exact), which costs time (``docs/performance.md``, Upper limb); without
    ``checkpoint`` one call takes all steps.  ``bending``: bending stiffness EI (N·m²) of the
    fibers (see the module notes); ``None`` or 0: none.  ``geometry``, ``fiber_contact`` and
    ``model_options``: as for :func:`build_model`.

    ``method``, ``rtol``, ``atol``: the time scheme of :func:`skfiber.simulate`; with
    tolerances (``method="bdf2"``) the steps are chosen by error control and the level's step Δt
    is the interval of the output times; ``checkpoint_every`` then counts output times, and the
    whole run is one solver call also with checkpoints (no cost per step).  ``atol`` defaults to
    ``rtol``/100, as on the command line.

    ``start_dt``: the steps of the first :data:`START_TIME` seconds are taken as substeps of at
    most ``start_dt`` (default :data:`START_DT`, the level-4 step: the start transient is
    integrated alike at every level; see the module notes and :func:`start_substeps`); the
    recorded times stay the level's steps.  ``None``: the level's step from the start (Table 5's
    uniform steps).  Not used with tolerances.

    ``newton_rtol``: Newton's relative tolerance (:func:`newton_options`; default :data:`NEWTON_RTOL` at
    fixed steps, the library's 1e-9 with tolerances).

    The states sampled every :data:`SAMPLE_DT` seconds are checked (:func:`check_sample`), every step's for
    strain softening (:class:`skfiber.softening.SofteningLog`), outside ``wall_time``; material past a force
    peak gives a :class:`skfiber.softening.SofteningWarning`.
    """
    EI = bending_stiffness(bending)
    adaptive = rtol is not None or atol is not None
    if adaptive:
        start_dt = None   # error control chooses the steps
        if atol is None:   # (a purely relative tolerance cannot be met from rest)
            atol = rtol / 100.0
    ne, nt, dt, options = run_options(level, t_end=t_end, n_elements=n_elements, n_steps=n_steps, bending=EI,
                                      geometry=geometry, fiber_contact=fiber_contact, method=method,
                                      start_dt=start_dt, newton_rtol=newton_rtol, adaptive=adaptive,
                                      **model_options)
    newton = sf.NewtonOptions(rtol=options["newton_rtol"])   # (newton_options, checked by run_options)
    n_start, parts = start_substeps(dt, start_dt)
    n_start = min(n_start, nt)
    if resume and checkpoint is None:
        raise ValueError("resume=True needs checkpoint (the file to resume from)")
    # building the model and a throw-away first step compile the numba kernels on the first
    # run on a machine (seconds) and load them from numba's cache later: say so if it takes long
    setup = time.perf_counter()
    notice = sf.solver.compile_notice("  compiling the numba kernels (the first run on this machine only, "
                                      "a few minutes at most; cached for later runs) …", enabled=progress,
                                      delay=2.0)
    try:
        model = build_model(ne, bending=EI, geometry=geometry, fiber_contact=fiber_contact, **model_options)
    except BaseException:
        notice.cancel()
        raise
    geometry = GEOMETRIES[geometry] if isinstance(geometry, str) else geometry
    history = History(model, sample_every=max(1, int(round(SAMPLE_DT / dt))), profile_times=PROFILE_TIMES,
                      snapshot_times=SNAPSHOT_TIMES, sample_dt=SAMPLE_DT)
    if resume:  # what the run recorded before its checkpoint
        history.restore(resume_point(checkpoint, dt=dt, options=checkpoint_options(options, rtol=rtol, atol=atol,
                                                                                  t_end=t_end, method=method)).extra)
    elif checkpoint is not None:
        Path(checkpoint).parent.mkdir(parents=True, exist_ok=True)
    # the throw-away step keeps the compilation out of the wall time
    start = time.perf_counter()
    try:
        state0 = model.initial_state()
        # Ctrl-C while the kernels compile: nothing of the run to keep
        sf.simulate(model, t_end=dt, dt=dt, state=state0, progress=False, on_interrupt="raise")
    finally:
        notice.cancel()
    warmup = time.perf_counter() - start
    if progress and time.perf_counter() - setup > 2.0:
        print(f"  compiled the numba kernels in {time.perf_counter() - setup:.1f} s", flush=True)
    if not resume:
        history.record(state0)
    bodies = body_cylinders(model) if vtk is not None else None
    if checkpoint is None:  # one simulate call for all steps (a little faster than one call per step)
        writer = None if vtk is None else VTKSeries(vtk, model, name=SERIES_NAME, bodies=bodies)
        output_time = [0.0]

        def record(state, info):
            history.record(state, info)
            if writer is not None and (info.step % vtk_every == 0 or info.step == info.n_steps):
                tic = time.perf_counter()
                writer.write(state, info.step)
                output_time[0] += time.perf_counter() - tic

        if writer is not None:
            writer.write(state0, 0)
        start = time.perf_counter()
        bar = Progress() if progress else None   # one count of steps over the start and the rest
        state, retries, interrupted = state0, 0, False
        for step in range(1, n_start + 1):  # the start transient: each step in substeps, as run_simulation does
            part = sf.simulate(model, t_end=t_end if step == nt else step * dt, dt=dt / parts, state=state,
                               progress=False, method=method, store_every=sys.maxsize, newton_options=newton)
            retries += part.retries
            if part.interrupted:
                interrupted = True
                break
            state = part.final_state
            iterations = int(part.newton_iterations.sum())
            record(state, StepInfo(step, nt, t_end, iterations, part.retries, time.perf_counter() - start))
            if bar is not None:
                bar.update(step=step, n_steps=nt, t=state.t, t_end=t_end, newton=iterations, retries=retries)
        if bar is not None:
            if interrupted:  # (what is printed next starts a line of its own)
                bar.end()
            bar.count_on(steps=n_start, retries=retries)
        final = state
        if not interrupted and n_start < nt:
            def shifted(state, info):   # the steps after the start, numbered over the whole run
                record(state, dataclasses.replace(info, step=info.step + n_start, n_steps=nt))

            result = sf.simulate(model, t_end=t_end, dt=dt, state=state, callback=shifted, progress=bar or False,
                                 method=method, rtol=rtol, atol=atol, store_every=sys.maxsize,   # History keeps it
                                 newton_options=newton)
            final, interrupted = result.final_state, result.interrupted
            retries += result.retries
        wall = time.perf_counter() - start - history.check_time - output_time[0]
        resumed_from = None
    else:  # the run driver: one simulate call per step, so that a resumed run repeats it bit for bit
        outcome = run_simulation(model, t_end=t_end, dt=dt, out_dir=vtk, name=SERIES_NAME, output_every=vtk_every,
                                 checkpoint_file=checkpoint, checkpoint_every=checkpoint_every, resume=resume,
                                 options=options, checkpoint_extra=history.arrays, progress=progress,
                                 newton_options=newton,
                                 bodies=bodies, callback=history.record, method=method, rtol=rtol, atol=atol,
                                 substeps=None if adaptive else (lambda step: parts if step <= n_start else 1))
        wall = outcome.solve_time - history.check_time
        final, retries, interrupted = outcome.final_state, outcome.retries, outcome.interrupted
        resumed_from = outcome.resumed_from
    profiles = dict(history.profiles)
    if not profiles:  # a short run: the profile at its end
        profiles[float(final.t)] = {name: axial_force(model, final, name) for name in PROFILE_FIBERS}
    checks = run_checks([f.name for f in model.fibers], history.check_columns(), softening=history.softening)
    for name, (n, first) in checks.past_peak.items():
        if n:
            warnings.warn(f"{name} (level {level}): material past the force peak or minimum of its law in {n} of "
                          f"{checks.softening_states} states checked, first at t = {first:.4g} s, largest stretch "
                          f"{checks.max_stretch[name]:.3g}: the stretch localizes and the motion depends on "
                          "the mesh (strain softening)", SofteningWarning, stacklevel=2)
    states = history.snapshots + ([final] if not history.snapshots or history.snapshots[-1].t < final.t else [])
    return UpperLimbResult(
        level, ne, nt, paper_dofs(model), int(np.count_nonzero(~sf.solver.make_solver(model).fixed)),
        np.array(history.t), np.degrees(np.array(history.angle)),
        np.array(history.forces["biceps1.origin"]), np.array(history.forces["triceps1.origin"]),
        wall, np.array(history.newton, dtype=np.int32), retries, history.max_contacts, profiles, model, final,
        t_end, interrupted, warmup, EI, geometry.name, options["fiber_contact"], states, checks, resumed_from,
        newton.rtol,
    )


def _series_folder(vtk: Path, level: int, levels: list[int]) -> Path:
    """The folder of a level's VTK series: ``--vtk`` itself for one level, its ``levelN`` with ``--levels``."""
    return vtk if len(levels) == 1 else vtk / f"level{level}"


def report(results: list[UpperLimbResult]) -> str:
    lines = ["level  el./fiber  steps  d.o.f. (paper)  unknowns  Newton it. (mean/max)  retries  wall [s]  paper [s]  speed-up"]
    for r in results:
        dofs_paper, secs_paper = PAPER_TABLE5.get(r.level, (float("nan"), float("nan")))
        its = np.asarray(r.newton_iterations)
        # the paper's time is for the whole 8 s: a shorter, interrupted or resumed run is not comparable
        ratio = f"{secs_paper / r.wall_time:8.1f}×" if r.complete else "       —"
        lines.append(f"{r.level:5d}  {r.n_elements:9d}  {r.n_steps:5d}  {r.dofs:6d} ({dofs_paper})  {r.unknowns:8d}  "
                     f"{its.mean():10.2f} / {its.max():3d}        {r.retries:7d}  {r.wall_time:8.2f}  {secs_paper:9.1f}  "
                     f"{ratio}")
    lines.append("(wall: the time steps alone, as the paper's times; the wall of the run's last progress line includes "
                 "checkpoints, output files and the demo's checks as well)")
    for r in results:
        if r.resumed_from is not None:
            lines.append(f"level {r.level} was resumed from its checkpoint at step {r.resumed_from}: its wall time "
                         "is that of the steps after it")
        if r.interrupted:
            lines.append(f"level {r.level} was interrupted at t = {r.times[-1]:.4g} s "
                         f"({len(r.newton_iterations)} of {r.n_steps} steps): partial results")
    return "\n".join(lines)


def _write_outputs(results, out, *, snapshots=False):
    """_upper_limb_figures.write_outputs, imported as a sibling module (package or script)."""
    if __package__:
        from ._upper_limb_figures import write_outputs
    else:  # run as a script: demos/ is on sys.path
        from _upper_limb_figures import write_outputs
    return write_outputs(results, out, snapshots=snapshots)


def _resume_problem(path: Path, err: Exception, *, dt: float, t_end: float) -> str:
    """Why the checkpoint at ``path`` does not continue this run (``err``, resume_point's), in the demo's terms:
    a step size that differs is a --t-end that is not a multiple of the checkpoint's step."""
    try:
        written = load_checkpoint(path).dt
    except (OSError, ValueError):
        written = dt
    if written != dt:
        return (f"the checkpoint {path} was written with steps of {written:g} s, and --t-end {t_end:g} s gives steps "
                f"of {dt:.6g} s: give a --t-end that is a multiple of {written:g} s")
    return " ".join(str(err).split())


def main(argv: list[str] | None = None) -> list[UpperLimbResult]:
    # no abbreviations: '--out' (below) and '--output' are different options
    parser = ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False, epilog=PROGRESS_TERMS,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--level", type=positive_int, default=None, choices=sorted(LEVELS),
                        help="one level (default 1)")
    parser.add_argument("--levels", type=positive_int, nargs="+", choices=sorted(LEVELS),
                        help="several levels to compare")
    parser.add_argument("--t-end", type=positive_float, default=T_END,
                        help="end time in s (default 8); the level's steps are scaled with it, so the step stays "
                             "close to the level's (a whole number of equal steps, said at the start)")
    parser.add_argument("--output", type=folder_path, default=Path("upper_limb_output"),
                        help="directory for CSV/PNG files (default upper_limb_output)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--vtk", type=folder_path, default=None,
                        help="also write a VTK series (every step, or every --vtk-every-th) to this folder")
    parser.add_argument("--vtk-every", type=positive_int, default=None, metavar="K",
                        help="write every K-th step of the VTK series (default 1; the last step always; needs "
                             "--vtk or --out)")
    parser.add_argument("--out", type=folder_path, default=None,
                        help="one folder for everything: the CSV/PNG files and the VTK series upper_limb.pvd, with "
                             "--levels one series a level in DIR/level1/, DIR/level2/, … (what 'skfiber run upper-limb "
                             "--out DIR' passes; --output/--vtk go to other folders)")
    parser.add_argument("--bending", type=nonnegative_float, default=None, metavar="EI",
                        help="add bending stiffness EI (N·m², finite, ≥ 0) to every fiber: the residual "
                             "EI ∫ x_ss · ξ_ss dS as a user term, its tangent derived automatically "
                             "(default: none, the paper's cables; 0 is the same)")
    parser.add_argument("--geometry", choices=sorted(GEOMETRIES), default=TABLE4.name,
                        help="attachment geometry (default table4; 'softening': the earlier geometry whose "
                             "triceps is stretched past its force peak)")
    parser.add_argument("--fiber-contact", choices=("on", "off"), default=None,
                        help="fiber–fiber contact (default: on for table4, off for softening)")
    parser.add_argument("--contact-gap", choices=("closest_point", "smallest"), default=None,
                        help="gap of fiber–fiber contact: closest_point (the paper's eqs. 40, 66; jumps where two "
                             "closest points of different radius swap) or smallest (the smallest gap over the "
                             "partner fiber, continuous; slower, docs/performance.md). Default: smallest with "
                             "--rtol/--atol (error control stops at such jumps), else closest_point")
    parser.add_argument("--stretch-gradient", type=nonnegative_float, default=0.0, metavar="C",
                        help="gradient-of-stretch regularization (c/2) ∫ (dλ/dS)² dS with c in N·m² (default 0: "
                             "none; e.g. 20 with --geometry softening makes its localized band mesh-independent)")
    parser.add_argument("--snapshots", action="store_true",
                        help="also render snapshots.png (paper Fig. 13, needs pyvista)")
    parser.add_argument("--checkpoint-every", type=positive_int, default=None, metavar="K",
                        help="save the run's state and records every K steps (and at the end, on Ctrl-C and after a "
                             "failed step) to upper_limb_levelL_checkpoint.npz in the --output/--out folder "
                             "(default 50)")
    parser.add_argument("--no-checkpoints", action="store_true",
                        help="write no checkpoints: all steps in one solver call, faster (docs/performance.md; each step "
                             "of a run with checkpoints is a call of its own, which makes its resume exact); no "
                             "--resume")
    parser.add_argument("--method", choices=("euler", "bdf2"), default=None,
                        help="time scheme: backward Euler (the paper's; the default at fixed steps) or variable-step "
                             "BDF2 (order 2; the default with --rtol/--atol); at fixed steps BDF2 runs levels 1–3, and "
                             "at level 4 Newton stalls in the start transient as the biceps goes slack")
    parser.add_argument("--rtol", type=positive_float, default=None,
                        help="steps by local error control at this relative tolerance (BDF2; atol = rtol/100 unless "
                             "--atol is given); the level's step is then the output interval (the summary's steps, "
                             "newton_mean and --checkpoint-every count output intervals; default: none, fixed steps)")
    parser.add_argument("--atol", type=positive_float, default=None,
                        help="absolute tolerance of the error control (default: rtol/100); alone, without --rtol, "
                             "the error control has no relative tolerance")
    parser.add_argument("--newton-rtol", type=positive_float, default=None, metavar="R",
                        help="Newton's relative tolerance: ‖G‖ ≤ R × the largest force term (default 1e-5 at fixed "
                             "steps, which changes the elbow angle by at most 7.1e-5° against 1e-9 at levels 1–4; "
                             "1e-9 with --rtol/--atol)")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the checkpoints in the --output/--out folder, with the same options "
                             "(the first level must have one; a later level without one starts afresh); the "
                             "outputs equal those of an uninterrupted run")
    args = parser.parse_args(argv)
    if args.vtk_every is not None and args.vtk is None and args.out is None:
        parser.error(f"--vtk-every {args.vtk_every} thins the VTK series, which only --vtk DIR or --out DIR "
                     "writes; add one of them, or leave out --vtk-every")
    args.vtk_every = 1 if args.vtk_every is None else args.vtk_every
    if args.out is not None:
        if args.output != parser.get_default("output") or args.vtk is not None:
            parser.error("--out names one folder for all files; give either --out or --output/--vtk")
        args.output, args.vtk = args.out, args.out
    if args.resume and args.no_checkpoints:
        parser.error("--resume continues from a checkpoint; leave out --no-checkpoints")
    if args.no_checkpoints and args.checkpoint_every is not None:
        parser.error("--no-checkpoints writes none; leave out --checkpoint-every (or --no-checkpoints)")
    if args.levels is not None and len(set(args.levels)) != len(args.levels):
        parser.error(f"--levels must name different levels, got {' '.join(map(str, args.levels))}")
    if args.level is not None and args.levels is not None:
        parser.error(f"--level {args.level} and --levels {' '.join(map(str, args.levels))} both name the levels to "
                     "run; give one of them")
    if args.newton_rtol is not None and not args.newton_rtol < 1:
        parser.error(f"--newton-rtol must be below 1 (a relative tolerance, e.g. 1e-5), got {args.newton_rtol:g}")
    adaptive = args.rtol is not None or args.atol is not None
    if adaptive:
        if args.method == "euler":
            parser.error("--rtol/--atol choose the steps by error control, which needs --method bdf2")
        if args.atol is None:
            args.atol = args.rtol / 100.0
    method = args.method or ("bdf2" if adaptive else "euler")
    levels = args.levels or [args.level or 1]
    fiber_contact = None if args.fiber_contact is None else args.fiber_contact == "on"
    if fiber_contact and args.geometry == SOFTENING.name:
        parser.error(f"--fiber-contact on does not go with --geometry {SOFTENING.name}: its triceps fibers start "
                     "overlapping, a start that fiber–fiber contact cannot admit; leave --fiber-contact off there")
    contact_on = GEOMETRIES[args.geometry].fiber_contact if fiber_contact is None else fiber_contact
    if args.contact_gap is not None and not contact_on:
        why = "--fiber-contact off" if fiber_contact is not None else f"the default of --geometry {args.geometry}"
        parser.error(f"--contact-gap {args.contact_gap} sets the gap of fiber–fiber contact, which is off here "
                     f"({why}): leave --contact-gap out")
    contact_gap = args.contact_gap or ("smallest" if adaptive else "closest_point")
    options = dict(t_end=args.t_end, bending=args.bending, geometry=args.geometry, fiber_contact=fiber_contact,
                   stretch_gradient=args.stretch_gradient, method=method, contact_gap=contact_gap,
                   newton_rtol=args.newton_rtol)
    if adaptive:
        options.update(rtol=args.rtol, atol=args.atol)
    tolerances = {key: options[key] for key in ("rtol", "atol") if key in options}
    planned = {}
    for level in levels:  # each level's options checked before any folder is made
        try:
            planned[level] = run_options(level, **{k: v for k, v in options.items() if k not in tolerances},
                                         **({"start_dt": None} if tolerances else {}),
                                         adaptive=bool(tolerances))  # (as run() does)
        except ValueError as err:
            parser.error(str(err))
    resume = {}
    for k, level in enumerate(levels):  # check the checkpoints before anything runs (or a folder is made)
        path = checkpoint_file(args.output, level)
        resume[level] = args.resume and path.exists()
        if args.resume and k == 0 and not resume[level]:
            parser.error(f"--resume: no checkpoint {path} of level {level}; run without --resume first")
        if resume[level]:
            _, _, dt, wanted = planned[level]
            try:
                stored = checkpoint_options(wanted, t_end=args.t_end, method=wanted["method"], **tolerances)
                checkpoint = resume_point(path, dt=dt, options=stored)
            except (OSError, ValueError) as err:
                parser.error(f"--resume: {_resume_problem(path, err, dt=dt, t_end=args.t_end)}")
            if args.t_end < checkpoint.state.t:  # (as run_simulation: at its time the resumed run is done)
                parser.error(f"--resume: --t-end must not be before the checkpoint's time {checkpoint.state.t:g} s "
                             f"(the run continues from there), got {args.t_end:g}")
            try:  # (the series in --vtk must be the checkpoint's: as run_simulation checks, before the model is built)
                if args.vtk is not None:
                    check_series(_series_folder(args.vtk, level, levels), SERIES_NAME, checkpoint.series)
            except (OSError, ValueError) as err:
                parser.error(f"--resume: {err}")
    # the checkpoints go to --output during the runs, the series to --vtk from the first step on: both or neither
    output_folders(parser, *((("--vtk", args.vtk),) if args.vtk is not None and args.out is None else ()),
                   ("--output" if args.out is None else "--out", args.output))
    try:  # (another process writing the upper limb's files there: refused before a file is touched)
        holding = hold_run(args.output, "upper_limb")
    except BlockingIOError as err:
        parser.error(str(err))
    if args.bending:
        print(f"bending stiffness EI = {args.bending:g} N·m² on every fiber "
              "(user term, tangent derived automatically)", flush=True)
    results = []
    for level in levels:
        _, n_steps, dt, _ = planned[level]
        print(f"level {level}: {LEVELS[level][0]} elements per fiber, {LEVELS[level][1]} steps over {T_END:g} s"
              + (f" (scaled to t_end = {args.t_end:g} s: "
                 + (f"outputs every {dt:.6g} s)" if adaptive else
                    f"{n_steps} step{'s' if n_steps > 1 else ''} of {dt:.6g} s)") if args.t_end != T_END else ""),
              flush=True)
        vtk = None if args.vtk is None else _series_folder(args.vtk, level, levels)
        results.append(run(level, progress=not args.quiet, vtk=vtk, vtk_every=args.vtk_every,
                           checkpoint=None if args.no_checkpoints else checkpoint_file(args.output, level),
                           checkpoint_every=args.checkpoint_every or CHECKPOINT_EVERY,
                           resume=resume[level], **options))
        if results[-1].interrupted:  # Ctrl-C: keep what was computed, run no further level
            if not args.no_checkpoints and checkpoint_file(args.output, level).is_file():
                print(f"level {level} interrupted; its checkpoint is {checkpoint_file(args.output, level)}: "
                      "continue with the same options and --resume", flush=True)
            elif not args.no_checkpoints:  # (stopped within its first step: no checkpoint yet)
                print(f"level {level} interrupted before its first step ended: nothing to resume", flush=True)
            break
    try:
        files = _write_outputs(results, args.output, snapshots=args.snapshots)
    except KeyboardInterrupt:  # (the runs are done: say so, and how to get the files)
        if not args.no_checkpoints and not results[-1].interrupted:
            print("interrupted while writing the output files; the runs are complete: the same options with "
                  "--resume write them", flush=True)
        raise
    print(report(results))
    r = results[-1]
    if len(results) > 1:
        print(f"level {r.level} (the last of --levels; each level's checks and the levels' differences follow):")
    scheme = (f"BDF2, steps by error control (rtol {args.rtol or 0.0:g}, atol {args.atol:g})" if adaptive
              else "BDF2" if method == "bdf2" else "backward Euler")
    print(f"geometry {r.geometry}, {scheme}, fiber–fiber contact "
          + (f"on (gap: {contact_gap})" if r.fiber_contact else "off")
          + f"; Newton to ‖G‖ ≤ {r.newton_rtol:g} × the largest force")
    shown = [tp for tp in (0, 0.5, 1, 2, 4, 8) if tp <= r.times[-1] + 1e-9]  # (a shorter or interrupted run: fewer)
    print(f"elbow angle (deg) at t = {', '.join(f'{tp:g}' for tp in shown)} s:",
          ", ".join(f"{np.interp(tp, r.times, r.angle_deg):.2f}" for tp in shown))
    samples = np.interp(np.arange(0, r.times[-1] + 1e-9, SAMPLE_DT), r.times, r.angle_deg)
    print(f"flexion range: {r.angle_deg.min():.2f} … {r.angle_deg.max():.2f} deg"
          + (f"; largest change between samples {SAMPLE_DT:g} s apart: {np.abs(np.diff(samples)).max():.2f} deg"
             if samples.size > 1 else ""))
    for res in results:  # (every level's: one that softens is named even when a later one does not)
        for line in describe_checks(res):
            print((f"level {res.level}: " if len(results) > 1 else "") + line)
    for res in results:   # N(θ) of every level: its wiggles fall like h³ (docs/theory.md)
        lines = describe_wiggles(res)
        print((f"level {res.level}: " if len(results) > 1 else "") + lines[0])
    print(lines[1])
    for a, b in zip(results, results[1:]):
        print(f"levels {a.level} and {b.level}: largest elbow-angle difference {angle_difference(a, b):.3f} deg, "
              f"attachment forces {100 * force_difference(a, b):.2f} %")
    checkpoints = [] if args.no_checkpoints else [path for path in (checkpoint_file(args.output, res.level)
                                                                   for res in results) if path.is_file()]
    print("wrote " + ", ".join(str(f) for f in files + checkpoints))
    diff = f" max_angle_diff_deg={angle_difference(results[-2], r):.3f}" if len(results) > 1 else ""
    # an interrupted run: the steps it took (those it planned follow as steps_planned)
    steps = len(r.newton_iterations) if r.interrupted else r.n_steps
    softened = int(any(res.checks.softening for res in results))  # (at any level run)
    print(f"summary: level={r.level} dofs={r.dofs} steps={steps} wall_s={r.wall_time:.2f} "
          f"paper_s={PAPER_TABLE5[r.level][1]} max_angle_deg={r.angle_deg.max():.2f} "
          f"final_angle_deg={r.angle_deg[-1]:.2f} newton_mean={np.mean(r.newton_iterations):.2f} "
          f"geometry={r.geometry} fiber_contact={int(r.fiber_contact)} "
          f"ff_contacts_max={r.checks.fiber_contacts.max()} softening={softened}{diff} "
          f"newton_rtol={r.newton_rtol:g} stretch_gradient_c={args.stretch_gradient:g} bending_EI={r.bending_EI:.12g}"
          + (f" resumed_from_step={r.resumed_from}" if r.resumed_from is not None else "")
          + (f" interrupted_at_s={r.times[-1]:.4g} steps_planned={r.n_steps} interrupted=1" if r.interrupted
             else ""))
    holding.release()
    return results


if __name__ == "__main__":
    run_script(main)
