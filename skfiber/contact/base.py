"""The contact protocol and the rational penalty law (paper eq. 44).

Examples
--------
>>> import numpy as np
>>> from skfiber.contact import PenaltyLaw
>>> law = PenaltyLaw(stiffness=500.0, gamma=4.0)
>>> F, dF = law.force(np.array([0.1, -0.1]))
>>> F.tolist()
[0.0, 83.33333333333334]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from ..core.jit import njit
from ..core.numbers import checked_real
from .gap import admissibility

__all__ = ["PenaltyLaw", "ContactEvaluation", "BlockContactEvaluation", "block_triplets", "Contact", "margins_kept",
           "penalty_force", "STEP_HINT"]

#: the advice at the end of an inadmissible-contact message (a state reached by a too large step); a start
#: state that is inadmissible gets other advice (skfiber.statics.check_admissible_start)
STEP_HINT = "take smaller load or time steps, or a larger penalty stiffness κ"


@dataclass(frozen=True)
class PenaltyLaw:
    """Line force magnitude F(g) = −κ g / (1 + γ g) for −1/γ < g < 0, 0 for g ≥ 0 (eq. 44).

    Parameters
    ----------
    stiffness
        κ, force per length (N/m), > 0.
    gamma
        γ > 0: the admissible penetration is g > −1/γ; F → ∞ as 1 + γ g → 0.

    Examples
    --------
    >>> from skfiber.contact import PenaltyLaw
    >>> law = PenaltyLaw(stiffness=1000.0, gamma=2.0)
    >>> F, dF = law.force([0.1, -0.25, -0.5])      # apart, in touch, at the limit g = −1/γ
    >>> F.tolist(), dF.tolist()
    ([0.0, 500.0, nan], [0.0, -4000.0, nan])
    """

    stiffness: float
    gamma: float

    def __post_init__(self):
        for name in ("stiffness", "gamma"):
            checked_real(f"contact {name} {'κ' if name == 'stiffness' else 'γ'}", getattr(self, name), above=0)

    def force(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """F(g) ≥ 0 and dF/dg; NaN where 1 + γ g ≤ 0 (inadmissible)."""
        g = np.asarray(g, dtype=float)
        F, dF = _force_loop(g.ravel(), float(self.stiffness), float(self.gamma))
        return F.reshape(g.shape), dF.reshape(g.shape)


@njit(inline="always", cache=True, error_model="numpy")
def penalty_force(g, kappa, gamma):  # pragma: no cover - compiled
    """(F, dF/dg) of the rational penalty law at one gap g: −κg/(1 + γg) for g < 0, 0 for g ≥ 0, NaN if 1 + γg ≤ 0."""
    s = admissibility(g, gamma)
    if s <= 0:
        return np.nan, np.nan
    if g < 0:
        return -kappa * g / s, -kappa / (s * s)
    return 0.0, 0.0


@njit(cache=True, error_model="numpy")
def _force_loop(g, kappa, gamma):  # pragma: no cover - compiled
    F = np.empty(g.size)
    dF = np.empty(g.size)
    for i in range(g.size):
        F[i], dF[i] = penalty_force(g[i], kappa, gamma)
    return F, dF


@dataclass
class ContactEvaluation:
    """What a contact contributes at one state.

    Attributes
    ----------
    residual
        (N,) contribution to the residual G (internal − external), i.e.
        −∫ t̄ · ξ ds over the contact points.
    rows, cols, values
        COO triplets of ∂residual/∂u (may couple different fibers).
    blocks
        ``(row_dofs, col_dofs, values)``, (g, nb), (g, nb), (g, nb, nb): the same
        tangent as dense blocks, when the contact makes it that way (fiber–fiber
        contact: one block per element and per element pair); None otherwise.
    admissibility
        1 + γ g at every contact quadrature point that has a partner in
        reach (for the safeguard and checks); all must be > 0.
    n_active
        Number of contact points with g < 0.
    margins
        ``(elements, m)`` with m[i, k] = 1 + γ g at contact point k of
        element ``elements[i]`` (sorted), for a contact whose safeguard is
        eq. 71 checked at the end of the step (``safeguard="trial"``): Newton
        then tries the full step first and checks it with
        :func:`margins_kept` from the two evaluations, instead of searching
        the contact points along the step.  None (default): use ``max_step``.
    """

    residual: np.ndarray
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    cols: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    admissibility: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_active: int = 0
    margins: tuple | None = None
    blocks: tuple | None = None


def block_triplets(row_dofs: np.ndarray, col_dofs: np.ndarray, blocks: np.ndarray):
    """COO (rows, cols, values) of element blocks ``(row_dofs, col_dofs, blocks)``, (g, nb), (g, nb),
    (g, nb, nb), in block order."""
    g, nb = row_dofs.shape
    rows = np.broadcast_to(row_dofs[:, :, None], (g, nb, nb)).ravel()
    cols = np.broadcast_to(col_dofs[:, None, :], (g, nb, nb)).ravel()
    return rows, cols, blocks.ravel()


class BlockContactEvaluation(ContactEvaluation):
    """A :class:`ContactEvaluation` whose tangent is made as element blocks (``blocks``, or None: no
    tangent); its COO triplets ``rows``, ``cols``, ``values`` are made from the blocks when first read
    (the coupled fast path reads the blocks only).

    Examples
    --------
    >>> ev = BlockContactEvaluation(np.zeros(2), (np.array([[0, 1]]), np.array([[1, 0]]),
    ...                                           np.array([[[1.0, 2.0], [3.0, 4.0]]])), n_active=1)
    >>> ev.rows.tolist(), ev.cols.tolist(), ev.values.tolist()
    ([0, 0, 1, 1], [1, 0, 1, 0], [1.0, 2.0, 3.0, 4.0])
    """

    def __init__(self, residual: np.ndarray, blocks: tuple | None, *, admissibility: np.ndarray | None = None,
                 n_active: int = 0):
        self.residual = residual
        self.blocks = blocks
        self.admissibility = np.zeros(0) if admissibility is None else admissibility
        self.n_active = n_active
        self.margins = None
        self._triplets = None

    def _made(self) -> tuple:
        if self._triplets is None:
            self._triplets = (block_triplets(*self.blocks) if self.blocks is not None else
                              (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)))
        return self._triplets

    rows = property(lambda self: self._made()[0], doc="COO rows of the tangent (made from the blocks)")
    cols = property(lambda self: self._made()[1], doc="COO columns of the tangent (made from the blocks)")
    values = property(lambda self: self._made()[2], doc="COO values of the tangent (made from the blocks)")


def margins_kept(before: dict, after: dict, delta_bar: float) -> bool:
    """Eq. 71 at the end of a step, from the contact margins of the evaluations before and after it.

    ``before`` and ``after`` map a contact's name to its
    :attr:`ContactEvaluation.margins` ``(elements, 1 + γ g)``.  True when every
    contact point in reach after the step keeps 1 + γ g > δ̄ min(1 + γ g
    before, 1); a point out of reach before had g > 0 there (its target is
    δ̄), a point out of reach after has g > 0 (it passes).

    Examples
    --------
    >>> import numpy as np
    >>> before = {"c": (np.array([3]), np.array([[0.8, 1.2]]))}
    >>> margins_kept(before, {"c": (np.array([3]), np.array([[0.3, 0.9]]))}, 0.25)
    True
    >>> margins_kept(before, {"c": (np.array([3, 4]), np.array([[0.3, 0.9], [0.2, 1.0]]))}, 0.25)
    False
    """
    for name, (el1, m1) in after.items():
        if m1.size == 0:
            continue
        el0, m0 = before[name]
        m1 = np.asarray(m1, dtype=float).reshape(len(el1), -1)
        m0 = np.asarray(m0, dtype=float).reshape(len(el0), m1.shape[1])  # the same points per element
        if not _kept(np.asarray(el0, dtype=np.int64), m0, np.asarray(el1, dtype=np.int64), m1, float(delta_bar)):
            return False
    return True


@njit(cache=True)
def _kept(el0, m0, el1, m1, delta_bar):  # pragma: no cover - compiled
    """:func:`margins_kept` for one contact: elements (sorted) and margins (rows × points) before and after."""
    for r in range(el1.shape[0]):
        i = np.searchsorted(el0, el1[r])
        found = i < el0.shape[0] and el0[i] == el1[r]
        for k in range(m1.shape[1]):
            target = delta_bar * min(m0[i, k], 1.0) if found else delta_bar
            if not m1[r, k] > target:
                return False
    return True


@runtime_checkable
class Contact(Protocol):
    """A contact term (fiber–fiber or fiber–cylinder).

    ``model`` gives the discretization (``model.discretization``: element
    DOFs, reference DOFs, fiber of each element, r0, …).  ``u`` is the
    displacement DOF vector, ``t`` the time.
    """

    name: str

    def evaluate(self, model, u: np.ndarray, t: float, *, tangent: bool = True) -> ContactEvaluation:  # pragma: no cover
        ...

    def max_step(self, model, u: np.ndarray, du: np.ndarray, t: float, *, delta_bar: float) -> float:  # pragma: no cover
        """Largest δ ∈ (0, 1] with every contact point keeping
        1 + γ g(u + δ du) > δ̄ (1 + γ g(u)), from a cheap lower estimate
        (paper eqs. 69–73)."""
        ...
