"""Finding the contact points of a cylinder: broad phase, narrow phase, the last state kept.

**Broad phase** (:meth:`CylinderSearch.broad`): an element is evaluated only if
the ball around the box of its Bézier control points, grown by a bound of its
current radius (and for a step by the motion, see
:meth:`~skfiber.contact.cylinder.CylinderContact.candidates`), reaches the
(capsule of the) cylinder.  **Narrow phase** (:meth:`CylinderSearch.points`):
the contact points of those elements, their gaps and forces, the residual and
the body reaction (:class:`~skfiber.contact.cylinder_points.CylinderPoints`).
Both are one compiled call each (:mod:`skfiber.contact.cylinder_kernels`).

The residual call, the tangent call, the body load and the pose derivative
of one Newton iteration ask for the same state (u, pose): the last one is kept
(:meth:`CylinderSearch.state`), and so are the element lists and kernel data
per discretization.

Examples
--------
>>> import numpy as np
>>> import skfiber as sf
>>> from skfiber.contact import PenaltyLaw
>>> from skfiber.contact.cylinder import CylinderContact
>>> model = sf.Model([sf.Fiber.straight((-1, 0, 0), (1, 0, 0), n_elements=4, radius=0.05)])
>>> cyl = CylinderContact((0, 0, -0.22), (0, 1, 0), 0.2, law=PenaltyLaw(stiffness=500.0, gamma=4.0))
>>> search = CylinderSearch(cyl)
>>> state = search.state(model, np.zeros(model.n_dofs), cyl.pose_at(0.0))
>>> state.elements.tolist(), state is search.state(model, np.zeros(model.n_dofs), cyl.pose_at(0.0))
([1, 2], True)
"""
from __future__ import annotations

import weakref

import numpy as np

from . import cylinder_kernels as ck
from .cylinder_points import CylinderPoints, CylinderState, kernel_vector
from .cylinder_pose import CylinderPose, pose_key, turn_bound, vector_norm
from .geometry import element_shapes

__all__ = ["CylinderSearch"]


