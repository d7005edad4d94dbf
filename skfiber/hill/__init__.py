"""Hill-type muscle models of Millard et al. (2013), as in OpenSim's
``Millard2012EquilibriumMuscle``, vectorized over muscles and time points.

Modules, each importing only those above it:

* ``checks`` — parameter checks and SimTK's tolerances;
* ``curve_tables`` — the coefficients and inverse table a Bézier curve is
  evaluated from; ``curve_kernels`` — the compiled (numba) curve evaluation and
  damped fiber-velocity solve on them;
* ``bezier`` — the smooth segmented quintic-Bézier curve
  (:class:`SmoothSegmentedCurve`, :func:`corner_control_points`);
* ``curves`` — the five default curves (active force–length, force–velocity
  and its inverse, passive fiber force–length, tendon force–length) with
  OpenSim's parameters;
* ``parameters``, ``pennation``, ``activation``, ``response`` — muscle
  parameters and the curves per formulation, the fixed-height pennation model,
  first-order activation dynamics, the result of an evaluation;
* ``damped`` — the damped fiber-velocity solve (eq. 3);
* ``musculotendon`` — :class:`Millard2012Muscle`, the equilibrium (eqs. 1–2),
  damped equilibrium (eq. 3) and rigid-tendon (eqs. 4–7) models;
* ``actuator`` — the :class:`HillActuator`, a muscle along a path of body
  points as a force element of :class:`skfiber.rigid.RigidSystem` (its states
  integrated with the bodies).

Examples
--------
>>> import numpy as np
>>> from skfiber.hill import ActiveForceLengthCurve, Millard2012Muscle, MuscleParameters
>>> float(ActiveForceLengthCurve()(1.0))
1.0
>>> muscle = Millard2012Muscle(MuscleParameters(optimal_fiber_length=0.1, tendon_slack_length=0.2))
>>> rest = muscle.static_equilibrium(activation=[0.2, 1.0], musculotendon_length=0.3)
>>> bool(np.all(rest.tendon_force > 0)), rest.fiber_velocity.shape
(True, (2,))
"""
from .curves import (
    ActiveForceLengthCurve,
    CurveValues,
    FiberForceLengthCurve,
    ForceVelocityCurve,
    ForceVelocityInverseCurve,
    SmoothSegmentedCurve,
    TendonForceLengthCurve,
    corner_control_points,
    scale_curviness,
)
from .actuator import HillActuator
from .musculotendon import (
    FORMULATIONS,
    FirstOrderActivation,
    FixedHeightPennation,
    Formulation,
    Millard2012Muscle,
    MuscleCurves,
    MuscleParameters,
    MusculotendonResponse,
)

__all__ = [
    "ActiveForceLengthCurve",
    "CurveValues",
    "FiberForceLengthCurve",
    "ForceVelocityCurve",
    "ForceVelocityInverseCurve",
    "SmoothSegmentedCurve",
    "TendonForceLengthCurve",
    "corner_control_points",
    "scale_curviness",
    "FORMULATIONS",
    "FirstOrderActivation",
    "HillActuator",
    "FixedHeightPennation",
    "Formulation",
    "Millard2012Muscle",
    "MuscleCurves",
    "MuscleParameters",
    "MusculotendonResponse",
]
