"""A muscle as a bundle of parallel fibers, simulated with PyElastica for comparison.

:func:`run_pyelastica_bundle` builds N Cosserat rods (``elastica.CosseratRod``), one per fiber, each
from its origin to its insertion — straight, or the parabola through a third "belly" point at θ = 1/2,
stress-free in that shape (rest curvature and twist from its reference directors) — clamped in position
at the origin and carried at the insertion by a forearm that turns about an elbow axis by a prescribed
angle.  Neighbouring rods touch
through PyElastica's rod–rod contact (``elastica.RodRodContact``), the muscle contracts through an
active tension added by a forcing class, and position Verlet steps the system until the end time or
a wall-clock limit, whichever comes first.  It reports the wall time per simulated second and the
muscle force (the pull of all rods on the insertion), so that a benchmark can put PyElastica next to
skfiber on the same motion.

What is approximated against skfiber's fiber model:

* Passive elasticity is PyElastica's linear Cosserat law with, per element, the small-strain Young's
  modulus E = 3 (γM μM + (1 − γM) μT) of the law S = (γM μM + (1 − γM) μT)(1 − λ⁻³); shear modulus
  E/3 (incompressible).  The rods also carry shear, bending and twist stiffness and rotary inertia,
  which the fiber model has not.
* The active tension π r0² γM α s_max exp(−|(λ/λopt − 1)/Δw|^ν)/λ of each element is an external force
  pair on its two nodes, along its current tangent, with the reference radius r0.
* Contact is PyElastica's penalty rod–rod contact (a spring and a dashpot on the overlap), only between
  the listed pairs.
* A uniform velocity damping (``AnalyticalLinearDamper``) keeps the explicit run quiet; no gravity.
* The insertion end is prescribed in position and velocity only; its orientation is free, as is the
  orientation at the origin.
"""
from __future__ import annotations

import math
import time as _time
from typing import Callable

import numpy as np

#: Poisson's ratio of the incompressible material: G = E / (2 (1 + ν)) = E/3.
POISSON = 0.5
#: Timoshenko shear factor PyElastica uses for a disk cross-section.
ALPHA_C = 27.0 / 28.0
#: Uniform velocity damping rate of ``AnalyticalLinearDamper`` (1/s).
DAMPING_RATE = 20.0
#: Interval between two samples of the muscle force (s, simulated time).
SAMPLE_DT = 1e-3
#: Safety factor on the estimated stability limit of position Verlet.
DT_SAFETY = 0.8

_active_kernel = None


def _get_active_kernel():
    """The compiled kernel of the active tension (numba, compiled once per process)."""
    global _active_kernel
    if _active_kernel is None:
        import numba

        @numba.njit(cache=False)
        def kernel(x, forces, rest_lengths, t_max, lam_opt, delta_w, nu):
            # t_max: π r0² γM α s_max per element; adds the contractile pair of each element to forces
            n = rest_lengths.shape[0]
            for e in range(n):
                if t_max[e] == 0.0:
                    continue
                d0 = x[0, e + 1] - x[0, e]
                d1 = x[1, e + 1] - x[1, e]
                d2 = x[2, e + 1] - x[2, e]
                length = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
                lam = length / rest_lengths[e]
                tension = t_max[e] * math.exp(-abs((lam / lam_opt - 1.0) / delta_w) ** nu) / lam
                s = tension / length
                forces[0, e] += s * d0
                forces[1, e] += s * d1
                forces[2, e] += s * d2
                forces[0, e + 1] -= s * d0
                forces[1, e + 1] -= s * d1
                forces[2, e + 1] -= s * d2

        _active_kernel = kernel
    return _active_kernel


def _rotation(axis: np.ndarray, a: float) -> np.ndarray:
    """The rotation matrix by the angle ``a`` (rad) about the unit vector ``axis`` (Rodrigues)."""
    k = axis
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(a) * kx + (1.0 - math.cos(a)) * (kx @ kx)


