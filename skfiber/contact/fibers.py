"""Contact between fibers, two-half-pass (paper §2.4, §4.3, §4.4, Appendix A.3).

Every contact quadrature point x (Gauss–Legendre, ``quadrature_points`` per
element, default 5) of a taking-part fiber A finds, on **each other** fiber B
within reach, its closest point y (all real roots in [0, 1] of the quintic
eq. 67 on every candidate element of B, plus the element ends; see
:mod:`skfiber.contact.closest_point`).  With the *current* radii
r = r0/√λ, λ = |x′|/|X′| at x and at y (eqs. 21, 97),

    g = d / (r_x + r_y) − 1,   d = |y − x|,   n = (y − x)/d      (eqs. 40, 41, 43)

and the rational penalty law F(g) (eq. 44); with ``gap="smallest"`` y minimizes the gap instead of the
distance (:mod:`skfiber.contact.smallest_gap`).  The line force −F n (per current
length) acts on fiber A only and pushes it away from y; the other half pass
(the roles of A and B swapped) gives the reaction on B.  (The paper writes
t̄ = F n, eq. 42; taken literally that pulls the fibers together — the
physical sign is used here and checked by a test.)  With G = internal −
external the contribution is (eq. 65)

    G_c = Σ_k F(g_k) n_k · ξ(x_k) |x′(x_k)| w_k            (w_k in ξ; |x′| dξ = ds)

:class:`FiberContact` ties together :mod:`~skfiber.contact.fiber_geometry`
(reference data and current geometry), :mod:`~skfiber.contact.fiber_pairs`
(broad phase, closest points and gaps), :mod:`~skfiber.contact.fiber_tangent`
(the consistent tangent, Appendix A.3) and
:mod:`~skfiber.contact.fiber_safeguard` (the step bound, eqs. 69–73).

Examples
--------
>>> import numpy as np
>>> import skfiber as sf
>>> from skfiber.contact import PenaltyLaw
>>> from skfiber.contact.fibers import FiberContact
>>> a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05)
>>> b = sf.Fiber.straight((0.5, -0.5, 0.09), (0.5, 0.5, 0.09), n_elements=4, radius=0.05)
>>> model = sf.Model([a, b])
>>> contact = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0))
>>> ev = contact.evaluate(model, np.zeros(model.n_dofs), 0.0)
>>> ev.n_active > 0, bool(ev.residual[2:30:6].sum() > 0)   # fiber a pushed down: G_z > 0
(True, True)
"""
from __future__ import annotations

import weakref
from typing import Iterable

import numpy as np

from .base import BlockContactEvaluation, ContactEvaluation, PenaltyLaw
from .broadphase import NeighbourList
from .fiber_geometry import FiberSetup, fiber_setup, fiber_state
from .fiber_kernels import residual_loop
from .fiber_pairs import ContactPairs, check_pairs, find_pairs
from .fiber_safeguard import end_check_decides, end_state_kept, short_fractions, short_step, step_bound, step_motion
from .fiber_tangent import tangent_blocks

__all__ = ["FiberContact", "ContactPairs", "GAPS"]

#: the gap definitions of :class:`FiberContact` (``gap=``)
GAPS = ("closest_point", "smallest")