class CylinderSearch:
    """Broad and narrow phase of one cylinder contact, kept per discretization and for the last state.

    Parameters
    ----------
    contact
        The :class:`~skfiber.contact.cylinder.CylinderContact`: its ``fibers``,
        contact rule (``xi``, ``weights``), ``radius``, ``length`` and ``law``.
    """

    def __init__(self, contact):
        self.contact = contact
        self.masks: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # element lists
        self.data: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # (shapes, kernel data)
        self.memo: dict = {}  # last broad/narrow phase (evaluate, body_load, … ask for the same state)

    def clear(self) -> None:
        """Forget the last state (the next call computes it again)."""
        self.memo.clear()

    def fiber_elements(self, discretization) -> np.ndarray:
        """Indices of the elements of the fibers the contact acts on (kept per discretization).

        Parameters
        ----------
        discretization
            The model's :class:`~skfiber.discretization.Discretization`.

        Returns
        -------
        numpy.ndarray
        """
        el = self.masks.get(discretization)
        if el is None:
            fibers = self.contact.fibers
            if fibers is None:
                el = np.arange(discretization.element_fiber.size)
            else:
                ks = [discretization.fiber_index(f) for f in fibers]
                el = np.flatnonzero(np.isin(discretization.element_fiber, ks))
            self.masks[discretization] = el
        return el

    def kernel_data(self, discretization) -> ck.KernelData:
        """The :class:`~skfiber.contact.cylinder_kernels.KernelData` of the contact rule (kept per discretization).

        Parameters
        ----------
        discretization
            The model's :class:`~skfiber.discretization.Discretization`.

        Returns
        -------
        skfiber.contact.cylinder_kernels.KernelData
        """
        d = discretization
        out = self.data.get(d)
        if out is None:
            shapes = element_shapes(d, self.contact.xi, self.contact.weights)
            out = self.data[d] = (shapes, ck.KernelData.of(shapes, d))
        return out[1]

    def broad(self, d, u: np.ndarray, pose: CylinderPose, el: np.ndarray, du: np.ndarray | None = None,
              pose_step: tuple | None = None) -> np.ndarray:
        """The broad phase on the elements ``el`` (no memo; one compiled call).

        Parameters
        ----------
        d
            The discretization.
        u
            (N,) fiber DOFs.
        pose
            The cylinder's pose.
        el
            Element indices.
        du
            (N,) a step: elements that may touch for some u + δ du, δ ∈ [0, 1]; or None.
        pose_step
            (Δy0, Δa) as validated by
            :func:`~skfiber.contact.cylinder_pose.check_pose_step`, or None.

        Returns
        -------
        numpy.ndarray
            The elements in reach.
        """
        motion = None
        if pose_step is not None:
            dy0, da = pose_step
            motion = (vector_norm(dy0), turn_bound(1.0, vector_norm(da), pose.axis_norm))
        du = None if du is None else kernel_vector(du, d.n_dofs, "du")
        c = self.contact
        return ck.broad_phase(self.kernel_data(d), kernel_vector(u, d.n_dofs), np.asarray(el, dtype=np.int64),
                              pose.point, pose.tangent, c.radius, c.length, du, motion)

    def state(self, model, u: np.ndarray, pose: CylinderPose) -> CylinderState:
        """Broad and narrow phase at (u, pose) and everything derived from them, memoized.

        Parameters
        ----------
        model
            The fiber model.
        u
            (N,) fiber DOFs.
        pose
            The cylinder's pose.

        Returns
        -------
        skfiber.contact.cylinder_points.CylinderState
            The same object as the last call when (discretization, u, pose) are the same.
        """
        d = model.discretization
        u = kernel_vector(u, d.n_dofs)
        key = (id(d), u.tobytes(), pose_key(pose))
        memo = self.memo.get("state")
        if memo is not None and memo[0] == key:
            return memo[1]
        c = self.contact
        el = self.fiber_elements(d)
        data = self.kernel_data(d)
        if el.size:
            el = ck.broad_phase(data, u, el, pose.point, pose.tangent, c.radius, c.length)
        nar = self.points_at(model, u, pose, el) if el.size else None
        state = CylinderState(c, d.n_dofs, el, nar, data)
        self.memo["state"] = (key, state)
        if nar is not None:  # points() on these elements finds it too
            self.memo["narrow"] = (("narrow", id(d), key[1], el.tobytes(), key[2]), nar)
        return state

    def points(self, model, u: np.ndarray, pose: CylinderPose, elements: np.ndarray) -> CylinderPoints:
        """Narrow phase on ``elements`` at (u, pose), memoized (the last call, or the last :meth:`state`).

        Parameters
        ----------
        model
            The fiber model.
        u
            (N,) fiber DOFs.
        pose
            The cylinder's pose.
        elements
            Element indices.

        Returns
        -------
        skfiber.contact.cylinder_points.CylinderPoints
        """
        u = kernel_vector(u, model.discretization.n_dofs)
        elements = np.asarray(elements, dtype=np.int64)
        key = ("narrow", id(model.discretization), u.tobytes(), elements.tobytes(), pose_key(pose))
        if self.memo.get("narrow", (None,))[0] == key:
            return self.memo["narrow"][1]
        out = self.points_at(model, u, pose, elements)
        self.memo["narrow"] = (key, out)
        return out

    def points_at(self, model, u: np.ndarray, pose: CylinderPose, elements: np.ndarray) -> CylinderPoints:
        """Narrow phase on ``elements`` (int64), no memo: one compiled call.

        :func:`~skfiber.contact.cylinder_kernels.contact_points`.

        Parameters
        ----------
        model
            The fiber model.
        u
            (N,) fiber DOFs.
        pose
            The cylinder's pose.
        elements
            Element indices (int64).

        Returns
        -------
        skfiber.contact.cylinder_points.CylinderPoints
        """
        d = model.discretization
        data = self.kernel_data(d)
        c = self.contact
        out = ck.contact_points(data, kernel_vector(u, d.n_dofs), elements, pose.point, pose.tangent,
                                pose.axis_norm, c.radius, c.length, c.law.stiffness, c.law.gamma)
        return CylinderPoints(elements, pose, self.data[d][0], d.element_fiber, out)