class _Forearm:
    """The rigid motion of the insertions: rotation by angle(t) about the line (center, axis).

    Caches the rotation R and the velocity matrix W = angle'(t) [axis]× R of the last time asked, since
    every rod asks for the same times; a point at ``rel`` from the center in the reference is then at
    center + R rel and moves with W rel.
    """

    def __init__(self, center: np.ndarray, axis: np.ndarray, angle: Callable[[float], float]):
        self.center, self.axis, self.angle = center, axis, angle
        self._skew = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
        self._t = None
        self.rot = np.eye(3)
        self.vel = np.zeros((3, 3))

    def at(self, t: float) -> "_Forearm":
        """Update R and W to time t (s); returns self."""
        if t != self._t:
            h = 1e-7
            a = float(self.angle(t))
            if t - h >= 0.0:
                rate = (float(self.angle(t + h)) - float(self.angle(t - h))) / (2.0 * h)
            else:
                rate = (float(self.angle(t + h)) - a) / h
            self._t, self.rot = t, _rotation(self.axis, a)
            self.vel = rate * (self._skew @ self.rot)
        return self


def centerlines(starts: np.ndarray, ends: np.ndarray, theta: np.ndarray, middles: np.ndarray | None = None
                ) -> np.ndarray:
    """The reference centerlines at the parameters ``theta``: (N, S, 3) (m), the fibers of
    :func:`skfiber.bundle.centerlines` (parabolas through start, middle and end; without ``middles`` the
    straight segments)."""
    from skfiber.bundle import centerlines as bundle_centerlines

    starts, ends = np.asarray(starts, float), np.asarray(ends, float)
    middles = 0.5 * (starts + ends) if middles is None else np.asarray(middles, float)
    return bundle_centerlines(np.stack([starts, middles, ends], axis=1), theta)


