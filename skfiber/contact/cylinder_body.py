"""Cylinders of rigid bodies: their pose at the coordinates q and the fibers' reaction on them.

**Pose** (:func:`body_pose_function`): the cylinder of a body moves with the
rigid coordinates q; :meth:`~skfiber.contact.cylinder.CylinderContact.on_body`
gives the contact a ``pose(t)`` that reads q from a holder (set by
``set_coordinates``) and keeps the last pose, since it is asked for many times
per evaluation (``cache_body_pose`` stores a pose computed elsewhere).

**Reaction on the body** (:class:`CylinderBodyLoad`): the fibers push the body
of the cylinder with −f_k at the body material point y_k = y0 + s_k t(a)
(s_k = sc_k, the clamped axial coordinate, frozen as a material coordinate).
By virtual work its contribution to the body's residual (inertia + internal −
external, as for the fiber), conjugate to the pose (y0, a), is

    R_pose = [ Σ_k f_k ;  Q Σ_k s_k f_k ],   Q = ∂t/∂a = (I − t⊗t)/|a|,
    f_k = F(g_k) ν_k J_k W_k,

and a rigid body with pose (y0, a)(q) gets R_q = Jpᵀ R_pose.  Its exact
derivative uses, per point, ∂f/∂x = C M, ∂f/∂x′ = b ν⊗a1 (b the factor of the
second tangent line in :mod:`skfiber.contact.cylinder`), ∂f/∂y0 = −C M,
∂f/∂a = −C T Q with T = s I + [lateral] t⊗(x − y0); ∂s/∂x = −∂s/∂y0 =
[lateral] t and ∂s/∂a = [lateral] Q (x − y0) (s is constant on the caps); and,
for a fixed vector v, ∂(Q v)/∂a = −((Q v)⊗t + (t·v) Q + t⊗(Q v))/|a|.  Hence

    ∂R_pose/∂x_k = [ C M ;  Q f⊗∂s/∂x + s Q C M ],   ∂R_pose/∂x′_k = [ 1 ; s Q ] b ν⊗a1,
    ∂R_pose/∂y0 = −Σ_k ∂R_pose/∂x_k,
    ∂R_pose/∂a  = [ −Σ C T Q ;  ∂(Q V)/∂a|_V + Σ (Q f⊗∂s/∂a − s Q C T Q) ],   V = Σ s f.

The moment about y0 of the forces on the cylinder is m = −t × V, so
R_pose[3:] · (e × a) = −m · e for every e, and G_c · δu + R_pose · δpose = 0
for any rigid motion of fiber and cylinder together (Newton's third law).

Examples
--------
>>> import numpy as np
>>> load = CylinderBodyLoad(np.ones(6), n_dofs=4, n_active=1, columns=np.array([1, 3]),
...                         d_u_values=np.ones((6, 2)), d_pose=np.zeros((6, 6)))
>>> load.d_u[0].tolist()
[0.0, 1.0, 0.0, 1.0]
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["CylinderBodyLoad", "body_pose_function"]


@dataclass(frozen=True)
class CylinderBodyLoad:
    """Reaction of the fibers on the cylinder's body, conjugate to the pose (y0, a).

    Attributes
    ----------
    force : (6,) R_pose = [Σ f_k ; Q Σ s_k f_k] (residual contribution of the
        body: the forces −f_k act on it; see :mod:`skfiber.contact.cylinder_body`)
    n_dofs : N, the number of fiber DOFs
    n_active : number of contact points with g < 0
    columns : (k,) sorted DOF indices where ∂R_pose/∂u may be nonzero, or None
        without tangent
    d_u_values : (6, k) ∂R_pose/∂u at ``columns``, or None without tangent
    d_pose : (6, 6) ∂R_pose/∂(y0, a) (columns y0_x, y0_y, y0_z, a_x, a_y, a_z),
        or None without tangent
    """

    force: np.ndarray
    n_dofs: int
    n_active: int = 0
    columns: np.ndarray | None = None
    d_u_values: np.ndarray | None = None
    d_pose: np.ndarray | None = None

    @cached_property
    def d_u(self) -> np.ndarray | None:
        """∂R_pose/∂u as a dense (6, N) array (None without tangent)."""
        if self.d_u_values is None:
            return None
        D = np.zeros((6, self.n_dofs))
        D[:, self.columns] = self.d_u_values
        return D

    @classmethod
    def of(cls, state, *, tangent: bool = True) -> "CylinderBodyLoad":
        """The load of one checked contact state.

        Parameters
        ----------
        state
            A :class:`~skfiber.contact.cylinder_points.CylinderState` whose
            points (if any) are admissible.
        tangent
            Also give ∂R_pose/∂u and ∂R_pose/∂(y0, a).

        Returns
        -------
        CylinderBodyLoad
            Zero force (and zero derivatives with ``tangent``) when no point is
            in contact.
        """
        N = state.n_dofs
        if state.nar is None or state.act.size == 0:
            return cls(np.zeros(6), N, 0, *((np.zeros(0, dtype=np.int64), np.zeros((6, 0)), np.zeros((6, 6)))
                                            if tangent else (None, None, None)))
        force = state.body_force.copy()
        if not tangent:
            return cls(force, N, state.n_active)
        columns, values, d_pose = state.body_tangent()
        return cls(force, N, state.n_active, columns, values, d_pose)


def body_pose_function(cylinder, holder: dict):
    """``pose(t) -> (start, axis)`` of a body's cylinder at the coordinates ``holder["q"]``.

    The last pose is kept in ``holder`` (``"key"``: (q bytes, t), ``"value"``):
    the pose is asked for many times per evaluation.

    Parameters
    ----------
    cylinder
        The body's cylinder (``cylinder.pose(q, t, hessian=False)`` gives
        ``start`` and ``axis``; :meth:`skfiber.rigid.RigidSystem.cylinder`).
    holder
        ``{"q": q, "key": None}``, updated in place.

    Returns
    -------
    callable
    """
    def pose(t):
        key = (holder["q"].tobytes(), float(t))
        if holder["key"] != key:  # the pose is asked for many times per evaluation
            p = cylinder.pose(holder["q"], t, hessian=False)
            holder["key"], holder["value"] = key, (p.start, p.axis)
        return holder["value"]

    return pose
