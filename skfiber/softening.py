"""Strain softening of a stress law: where the axial force N(λ) stops growing with stretch.

A cable carries the axial force N = π r0² λ S (r0: reference radius, S: the
physical 2nd Piola–Kirchhoff stress of the law).  In a quasi-static pull the
cable is stable only where N grows with λ: past a local maximum of N(λ)
(a *force peak*), a longer piece of the cable carries the same force with
less stretch elsewhere, so the stretch localizes into a band whose width
the continuum model does not fix — it is set by the mesh (the band is one
or a few elements wide) and so is everything that depends on it (strain
softening; see ``docs/theory.md``).  The paper's active stress (eq. 32)
has such a peak wherever the active part dominates the passive one: its
force–length curve falls past λopt.

The same holds in shortening: below a local minimum of N(λ) a shorter piece
pulls harder (the descending limb of an active force–length curve whose
optimum lies below the reference length), and the shortening localizes.

This module finds the force peak above the reference and the force minimum
below it for any :class:`~skfiber.materials.StressLaw` from the slope

    dN/dλ ∝ d(λ S)/dλ = S + λ ∂S/∂λ       (at λ̇ = 0, the static branch)

with the law's own ∂S/∂λ, and tells which material points lie off the rising
branch between them.

Examples
--------
>>> from skfiber.materials import MaterialPoint, paper_law
>>> from skfiber.softening import force_peak_stretch, past_force_peak
>>> triceps = paper_law(sigma0=16.0, mu_muscle=2e4, mu_tendon=1e6, eta_muscle=1e3, eta_tendon=1e3, s_max=1.4e7)
>>> peak = force_peak_stretch(triceps, muscle_fraction=1.0, activation=0.016)
>>> round(float(peak), 2)                           # N(λ) of the pure muscle peaks here …
1.15
>>> past_force_peak(triceps, MaterialPoint(stretch=[1.1, 1.3, 3.3], stretch_rate=0.0,
...                                         muscle_fraction=1.0, activation=0.016)).tolist()
[False, True, True]
>>> float(force_peak_stretch(triceps, muscle_fraction=0.0, activation=0.016))   # … the tendon has none
inf
>>> short_optimum = paper_law(s_max=1e5, lam_opt=0.7)       # Table 1, but the optimum below the reference
>>> round(float(force_minimum_stretch(short_optimum, muscle_fraction=1.0, activation=1.0)), 3)
0.965
>>> past_force_peak(short_optimum, MaterialPoint(stretch=[0.98, 0.9], stretch_rate=0.0, muscle_fraction=1.0,
...                                               activation=1.0)).tolist()     # shortened past the minimum
[False, True]
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
import scipy.sparse as sps

from .core.warn import warn
from .materials import SYMBOLS, MaterialPoint, StressLaw, SumLaw, SymbolicLaw

#: the shortest stretch the search below the reference goes down to (a fiber shortened to 1/1000 of its length)
SHORTEST_STRETCH = 1e-3

__all__ = ["SofteningWarning", "force_slope", "force_peak_stretch", "force_minimum_stretch", "past_force_peak",
           "warn_if_past_force_peak", "FiberSoftening", "SofteningCheck", "SofteningLog"]


class SofteningWarning(UserWarning):
    """Material past the force peak (or, shortened, the force minimum) of its law: the result depends on the mesh."""


def force_slope(law: StressLaw, point: MaterialPoint) -> np.ndarray:
    """d(λ S)/dλ = S + λ ∂S/∂λ (Pa) at the points' stretch, at λ̇ = 0.

    The axial force N = π r0² λ S grows with stretch where this is > 0.

    Examples
    --------
    >>> from skfiber.materials import MaterialPoint, passive_kelvin_voigt
    >>> law = passive_kelvin_voigt(mu_muscle=1e4, mu_tendon=1e4, eta_muscle=0.0, eta_tendon=0.0)
    >>> float(force_slope(law, MaterialPoint(stretch=1.0, stretch_rate=0.0)))   # μ (1 + 2/λ³)
    30000.0
    """
    lam = np.asarray(point.stretch, dtype=float)
    static = dataclasses.replace(point, stretch=lam, stretch_rate=np.zeros_like(lam))
    response = law(static)
    return np.asarray(response.stress + lam * response.d_stretch, dtype=float)


def force_peak_stretch(law: StressLaw, *, muscle_fraction=1.0, activation=0.0, theta=0.0, t: float = 0.0,
                       stretch_min: float = 1.0, stretch_max: float = 4.0, samples: int = 601) -> np.ndarray:
    """λ of the first force peak of N(λ) on [stretch_min, stretch_max]; ∞ where N does not fall there.

    ``muscle_fraction``, ``activation`` and ``theta`` broadcast against each other (one
    peak per combination).  The slope :func:`force_slope` is sampled with the resolution of
    ``samples`` equal steps (a coarse grid of at most 41 stretches, then the interval of the
    first sign change refined: about 60 evaluations per combination); the peak is its first
    sign change from ≥ 0 to < 0, located by linear interpolation between the two samples
    (``stretch_min`` itself where it is < 0 there).

    Raises
    ------
    ValueError
        For a range that is not 0 < stretch_min < stretch_max (finite), or fewer than 2 samples.
    """
    _check_range(stretch_min, stretch_max, samples)
    return _first_fall(law, stretch_min, stretch_max, muscle_fraction, activation, theta, t, samples, none=np.inf)


def force_minimum_stretch(law: StressLaw, *, muscle_fraction=1.0, activation=0.0, theta=0.0, t: float = 0.0,
                          stretch_min: float = 0.2, stretch_max: float = 1.0, samples: int = 601) -> np.ndarray:
    """λ of the first local minimum of N(λ) below ``stretch_max``, followed towards shorter lengths; 0 where N
    falls all the way down to ``stretch_min``.

    Shorter than that minimum the fiber pulls harder the more it shortens (dN/dλ < 0): the descending limb of an
    active force–length curve whose optimum lies below the reference length.  ``stretch_max`` itself where N
    already rises as λ falls there.  The search is that of :func:`force_peak_stretch`, run from ``stretch_max``
    down to ``stretch_min``; the arguments broadcast and are checked the same way.

    Examples
    --------
    >>> from skfiber.materials import paper_law
    >>> law = paper_law(s_max=1e5, lam_opt=0.7)
    >>> force_minimum_stretch(law, muscle_fraction=[0.0, 1.0], activation=1.0).round(3).tolist()  # tendon: none
    [0.0, 0.965]
    >>> float(force_minimum_stretch(paper_law(s_max=1e5, lam_opt=0.8), activation=1.0))  # the reference falls
    1.0
    """
    _check_range(stretch_min, stretch_max, samples)
    return _first_fall(law, stretch_max, stretch_min, muscle_fraction, activation, theta, t, samples, none=0.0)


def _check_range(stretch_min, stretch_max, samples) -> None:
    if not (np.isfinite(stretch_min) and np.isfinite(stretch_max) and 0.0 < stretch_min < stretch_max):
        raise ValueError(f"need 0 < stretch_min < stretch_max (finite), got stretch_min={stretch_min!r}, "
                         f"stretch_max={stretch_max!r}")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 2:
        raise ValueError(f"samples must be an integer ≥ 2, got {samples!r}")


def _unread_parameters(law) -> frozenset[str]:
    """The parameters of a material point (``muscle_fraction``, ``activation``, ``theta``) that ``law`` does not
    read: those whose symbols its expression lacks, for a symbolic law or a sum of them; none for other laws."""
    laws = law.laws if isinstance(law, SumLaw) else (law,)
    if not all(isinstance(part, SymbolicLaw) for part in laws):
        return frozenset()
    return _unread_symbols(tuple(part.expression for part in laws))


@functools.lru_cache(maxsize=64)
def _unread_symbols(expressions: tuple) -> frozenset[str]:
    """:func:`_unread_parameters` of symbolic laws with these expressions (cached: a check runs every step)."""
    used = set().union(*(expression.free_symbols for expression in expressions))
    return frozenset(name for name in ("muscle_fraction", "activation", "theta") if SYMBOLS[name] not in used)


def _first_fall(law, start, stop, muscle_fraction, activation, theta, t, samples, *, none: float) -> np.ndarray:
    """The first λ on the way from ``start`` to ``stop`` (either direction) where dN/dλ turns from ≥ 0 to < 0,
    per combination of (γM, α, θ); ``start`` where it is < 0 there, ``none`` where it stays ≥ 0."""
    gm, alpha, th = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (muscle_fraction, activation, theta)))
    shape = gm.shape
    # one search per distinct combination of the parameters the law reads (a fiber's points share γM and α)
    unread = _unread_parameters(law)
    combinations = np.stack([np.zeros(gm.size) if name in unread else v.reshape(-1)
                             for name, v in (("muscle_fraction", gm), ("activation", alpha), ("theta", th))], axis=1)
    order = np.lexsort(combinations.T[::-1])
    ordered = combinations[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    if np.count_nonzero(new) < 0.8 * order.size:
        distinct = ordered[new]
        inverse = np.empty(order.size, dtype=np.intp)
        inverse[order] = np.cumsum(new) - 1
        found = _first_fall(law, start, stop, distinct[:, 0], distinct[:, 1], distinct[:, 2], t, samples, none=none)
        return found[inverse].reshape(shape)
    # in two stages with the resolution of `samples` equal steps: a coarse grid of `coarse` + 1 points, then the
    # coarse interval of each first sign change in `fine` steps (about 60 evaluations per point, not `samples`)
    coarse = min(int(samples) - 1, 40)
    fine = max(1, int(np.ceil((int(samples) - 1) / coarse)))

    def slope_at(lam, idx):  # lam (k, m) for the combinations idx (m,)
        return force_slope(law, MaterialPoint(lam, 0.0, theta=th.reshape(-1)[idx][None, :], t=t,
                                              muscle_fraction=gm.reshape(-1)[idx][None, :],
                                              activation=alpha.reshape(-1)[idx][None, :]))

    every = np.arange(gm.size)
    lam = np.broadcast_to(np.linspace(start, stop, coarse + 1)[:, None], (coarse + 1, gm.size))
    slope = slope_at(lam, every)
    falling = slope < 0.0
    first = np.argmax(falling, axis=0)
    found = np.full(gm.size, float(none))
    has = falling.any(axis=0)
    found[has & (first == 0)] = start
    inner = np.flatnonzero(has & (first > 0))
    if inner.size:
        i = first[inner]
        lo, hi = lam[i - 1, inner], lam[i, inner]
        lam_f = lo[None, :] + (hi - lo)[None, :] * np.linspace(0.0, 1.0, fine + 1)[:, None]
        slope_f = slope_at(lam_f, inner)
        slope_f[0], slope_f[-1] = slope[i - 1, inner], slope[i, inner]  # (the coarse values, for the same bracket)
        j = np.argmax(slope_f < 0.0, axis=0)  # ≥ 1: the last point falls, the first does not
        cols = np.arange(inner.size)
        s0, s1 = slope_f[j - 1, cols], slope_f[j, cols]
        l0, l1 = lam_f[j - 1, cols], lam_f[j, cols]
        found[inner] = l0 + (l1 - l0) * s0 / (s0 - s1)
    return found.reshape(shape)


def past_force_peak(law: StressLaw, point: MaterialPoint, *, stretch_min: float = 1.0,
                    samples: int = 601) -> np.ndarray:
    """True where a material point lies off the rising branch of N(λ) that holds the reference state.

    That is, stretched beyond the first force peak above ``stretch_min`` (the reference stretch), or shortened
    below the first force minimum under it (:func:`force_minimum_stretch`), each searched at the point's muscle
    fraction, activation, θ and t, up to the largest and down to the smallest stretch of the points.  Points at
    the reference itself are never off it.
    """
    lam = np.asarray(point.stretch, dtype=float)
    gm, alpha, th, lam = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in
                                               (point.muscle_fraction, point.activation, point.theta, lam)))
    past = np.zeros(lam.shape, dtype=bool)
    over = lam > stretch_min
    if over.any():
        peak = force_peak_stretch(law, muscle_fraction=gm[over], activation=alpha[over], theta=th[over], t=point.t,
                                  stretch_min=stretch_min, stretch_max=float(lam[over].max()) * (1 + 1e-9),
                                  samples=samples)
        past[over] = lam[over] > peak
    under = lam < stretch_min
    if under.any():
        lowest = max(float(lam[under].min()) * (1 - 1e-9), SHORTEST_STRETCH)
        least = force_minimum_stretch(law, muscle_fraction=gm[under], activation=alpha[under], theta=th[under],
                                      t=point.t, stretch_min=lowest, stretch_max=stretch_min,
                                      samples=samples)
        past[under] = lam[under] < least
    return past


def warn_if_past_force_peak(name: str, law: StressLaw, point: MaterialPoint, **kwargs) -> bool:
    """Issue a :class:`SofteningWarning` naming ``name`` if any point is off the rising branch of its law
    (:func:`past_force_peak`); True then."""
    past = past_force_peak(law, point, **kwargs)
    if not past.any():
        return False
    lam = np.broadcast_to(np.asarray(point.stretch, dtype=float), past.shape)
    reference = kwargs.get("stretch_min", 1.0)
    stretched, shortened = past & (lam > reference), past & (lam < reference)
    parts = ([f"{int(stretched.sum())} material point(s) stretched past the force peak of the law "
              f"(up to λ = {lam[stretched].max():.3g})"] if stretched.any() else []) + \
            ([f"{int(shortened.sum())} material point(s) shortened past the force minimum of the law (down to "
              f"λ = {lam[shortened].min():.3g})"] if shortened.any() else [])
    warn(f"{name}: {' and '.join(parts)} at t = {point.t:g} s: the axial force falls with stretch there, the "
         "stretch localizes and the result depends on the mesh (strain softening)", SofteningWarning)
    return True


@dataclasses.dataclass(frozen=True)
class FiberSoftening:
    """What :class:`SofteningCheck` finds in one state, per fiber (model order): the largest and smallest
    stretch of its sample points and whether any of them lies off the rising branch of the fiber's law
    (:func:`past_force_peak`)."""

    t: float
    max_stretch: np.ndarray
    min_stretch: np.ndarray
    past: np.ndarray


class SofteningCheck:
    """:func:`past_force_peak` on every fiber of a model, state by state.

    The stretch λ = ``|x′|/|X′|`` is sampled at ``points_per_element`` equal steps of θ per element (and the
    fiber's end), the same points as :func:`skfiber.postprocess.fiber_fields`; each point takes its fiber's
    muscle fraction and activation at the state's time.  What does not change from state to state (the
    samples' θ, ``|X′|`` and γM, the fibers grouped by law: one search per law) is computed once.

    Examples
    --------
    >>> import skfiber as sf
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.01, density=1000.0,
    ...                           law=sf.paper_law(), activation=lambda t: 1.0)
    >>> model = sf.Model([fiber])
    >>> state = model.initial_state()
    >>> SofteningCheck(model)(state).past.tolist()      # the reference state is on the rising branch
    [False]
    """

    def __init__(self, model, *, points_per_element: int = 4):
        if isinstance(points_per_element, bool) or not isinstance(points_per_element, (int, np.integer)) \
                or points_per_element < 1:
            raise ValueError(f"points_per_element must be an integer ≥ 1, got {points_per_element!r}")
        d = model.discretization
        self.model = model
        self.theta, self.reference_length, self.muscle_fraction = [], [], []
        for k, fiber in enumerate(model.fibers):
            theta = np.linspace(0.0, 1.0, d.fibers[k].n_elements * int(points_per_element) + 1)
            self.theta.append(theta)
            self.reference_length.append(np.linalg.norm(d.evaluate(d.reference_dofs, k, theta, 1), axis=0))
            self.muscle_fraction.append(np.asarray(fiber.muscle_fraction_at(theta), dtype=float))
        # x′ at every sample point of every fiber as one sparse product (fiber by fiber, 3 rows of n each)
        self._tangents = sps.vstack([d.evaluation_matrix(k, theta, 1) for k, theta in enumerate(self.theta)],
                                    format="csr")
        self._bounds = np.cumsum([0] + [3 * theta.size for theta in self.theta])
        groups: dict[int, list[int]] = {}
        for k, fiber in enumerate(model.fibers):
            groups.setdefault(id(fiber.law), []).append(k)
        self.law_groups = list(groups.values())

    def stretches(self, state) -> list[np.ndarray]:
        """λ at the sample points of each fiber in ``state``."""
        tangents = self._tangents @ (self.model.discretization.reference_dofs + state.u)
        return [np.linalg.norm(tangents[start:stop].reshape(3, -1), axis=0) / length
                for start, stop, length in zip(self._bounds[:-1], self._bounds[1:], self.reference_length)]

    def __call__(self, state) -> FiberSoftening:
        """The :class:`FiberSoftening` of ``state`` (one of this model's states)."""
        model = self.model
        stretch = self.stretches(state)
        past = np.zeros(len(model.fibers), dtype=bool)
        for group in self.law_groups:
            lam = np.concatenate([stretch[k] for k in group])
            point = MaterialPoint(lam, 0.0, theta=np.concatenate([self.theta[k] for k in group]), t=state.t,
                                  muscle_fraction=np.concatenate([self.muscle_fraction[k] for k in group]),
                                  activation=np.concatenate([np.full(stretch[k].size,
                                                                     model.fibers[k].activation_at(state.t))
                                                             for k in group]))
            off = past_force_peak(model.fibers[group[0]].law, point)
            bounds = np.cumsum([0] + [stretch[k].size for k in group])
            for j, k in enumerate(group):
                past[k] = bool(off[bounds[j]:bounds[j + 1]].any())
        return FiberSoftening(float(state.t), np.array([lam.max() for lam in stretch]),
                              np.array([lam.min() for lam in stretch]), past)


class SofteningLog:
    """:class:`SofteningCheck` of every state a run passes through, summed up per fiber in bounded memory.

    Call it with each state (each step's end); it keeps, per fiber (model order), the smallest and largest
    stretch seen, how many of the checked states had material off the rising branch of the fiber's law and
    the first such time.  :meth:`arrays` and :meth:`restore` carry the record across a checkpoint.

    Examples
    --------
    >>> import skfiber as sf
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.01, density=1000.0,
    ...                           law=sf.paper_law(), activation=lambda t: 1.0)
    >>> model = sf.Model([fiber])
    >>> log = SofteningLog(model)
    >>> found = log(model.initial_state())
    >>> log.states, log.softening, log.past_states.tolist()
    (1, False, [0])
    >>> print(log.describe())  # doctest: +NORMALIZE_WHITESPACE
    strain softening: none (the stretch λ at the fibers' sample points 1.000 … 1.000 over 1 state:
    every fiber on the rising branch of its law)
    """

    def __init__(self, model, *, points_per_element: int = 4):
        self.check = SofteningCheck(model, points_per_element=points_per_element)
        self.names = [f.name for f in model.fibers]
        n = len(self.names)
        #: states checked
        self.states = 0
        #: per fiber: the smallest and the largest stretch at its sample points over the states checked
        self.min_stretch = np.full(n, np.inf)
        self.max_stretch = np.full(n, -np.inf)
        #: per fiber: the states with material off the rising branch of its law, and the first one's time (nan: none)
        self.past_states = np.zeros(n, dtype=np.int64)
        self.first_past = np.full(n, np.nan)

    def __call__(self, state) -> FiberSoftening:
        """Check ``state`` (a state of the model), add it to the record and return what was found."""
        found = self.check(state)
        self.states += 1
        np.minimum(self.min_stretch, found.min_stretch, out=self.min_stretch)
        np.maximum(self.max_stretch, found.max_stretch, out=self.max_stretch)
        self.past_states += found.past
        self.first_past[found.past & np.isnan(self.first_past)] = found.t
        return found

    @property
    def softening(self) -> bool:
        """Whether material of any fiber left the rising branch of its law in a state checked."""
        return bool(self.past_states.any())

    def softened(self) -> dict[str, tuple[int, float]]:
        """Fiber name → (states off the rising branch, the first one's time), for the fibers that softened."""
        return {name: (int(n), float(t0)) for name, n, t0 in zip(self.names, self.past_states, self.first_past)
                if n}

    def describe(self) -> str:
        """One line on what the record shows (a result to print; :meth:`warn` warns)."""
        if not self.states:
            return "strain softening: no state checked"
        seen = (f"the stretch λ at the fibers' sample points {self.min_stretch.min():.3f} … "
                f"{self.max_stretch.max():.3f} over {self.states} state{'s' if self.states > 1 else ''}")
        if not self.softening:
            return f"strain softening: none ({seen}: every fiber on the rising branch of its law)"
        return "strain softening: WARNING, " + self._message() + f"; {seen}"

    def _message(self) -> str:
        softened = self.softened()
        first = min(t0 for _, t0 in softened.values())
        return (f"material left the rising branch of its law (past its force peak or minimum) in {len(softened)} "
                f"fiber(s) ({', '.join(softened)}), first at t = {first:.4g} s: the result depends on the mesh "
                "(strain softening)")

    def warn(self) -> bool:
        """Warn with a :class:`SofteningWarning` if any fiber softened; returns whether one did."""
        if self.softening:
            warn(self._message(), SofteningWarning)
        return self.softening

    def arrays(self) -> dict[str, np.ndarray]:
        """The record as arrays (for a checkpoint; :meth:`restore` takes them back)."""
        return {"states": np.array(self.states), "min_stretch": self.min_stretch.copy(),
                "max_stretch": self.max_stretch.copy(), "past_states": self.past_states.copy(),
                "first_past": self.first_past.copy()}

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Take back a record from :meth:`arrays` (of the same model)."""
        missing = [key for key in ("states", "min_stretch", "max_stretch", "past_states", "first_past")
                   if key not in arrays]
        if missing:
            raise ValueError(f"the softening record lacks {', '.join(missing)}: it was not made by "
                             "SofteningLog.arrays")
        shapes = {key: np.shape(arrays[key]) for key in ("min_stretch", "max_stretch", "past_states", "first_past")}
        if any(shape != (len(self.names),) for shape in shapes.values()):
            raise ValueError(f"the softening record is of another model: {len(self.names)} fibers here, the record's "
                             f"arrays have the shapes {shapes}")
        self.states = int(arrays["states"])
        self.min_stretch = np.array(arrays["min_stretch"], dtype=float)
        self.max_stretch = np.array(arrays["max_stretch"], dtype=float)
        self.past_states = np.array(arrays["past_states"], dtype=np.int64)
        self.first_past = np.array(arrays["first_past"], dtype=float)