def _frames(nodes: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """PyElastica directors (3, 3, n) of the polygon ``nodes`` (n + 1, 3): rows d1, d2, d3 per element.

    d3 is the element's unit chord; d1 starts as ``normal`` projected normal to the first chord and is
    carried from element to element by parallel transport (the rotation of least angle taking one
    chord to the next), so the reference frame has no twist beyond the curve's own; d2 = d3 × d1.
    """
    chords = np.diff(nodes, axis=0)
    t = chords / np.linalg.norm(chords, axis=1)[:, None]
    n = len(t)
    d1 = np.empty((n, 3))
    v = normal - float(normal @ t[0]) * t[0]
    d1[0] = v / np.linalg.norm(v)
    for e in range(1, n):
        a, b = t[e - 1], t[e]
        k = np.cross(a, b)
        s, c = float(np.linalg.norm(k)), float(a @ b)
        v = d1[e - 1]
        if s > 1e-15:
            k = k / s
            v = v * c + np.cross(k, v) * s + k * float(k @ v) * (1.0 - c)
        v = v - float(v @ b) * b                      # remove round-off, renormalize
        d1[e] = v / np.linalg.norm(v)
    d2 = np.cross(t, d1)
    return np.stack([d1.T, d2.T, t.T])                  # (3, 3, n): directors[i, :, e] = d_{i+1} of e


def neighbour_pairs(starts: np.ndarray, ends: np.ndarray, radius: Callable, *, factor: float = 1.5,
                    samples: int = 41, middles: np.ndarray | None = None) -> np.ndarray:
    """The pairs (i, j), i < j, of fibers whose centerlines come within ``factor`` (r_i + r_j).

    The centerlines are sampled at ``samples`` equally spaced θ, and each sample of one is compared
    with the segment between consecutive samples of the other (a point–segment distance, exact enough
    for fibers that are nearly parallel).

    Parameters
    ----------
    starts, ends
        The fibers' end points, (N, 3) (m).
    radius
        r0(θ) (m), vectorized.
    factor
        The reach, in sums of radii.
    samples
        The number of θ samples per fiber.
    middles
        The fibers' points at θ = 1/2, (N, 3) (m): the centerlines are the parabolas through start,
        middle and end (see :func:`centerlines`); None: straight.

    Returns
    -------
    numpy.ndarray
        (M, 2) int array of pairs.
    """
    starts, ends = np.asarray(starts, float), np.asarray(ends, float)
    theta = np.linspace(0.0, 1.0, samples)
    r = np.asarray(radius(theta), float) * np.ones_like(theta)
    pts = centerlines(starts, ends, theta, middles)                                  # (N, S, 3)
    pairs = []
    n = len(starts)
    for i in range(n):
        for j in range(i + 1, n):
            a, b0, b1 = pts[i][:, None, :], pts[j][None, :-1, :], pts[j][None, 1:, :]
            seg = b1 - b0
            s = np.clip(np.einsum("ijk,ijk->ij", a - b0, seg) / np.einsum("ijk,ijk->ij", seg, seg), 0.0, 1.0)
            d = np.linalg.norm(a - (b0 + s[..., None] * seg), axis=-1)                  # (S, S-1)
            reach = factor * (r[:, None] + 0.5 * (r[None, :-1] + r[None, 1:]))
            if np.any(d <= reach):
                pairs.append((i, j))
    return np.array(pairs, dtype=int).reshape(-1, 2)


def _build(ea, nodes, curved, *, r0, gm, E, G, n_elements, pairs, center, axis, angle, density, s_max, lam_opt,
           delta_w, nu, activation, contact_stiffness, dt):
    """The finalized PyElastica system of the bundle: (sim, rods, samples, muscle_force, every, nu_c, m_e).

    ``nodes``: (N, n_elements + 1, 3) reference node positions (m); ``curved``: build each rod on them
    with its own directors and rest curvature (else straight from the first node to the last, as
    PyElastica's factory lays it out).  ``samples`` is the list the force sampler appends (t, force) to
    every ``every`` steps.
    """
    starts, ends = nodes[:, 0], nodes[:, -1]
    n_rods = len(nodes)
    chords = np.linalg.norm(ends - starts, axis=1)
    # the rods' reference lengths: the polygons' through the nodes (the chords for straight rods)
    lengths = np.linalg.norm(np.diff(nodes, axis=1), axis=2).sum(axis=1) if curved else chords
    area = math.pi * r0**2
    E_ref = float(E.max())

    # ---------------------------------------------------------------- PyElastica classes
    class Bundle(ea.BaseSystemCollection, ea.Constraints, ea.Forcing, ea.Damping, ea.Contact, ea.CallBacks):
        pass

    forearm = _Forearm(center, axis, angle)

    class PinnedEnds(ea.ConstraintBase):
        """Start node fixed at its reference place; end node carried by the forearm."""

        def __init__(self, start, end, **kwargs):
            super().__init__(**kwargs)
            self.start, self.rel = np.array(start), np.array(end) - center

        def constrain_values(self, system, time):
            system.position_collection[:, 0] = self.start
            system.position_collection[:, -1] = center + forearm.at(float(time)).rot @ self.rel

        def constrain_rates(self, system, time):
            system.velocity_collection[:, 0] = 0.0
            system.velocity_collection[:, -1] = forearm.at(float(time)).vel @ self.rel

    kernel = _get_active_kernel()
    gm_area_smax = area * gm * s_max

    class ActiveTension(ea.NoForces):
        """Contractile tension π r0² γM α(t) s_max f(λ)/λ of each element along its tangent."""

        def __init__(self):
            super().__init__()
            self._t, self._t_max = None, gm_area_smax * 0.0

        def apply_forces(self, system, time=0.0):
            t = float(time)
            if t != self._t:
                self._t, self._t_max = t, gm_area_smax * float(activation(t))
            kernel(system.position_collection, system.external_forces, system.rest_lengths, self._t_max,
                   float(lam_opt), float(delta_w), float(nu))

    # ---------------------------------------------------------------- the system
    sim = Bundle()
    rods = []
    for k in range(n_rods):
        direction = (ends[k] - starts[k]) / chords[k]
        helper = np.eye(3)[int(np.argmin(np.abs(direction)))]
        normal = np.cross(direction, helper)
        normal /= np.linalg.norm(normal)
        if curved:
            # Nodes on the curve, d3 along each chord (so rest lengths are the chords and the rest
            # shear/stretch σ is zero), d1 parallel-transported; the factory's kappa of these directors
            # is then taken as the rest curvature/twist, so the reference shape carries no stress.
            directors = _frames(nodes[k], normal)
            rod = ea.CosseratRod.straight_rod(n_elements, starts[k], direction, normal, float(lengths[k]), r0,
                                              density, youngs_modulus=E_ref, shear_modulus=E_ref / 3.0,
                                              position=np.ascontiguousarray(nodes[k].T), directors=directors)
            rod.rest_kappa[:] = rod.kappa
            rod.rest_sigma[:] = rod.sigma
        else:
            rod = ea.CosseratRod.straight_rod(n_elements, starts[k], direction, normal, float(lengths[k]), r0,
                                              density, youngs_modulus=E_ref, shear_modulus=E_ref / 3.0)
        # Per-element moduli: the factory builds S = diag(α G A, α G A, E A) and, on the Voronoi
        # nodes, B = the length-weighted mean of the neighbouring elements' diag(E I, E I, G J).
        rod.shear_matrix[:] *= (E / E_ref)[None, None, :]
        I1 = area**2 / (4.0 * math.pi)
        b_el = np.zeros((3, 3, n_elements))
        b_el[0, 0], b_el[1, 1], b_el[2, 2] = E * I1, E * I1, G * 2.0 * I1
        lr = rod.rest_lengths
        rod.bend_matrix[:] = (b_el[..., 1:] * lr[1:] + b_el[..., :-1] * lr[:-1]) / (lr[1:] + lr[:-1])
        sim.append(rod)
        rods.append(rod)
        sim.constrain(rod).using(PinnedEnds, constrained_position_idx=(0, -1))
        sim.add_forcing_to(rod).using(ActiveTension)
        sim.dampen(rod).using(ea.AnalyticalLinearDamper, uniform_damping_constant=DAMPING_RATE, time_step=dt)

    # Contact damping: about half the critical damping of the contact spring on one mean element.
    element_mass = density * float(np.mean(area)) * float(lengths.mean()) / n_elements
    contact_nu = math.sqrt(contact_stiffness * element_mass)
    for i, j in pairs:
        sim.detect_contact_between(rods[i], rods[j]).using(ea.RodRodContact, k=float(contact_stiffness),
                                                          nu=contact_nu)

    samples: list[tuple[float, float]] = []
    every = max(1, int(round(SAMPLE_DT / dt)))

    def muscle_force(t: float) -> float:
        """|Σ_k N_k t_k| over the rods' last elements at time t: elastic axial force plus active tension."""
        alpha = float(activation(t))
        total = np.zeros(3)
        for rod_k in rods:
            x = rod_k.position_collection
            d = x[:, -1] - x[:, -2]
            length = float(np.linalg.norm(d))
            tangent = d / length
            q = rod_k.director_collection[..., -1]
            n_lab = q.T @ rod_k.internal_stress[:, -1] / rod_k.dilatation[-1]
            lam = length / rod_k.rest_lengths[-1]
            active = gm_area_smax[-1] * alpha * math.exp(-abs((lam / lam_opt - 1.0) / delta_w) ** nu) / lam
            total += (float(n_lab @ tangent) + active) * tangent
        return float(np.linalg.norm(total))

    class ForceSampler(ea.CallBackBaseClass):
        """Samples the muscle force every ``every`` steps (registered on one rod, reads all)."""

        def make_callback(self, system, time, current_step):
            if current_step % every == 0:
                samples.append((float(time), muscle_force(float(time))))

    sim.collect_diagnostics(rods[0]).using(ForceSampler)
    sim.finalize()
    return sim, rods, samples, muscle_force, every, contact_nu, element_mass


def run_pyelastica_bundle(starts: np.ndarray, ends: np.ndarray, *, radius: Callable, muscle_fraction: Callable,
                          n_elements: int, pairs: np.ndarray, center, axis, angle: Callable[[float], float],
                          t_end: float, density: float, mu_muscle: float, mu_tendon: float, s_max: float,
                          lam_opt: float, delta_w: float, nu: float, activation: Callable[[float], float],
                          contact_stiffness: float, dt: float | None = None, wall_limit_s: float = 300.0,
                          progress: bool = True, middles: np.ndarray | None = None) -> dict:
    """Simulate the bundle with PyElastica and report its speed and muscle force.

    Parameters
    ----------
    starts, ends
        (N, 3) arrays (m): rod k goes from ``starts[k]`` (origin, clamped in position) to ``ends[k]``
        (insertion) at t = 0, straight unless ``middles`` is given.
    radius, muscle_fraction
        r0(θ) (m) and γM(θ) ∈ [0, 1] along each rod, θ ∈ [0, 1] from the origin; vectorized.  Taken at
        the element midpoints.
    n_elements
        The number of elements per rod (≥ 4 is advised; PyElastica asks for more than 1).
    pairs
        (M, 2) int array of the rod pairs (i, j) in contact (see :func:`neighbour_pairs`).
    center, axis
        A point of the elbow axis and its direction (m, normalized here).
    angle
        The elbow angle (rad) as a function of time (s); angle(0) must be 0.  Insertion k is at
        center + R(axis, angle(t)) (ends[k] − center).
    t_end
        The simulated time to reach (s).
    density
        ρ (kg/m³).
    mu_muscle, mu_tendon
        μM and μT (Pa) of the passive law; each element gets E = 3 (γM μM + (1 − γM) μT).
    s_max, lam_opt, delta_w, nu
        The active law: peak stress (Pa), optimal stretch, width and exponent of the force–length curve.
    activation
        α(t) ∈ [0, 1] as a function of time (s).
    contact_stiffness
        The rod–rod contact spring constant (N/m).
    dt
        The time step (s); default: ``DT_SAFETY`` times the stability limit of the stiffest element
        (see the code).
    wall_limit_s
        Stop after this much wall time of time stepping (s), checked every 100 steps.
    progress
        Print the simulated time reached about every 10 s of wall time.
    middles
        (N, 3) array (m) or None: rod k's reference centerline is then the parabola through
        ``starts[k]``, ``middles[k]`` (at θ = 1/2) and ``ends[k]`` (see :func:`centerlines`), its nodes at
        equally spaced θ, its elements the chords between them (the rest lengths of the active
        tension's λ), its directors d3 along the chords with d1 parallel-transported, and its rest
        curvature/twist that of these directors: the curved rod is stress-free at t = 0.  None:
        straight rods.

    Returns
    -------
    dict
        ``simulated_s`` (time reached, s), ``completed``, ``wall_s`` (time stepping), ``setup_s``
        (building and finalizing the system, with a few warm-up steps of a two-rod copy that compile
        the kernels), ``wall_per_simulated_s``, ``peak_force_N`` and ``final_force_N`` (the muscle
        force |Σ_k N_k t_k| over the rods' last elements, sampled every ``SAMPLE_DT``), ``dt``,
        ``steps``, ``n_rods``, ``n_pairs``, ``notes`` and ``reason`` ("t_end reached", "wall limit"
        or "non-finite state at t = … s").

    Raises
    ------
    ValueError
        For inconsistent shapes, a non-positive time or element count, or angle(0) ≠ 0.
    """
    setup_start = _time.perf_counter()
    import elastica as ea

    starts = np.asarray(starts, dtype=float)
    ends = np.asarray(ends, dtype=float)
    if starts.ndim != 2 or starts.shape[1] != 3 or starts.shape != ends.shape:
        raise ValueError(f"starts and ends must be (N, 3) arrays of the same shape, got {starts.shape} "
                         f"and {ends.shape}")
    if middles is not None:
        middles = np.asarray(middles, dtype=float)
        if middles.shape != starts.shape:
            raise ValueError(f"middles must be an (N, 3) array like starts, got {middles.shape}")
    n_rods = len(starts)
    n_elements = int(n_elements)
    if n_elements < 2:
        raise ValueError(f"n_elements must be ≥ 2, got {n_elements}")
    if not t_end > 0:
        raise ValueError(f"t_end must be > 0 (s), got {t_end!r}")
    pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= n_rods or np.any(pairs[:, 0] == pairs[:, 1])):
        raise ValueError("pairs must hold distinct rod indices in [0, N)")
    center = np.asarray(center, dtype=float)
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    if abs(float(angle(0.0))) > 1e-12:
        raise ValueError(f"angle(0) must be 0 (the reference configuration), got {angle(0.0)!r}")

    # ---------------------------------------------------------------- per-element properties
    theta = (np.arange(n_elements) + 0.5) / n_elements
    r0 = np.broadcast_to(np.asarray(radius(theta), dtype=float), theta.shape).copy()
    gm = np.clip(np.broadcast_to(np.asarray(muscle_fraction(theta), dtype=float), theta.shape), 0.0, 1.0)
    E = 3.0 * (gm * mu_muscle + (1.0 - gm) * mu_tendon)             # small-strain Young's modulus
    G = E / (2.0 * (1.0 + POISSON))
    if np.any(np.linalg.norm(ends - starts, axis=1) <= 0):
        raise ValueError("every rod needs distinct start and end points")
    curved = middles is not None
    nodes = centerlines(starts, ends, np.linspace(0.0, 1.0, n_elements + 1), middles)  # (N, n + 1, 3)
    element_lengths = np.linalg.norm(np.diff(nodes, axis=1), axis=2)                    # (N, n)
    if np.any(element_lengths <= 0):
        raise ValueError("two consecutive nodes of a rod coincide")

    # Default step.  Position Verlet is stable for dt < 2/ω_max.  Two stiff modes bound ω_max per
    # element: the axial (and bending) wave, ω ≈ 2 c / l with c = sqrt(E/ρ), and the rotation of an
    # element against its own shear stiffness, ω² = α G A / (ρ I) = 4 α G / (ρ r0²) — the rotary
    # inertia of a thin rod is small, so in the thin, stiff tendon this second limit is the tighter
    # one by far (≈ r0/l of the first).  PyElastica's rule of thumb dt = 0.01 l ignores the material
    # and is unstable here (tendon c = sqrt(3 μT / ρ) ≈ 1.7 km/s).
    if dt is None:
        l_min = float(element_lengths.min())
        dt_axial = np.min(l_min / np.sqrt(E / density))
        dt_shear = np.min(r0 / np.sqrt(ALPHA_C * G / density))
        dt = DT_SAFETY * float(min(dt_axial, dt_shear))
    dt = float(dt)
    n_steps = max(1, int(math.ceil(t_end / dt - 1e-9)))
    dt = t_end / n_steps                                             # land on t_end exactly

    common = dict(curved=curved, r0=r0, gm=gm, E=E, G=G, n_elements=n_elements, center=center, axis=axis, angle=angle,
                  density=density, s_max=s_max, lam_opt=lam_opt, delta_w=delta_w, nu=nu, activation=activation,
                  contact_stiffness=contact_stiffness)
    # Warm-up: step a two-rod copy a few times, so that numba's compilation (or loading from its
    # cache) of every kernel counts in the setup, not in the time stepping.
    if n_rods >= 2:
        w = _build(ea, nodes[:2], pairs=np.array([[0, 1]]), dt=dt, **common)
        stepper = ea.PositionVerlet()
        tw = 0.0
        for _ in range(3):
            tw = float(stepper.step(w[0], tw, dt))
    sim, rods, samples, muscle_force, every, contact_nu, element_mass = _build(ea, nodes, pairs=pairs, dt=dt,
                                                                                **common)
    stepper = ea.PositionVerlet()
    setup_s = _time.perf_counter() - setup_start

    # ---------------------------------------------------------------- time stepping
    wall_start = _time.perf_counter()
    next_report = wall_start + 10.0
    t, steps, reason = 0.0, 0, "t_end reached"
    while steps < n_steps:
        t = float(stepper.step(sim, t, dt))
        steps += 1
        if steps % 100 == 0 or steps == n_steps:
            if not all(np.all(np.isfinite(rod_k.position_collection)) for rod_k in rods):
                reason = f"non-finite state at t = {t:.6g} s"
                break
            now = _time.perf_counter()
            if now - wall_start > wall_limit_s and steps < n_steps:
                reason = "wall limit"
                break
            if progress and now >= next_report:
                print(f"  PyElastica bundle: t = {t:.5f} s of {t_end:g} s, {steps} steps, "
                      f"wall {now - wall_start:.1f} s", flush=True)
                next_report = now + 10.0
    wall_s = _time.perf_counter() - wall_start
    completed = reason == "t_end reached"
    finite = not reason.startswith("non-finite")
    if finite and (not samples or samples[-1][0] < t - 0.5 * dt):
        samples.append((t, muscle_force(t)))
    forces = np.array([f for _, f in samples if math.isfinite(f)])
    peak = float(forces.max()) if forces.size else float("nan")
    final = float(samples[-1][1]) if samples and finite else float("nan")
    notes = (("curved reference rods (parabolas through start, middle, end), stress-free at t = 0; "
              if curved else "straight reference rods; ") +
             f"per-element E = 3(γM μM + (1−γM) μT) in axial/shear/bend/twist stiffness, G = E/3; "
             f"AnalyticalLinearDamper uniform_damping_constant = {DAMPING_RATE:g} 1/s; "
             f"RodRodContact k = {contact_stiffness:g} N/m, nu = {contact_nu:.3g} N s/m "
             f"(≈ half critical on a mean element of {element_mass:.3g} kg); "
             f"active tension as external node forces; ends pinned in position only; no gravity; "
             f"force sampled every {every * dt:.3g} s")
    return {
        "simulated_s": t,
        "completed": completed,
        "wall_s": wall_s,
        "setup_s": setup_s,
        "wall_per_simulated_s": wall_s / t if t > 0 else float("inf"),
        "peak_force_N": peak,
        "final_force_N": final,
        "dt": dt,
        "steps": steps,
        "n_rods": n_rods,
        "n_pairs": int(len(pairs)),
        "notes": notes,
        "reason": reason,
    }
