"""What force elements see: the force context of one evaluation of a rigid system.

A :class:`ForceContext` is made by :meth:`RigidSystem.context
<skfiber.rigid.RigidSystem.context>` for a batch of states (q, q̇, t) and
handed to every force element's ``force(ctx)`` (and ``energy``,
``dissipation``): the state, the kinematics of the tree and the kinematics of
the points the elements registered in ``bind`` (:meth:`RigidSystem.register_point
<skfiber.rigid.RigidSystem.register_point>`), computed on first use and kept.

Examples
--------
>>> import numpy as np
>>> from skfiber.rigid import Body, PointForce, Revolute, RigidSystem
>>> system = RigidSystem()
>>> system.add_body(Body("arm", start=(0, 0, 0), axis=(1, 0, 0), radius=0.05, mass=1.0),
...                 joint=Revolute(axis=(0, 0, 1))) and None
>>> system.add(PointForce("arm", (1, 0, 0), (0, 1, 0))) and None
>>> ctx = system.context(np.array([[np.pi / 2]]), np.array([[0.0]]), 0.0)
>>> (ctx.position(0).round(12) + 0).tolist(), (ctx.jacobian(0).round(12) + 0).tolist()
([[0.0, 1.0, 0.0]], [[[-1.0], [0.0], [0.0]]])
"""
from __future__ import annotations

import numpy as np

from .kinematics import Kinematics
from .point_kernels import point_kinematics

__all__ = ["ForceContext"]


class ForceContext:
    """What force elements see: state, kinematics and the registered points (batched).

    Parameters
    ----------
    system
        The assembled :class:`~skfiber.rigid.RigidSystem`.
    kin
        Its :class:`~skfiber.rigid.kinematics.Kinematics` at (q, q̇, t).
    q, qd
        Coordinates (B, n) and velocities (B, n) or None (real or complex).
    t
        Time (unused: the context keeps ``kin.t``).

    Attributes
    ----------
    system, kin, q, qd, t
        As given (``t`` a number, or one time per configuration (B,)).
    B, n
        Batch size and number of coordinates.
    dtype
        The dtype of the evaluation (complex in a complex step).
    names
        The coordinate names.
    element_states
        {element name: s (B, m)} of the elements with internal states, set by
        the integrators (:func:`~skfiber.rigid.rigid_step`) when there are
        such elements; absent otherwise.
    """

    def __init__(self, system, kin: Kinematics, q, qd, t):
        self.system, self.kin, self.q, self.qd, self.t = system, kin, q, qd, kin.t
        self.B, self.n = q.shape
        self.dtype = kin.dtype if qd is None else np.result_type(kin.dtype, qd.dtype)
        self.names = system.coordinate_names
        self._points = None
        self._com = None

    def _point_data(self):
        """(x (B, P, 3), C (B, P, 3, n), v (B, P, 3) or None) of the registered points, in one compiled call
        (:func:`.point_kernels.point_kinematics`, with the point's kinematics of :mod:`.jet_kernels`)."""
        if self._points is None:
            bodies, X = self.system.registered_points()
            kin = self.kin
            rates = kin.zeta_rate is not None
            zd = kin.zeta_rate if rates else np.zeros((kin.B, len(kin.tree.kind)), kin.dtype)
            x, C, v = point_kinematics(kin.R, kin.p, kin.omega, kin.origin, kin.velocity, bodies, X,
                                       kin.tree.path, kin.tree.tables.q_joints, np.ascontiguousarray(zd), rates)
            self._points = (x, C, v if rates else None)
        return self._points

    def position(self, i):
        """Position x (B, 3) of the registered point ``i``."""
        return self._point_data()[0][:, i]

    def jacobian(self, i):
        """∂x/∂q (B, 3, n) of the registered point ``i``."""
        return self._point_data()[1][:, i]

    def velocity(self, i):
        """Velocity ẋ (B, 3) of the registered point ``i`` (needs q̇)."""
        v = self._point_data()[2]
        if v is None:
            raise ValueError("point velocities need q̇")
        return v[:, i]

    def com(self):
        """(x_S (B, nb, 3), S (B, nb, nz, 3)) of the centers of mass."""
        if self._com is None:
            tree = self.kin.tree
            bodies = np.arange(tree.n_bodies)
            x = self.kin.positions(bodies, tree.com)
            self._com = (x, self.kin.twists(bodies, x))
        return self._com

    def com_position(self):
        """x_S (B, nb, 3) of the centers of mass."""
        return self.com()[0]

    def remember_com(self, x, S) -> None:
        """Keep the centers of mass x (B, nb, 3) and their twists S (B, nb, nz, 3) computed elsewhere.

        :meth:`RigidSystem.inertia_terms <skfiber.rigid.RigidSystem.inertia_terms>`
        gets them on the way (one compiled pass); gravity then reads them through
        :meth:`com`.  Values already known are kept.
        """
        if self._com is None:
            self._com = (x, S)