class FiberContact:
    """Fiber–fiber contact with the rational penalty law (paper §2.4).

    Parameters
    ----------
    law
        :class:`~skfiber.contact.base.PenaltyLaw` (κ in N/m, γ > 0).
    fibers
        The fibers that take part (objects, indices or names); default all.
        Contact is between different fibers only (never a fiber with itself).
    quadrature_points
        Gauss–Legendre contact points per element (default 5, as the paper).
    name
        Name of the contribution (``parts`` of :meth:`skfiber.Model.evaluate`).
    gap
        ``"closest_point"`` (the paper): y is the closest point of the partner's centerline (eq. 66) and
        g = d/(r_x + r_y) takes the radius there (eq. 40); g jumps where two closest points of different
        radius swap.  ``"smallest"``: g = min over the partner's points y of d/(r_x + r_y) − 1, the overlap of
        the fibers as unions of balls, continuous in the state (:mod:`skfiber.contact.smallest_gap`; needed
        by error-controlled time steps when radii vary along the fibers).

    Raises
    ------
    TypeError, ValueError
        For a law that is not a PenaltyLaw, a bad number of points, or an
        unknown fiber (when the model is first evaluated).

    Examples
    --------
    >>> import skfiber as sf
    >>> from skfiber.contact import FiberContact, PenaltyLaw
    >>> model = sf.Model([sf.Fiber.straight((0, 0, z), (1, 0, z), n_elements=4, radius=0.05) for z in (0.0, 0.2)])
    >>> model.add_contact(FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0), quadrature_points=3))
    FiberContact(κ=1000, γ=2, quadrature_points=3, name='fiber_contact', gap='closest_point')
    """

    def __init__(self, law: PenaltyLaw, *, fibers: Iterable | None = None, quadrature_points: int = 5,
                 name: str = "fiber_contact", gap: str = "closest_point"):
        if not isinstance(law, PenaltyLaw):
            raise TypeError(
                f"law must be a PenaltyLaw, got {law!r}; e.g. FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0))"
            )
        if isinstance(quadrature_points, bool) or not isinstance(quadrature_points, (int, np.integer)) \
                or not 1 <= quadrature_points <= 20:
            raise ValueError(
                f"quadrature_points must be an integer in 1 … 20 (contact points per element), got {quadrature_points!r}"
            )
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if gap not in GAPS:
            raise ValueError(f"gap must be one of {', '.join(map(repr, GAPS))}, got {gap!r}")
        self.gap = gap
        self.law = law
        self.fibers = None if fibers is None else list(fibers)
        if self.fibers is not None and len(self.fibers) < 2:
            raise ValueError(
                f"fiber–fiber contact needs at least 2 taking-part fibers, got {len(self.fibers)}; "
                "pass fibers=None for all fibers of the model"
            )
        self.quadrature_points = int(quadrature_points)
        self.name = name
        self._setups: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        # the broad phase kept over the states of a run (skfiber.contact.broadphase.NeighbourList)
        self._neighbours: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._forces = None  # the contact forces of the last search evaluated (evaluate)

    def __repr__(self) -> str:
        return (f"FiberContact(κ={self.law.stiffness:g}, γ={self.law.gamma:g}, "
                f"quadrature_points={self.quadrature_points}, name={self.name!r}, gap={self.gap!r})")

    # ------------------------------------------------------------------ setup
    def _setup(self, model) -> FiberSetup:
        """The :class:`~skfiber.contact.fiber_geometry.FiberSetup` of the model's discretization (cached)."""
        d = model.discretization
        s = self._setups.get(d)
        if s is None:
            s = fiber_setup(d, self.quadrature_points, self.fibers, self.name)
            self._setups[d] = s
        return s

    def check_model(self, model) -> None:
        """ValueError when the model has fewer than 2 taking-part fibers or the fibers are unknown
        (:meth:`skfiber.Model.add_contact` calls it)."""
        self._setup(model)

    # ------------------------------------------------------------------ pairs
    def pairs(self, model, u: np.ndarray, *, method: str = "auto") -> ContactPairs:
        """Contact point – partner fiber pairs within reach at displacement u."""
        s = self._setup(model)
        st = fiber_state(s, model, u, self.name)
        return find_pairs(model, s, st, gamma=self.law.gamma, method=method, smallest=self.gap == "smallest")

    def point_forces(self, model, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The line force of the other fibers at every contact point (for output).

        Returns (fiber (p,), θ (p,), force (p, 3)): at each contact quadrature point of every element,
        −F(g) n summed over the partners in touch (N/m per current length; 0 where none touches), the
        force density of the residual (eq. 65) before it is weighted and spread to the DOFs.

        Examples
        --------
        >>> import skfiber as sf
        >>> a = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, radius=0.05)
        >>> b = sf.Fiber.straight((0.5, -0.5, 0.09), (0.5, 0.5, 0.09), n_elements=4, radius=0.05)
        >>> model = sf.Model([a, b])
        >>> fiber, theta, force = FiberContact(PenaltyLaw(stiffness=1000.0, gamma=2.0)).point_forces(
        ...     model, np.zeros(model.n_dofs))
        >>> bool(force[fiber == 0, 2].min() < 0 == force[fiber == 0, 2].max())   # a pushed down, away from b
        True
        """
        s = self._setup(model)
        pairs = self.pairs(model, u)
        F, _ = self.law.force(pairs.gap)
        force = np.zeros((s.ne * s.nq, 3))
        np.add.at(force, pairs.point, -F[:, None] * (pairs.y - pairs.x) / pairs.distance[:, None])
        theta = (s.theta0[:, None] + s.h[:, None] * s.xi[None, :]).ravel()
        return np.repeat(s.fiber, s.nq), theta, force

    # ------------------------------------------------------------------ evaluate
    def evaluate(self, model, u: np.ndarray, t: float, *, tangent: bool = True) -> ContactEvaluation:
        """Residual contribution, tangent blocks and admissibility at displacement u.

        Raises
        ------
        FloatingPointError
            If a contact point penetrates beyond the law's limit (1 + γ g ≤ 0),
            two centerlines meet (d = 0), or the state is not finite.
        """
        s = self._setup(model)
        st, pr = self._search(model, s, u, t)
        forces = self._forces  # (pairs, F, dF, R, n_active) of the last evaluation; the pairs are the search's
        if forces is not None and forces[0] is pr:  # the same search (state and law): the tangent after the residual
            F, dF, R, n_active = forces[1:]
        else:
            N = model.discretization.n_dofs
            F, dF, R, n_active = residual_loop(pr.point, pr.element_x, st.x, pr.y, pr.distance, pr.gap, st.xp_norm,
                                               s.w, s.H0, s.scale, s.dofs, s.nq, float(self.law.stiffness),
                                               float(self.law.gamma), N)
            self._forces = (pr, F, dF, R, n_active)
        blocks = (tangent_blocks(model, s, st, pr, np.flatnonzero(pr.gap < 0), F, dF, smallest=self.gap == "smallest")
                  if tangent and n_active else None)
        return BlockContactEvaluation(R.copy(), blocks, admissibility=pr.admissibility.copy(), n_active=n_active)

    def _search(self, model, s: FiberSetup, u: np.ndarray, t: float):
        """(geometry, pairs) at u, checked admissible (FloatingPointError otherwise).

        The last state's search is kept: Newton asks for the residual of a trial state first,
        for the tangent at the same state when it solves with it, and the safeguard may have
        searched the state first (:meth:`max_step`).
        """
        key = (id(model.discretization), np.asarray(u, dtype=float).tobytes(), self.law, self.gap)
        memo = getattr(self, "_last", None)
        if memo is not None and memo[0] == key:
            return memo[1]
        st = fiber_state(s, model, u, self.name)
        neighbours = self._neighbours.get(model.discretization)
        if neighbours is None:
            neighbours = self._neighbours[model.discretization] = NeighbourList()
        pr = find_pairs(model, s, st, gamma=self.law.gamma, neighbours=neighbours, smallest=self.gap == "smallest")
        check_pairs(self.name, self.law.gamma, s, pr, t)
        self._last = (key, (st, pr))
        return st, pr

    # ------------------------------------------------------------------ safeguard
    def max_step(self, model, u: np.ndarray, du: np.ndarray, t: float, *, delta_bar: float,
                 u_end: np.ndarray | None = None) -> float:
        """Largest δ ∈ (0, 1] keeping e(δ) > δ̄ min(1 + γ g, 1) at every contact point (eqs. 69–73).

        A short step is checked from its two ends first (:func:`~skfiber.contact.fiber_safeguard.end_state_kept`):
        when no point of a contact fiber moves by more than M = :data:`~skfiber.contact.fiber_safeguard.SHORT_STEP`
        of the smallest contact radius, every contact point – partner fiber distance exceeds M at both ends
        (no centerline crosses another within the step), and eq. 71 holds at ``u_end`` (default u + du; the
        coupled path passes its exact next state) with the exact distances less the largest dip along the
        step, δ = 1.  When eq. 71 fails at the end of a short step, parts δ of it
        (:func:`~skfiber.contact.fiber_safeguard.short_fractions`: where the smallest margin, interpolated
        linearly, would reach the bound, then halved) are checked from their two ends in the same way (the
        part ends at u + δ du, the state Newton evaluates next, or on the straight segment to ``u_end``); δ is
        the first that passes or the estimate below, whichever is larger (no part is tried with the smallest
        gap and γ ≤ 1, where the end check cannot decide).  Otherwise the estimate is applied from δ = 0 and
        then again from the state it reached (at most ``SAFEGUARD_ROUNDS`` times): every restart uses the
        exact distances there, so a step that is admissible is not cut to the crude first estimate
        (:mod:`skfiber.contact.fiber_safeguard`); its
        lower bound of each distance stays > 0 (with γ < 1 any distance > 0 is admissible, so eq. 71 alone
        would let a centerline pass through another; even so, over its restarts a point can come very close
        to a partner's centerline: use γ > 1).
        """
        if not (isinstance(delta_bar, (int, float, np.floating)) and 0 < delta_bar < 1):
            raise ValueError(f"delta_bar δ̄ must lie in (0, 1), got {delta_bar!r}")
        s = self._setup(model)
        du = np.asarray(du, dtype=float)
        if du.shape != (model.discretization.n_dofs,) or not np.all(np.isfinite(du)):
            raise ValueError(f"du must be a finite array of shape ({model.discretization.n_dofs},)")
        if not np.any(du):
            return 1.0
        st, pr = self._search(model, s, u, t)
        walked = u_end is None  # u + δ du is the state Newton evaluates next (the fast coupled path passes u_end)
        if u_end is None:
            u_end = u + du
        else:
            u_end = np.asarray(u_end, dtype=float)
            if u_end.shape != du.shape:
                raise ValueError(f"u_end must be an array of shape {du.shape} (the state after the step), got "
                                 f"shape {u_end.shape}")
        motion = step_motion(s, u_end - u)
        kept, end_memo = 0.0, None  # (a part of a short step that passed; the end state's search)
        if short_step(s, st, motion):
            smallest = self.gap == "smallest"
            try:
                _, pr_end = self._search(model, s, u_end, t)
            except FloatingPointError:  # the end state is inadmissible
                pr_end = None
            if pr_end is not None and end_state_kept(s, pr, pr_end, delta_bar, gamma=self.law.gamma,
                                                     motion=motion, smallest=smallest):
                return 1.0
            # the end of the step breaks eq. 71: a part of it, checked from its two ends in the same way, or the
            # estimate, whichever allows more (both keep eq. 71)
            end_memo = self._last  # (for Newton's evaluation if the estimate gives δ = 1)
            for fraction in short_fractions(pr, pr_end, delta_bar) if end_check_decides(self.law.gamma,
                                                                                        smallest) else ():
                part = u + fraction * du if walked else u + fraction * (u_end - u)
                try:
                    _, pr_part = self._search(model, s, part, t)
                except FloatingPointError:
                    continue
                if end_state_kept(s, pr, pr_part, delta_bar, gamma=self.law.gamma, motion=step_motion(s, part - u),
                                  smallest=smallest):
                    kept = fraction
                    break
        estimate = step_bound(model, s, st, u, du, delta_bar, gamma=self.law.gamma, name=self.name)
        if kept > estimate:  # (the part's search is the last one kept: Newton evaluates there next)
            return kept
        if end_memo is not None:
            self._last = end_memo
        return estimate
