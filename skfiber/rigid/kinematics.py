"""Kinematics of the tree at (q, t): poses, twists, point Jacobians and their derivatives.

Everything is computed for a batch of configurations q of shape (B, n), in
any dtype: complex q gives exact derivatives by the complex step.

With the joint twists s_k(x) = ω_k × (x − o_k) + v_k (see :mod:`.tree`), a
body-fixed point x(ζ) downstream of the moving joints on its path has

* first derivatives   ∂x/∂ζ_k = s_k(x)                    (k on the path)
* second derivatives  ∂²x/∂ζ_j∂ζ_k = ω_j × s_k(x)         (j strictly upstream of k; symmetric)
                      ∂²x/∂ζ_k² = ω_k × s_k(x) + D_k(x)
  where D_k = 0 for revolute and prismatic joints and, for a prescribed
  joint, D_k(x) = ω̇_k × (x − o_k) + a_k − ω_k × v_k (its own acceleration).

The time t enters through the prescribed joints (ζ = τ_b = t), so
∂x/∂t = Σ_b s_b(x), ∂C/∂t = Σ_b ∂²x/∂τ_b∂q and ∂²x/∂t² = Σ_{b,b'} ∂²x/∂τ_b∂τ_b'.
A body's angular velocity is ω = Σ_k ω_k ζ̇_k with ∂ω_k/∂ζ_j = ω_j × ω_k
(j strictly upstream of k).

The poses and twists are computed by a compiled loop over the tree
(:func:`.pose_kernel.tree_poses`); the methods below give the derived quantities of
points and bodies through the compiled definitions of :mod:`.jet_kernels`, which the
inertia terms and point derivatives of :mod:`.kernels` call as well.
"""
from __future__ import annotations

import math

import numpy as np

from .jet_kernels import (accelerations_batch, angular_accelerations_batch, positions_batch, second_derivatives_batch,
                          twists_batch)
from .pose_kernel import tree_poses
from .tree import Tree

__all__ = ["Kinematics", "cross"]

_NO_MOTION = (np.zeros((1, 0, 3, 3)), np.zeros((1, 0, 5, 3)))


def cross(a, b):
    """a × b over the last axis, broadcasting, any dtype (complex-step safe)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), np.result_type(a, b))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


class Kinematics:
    """Poses and joint twists of all bodies at a batch of configurations.

    Parameters
    ----------
    tree
        The system's :class:`~skfiber.rigid.tree.Tree`.
    q
        Coordinates, shape (B, n) (real or complex).
    t
        Time (s), real: a number, or one time per configuration (B,).
    qd
        Velocities q̇, shape (B, n), or None (then the rate-dependent
        quantities are unavailable).
    motion
        The prescribed motion at t (:meth:`prescribed_data`) when the caller
        keeps it (:meth:`~skfiber.rigid.RigidSystem.plan`); computed if None.

    Attributes
    ----------
    R, p : (B, nb + 1, 3, 3), (B, nb + 1, 3)
        Pose of each body, x = R X + p for a reference point X (last: ground).
    omega, origin, velocity : (B, nz, 3)
        Joint twists in world coordinates.
    zeta_rate : (B, nz)
        ζ̇: q̇ on the coordinates, 1 on the prescribed joints.
    """

    def __init__(self, tree: Tree, q, t: float, qd=None, *, motion=None):
        q = np.asarray(q)
        if q.ndim != 2 or q.shape[1] != tree.n:
            raise ValueError(f"q must have shape (B, {tree.n}), got {q.shape}")
        self.tree = tree
        B = q.shape[0]
        if isinstance(t, (float, int)) and math.isfinite(t):  # the common case, without numpy calls
            self.t = float(t)
        else:
            t = np.asarray(t, dtype=float)
            if t.ndim == 1 and t.shape != (B,):
                raise ValueError(f"t must be a number or have one entry per configuration ({B}), got shape {t.shape}")
            if t.ndim > 1 or not np.all(np.isfinite(t)):
                raise ValueError(f"t must be a finite number or a vector of them, got {t!r}")
            self.t = float(t) if t.ndim == 0 else t
        dtype = np.result_type(q.dtype, float, np.asarray(qd).dtype if qd is not None else float)
        self.dtype = dtype
        tab, rot = tree.tables, tree.rotations
        pres_R, pres_v = self.prescribed_data(tree, self.t) if motion is None else motion
        R, p, omega, origin, velocity, own_angular, own_linear = tree_poses(
            np.ascontiguousarray(q, dtype=dtype), tab.parent, tab.joint_of_body, tab.kind, tab.coordinate,
            tab.axis, tab.point, rot.K, rot.K2, rot.slot, tab.tau_slot, pres_R, pres_v, tab.center)
        self.R, self.p = R, p
        self.omega, self.origin, self.velocity = omega, origin, velocity
        self.own_angular, self.own_linear = own_angular, own_linear
        self.prescribed = tab.prescribed
        self.B = B
        if qd is not None:
            qd = np.asarray(qd)
            if qd.shape != q.shape:
                raise ValueError(f"qd must have the shape of q {q.shape}, got {qd.shape}")
            self.zeta_rate = self.rates(qd, frozen=False)
        else:
            self.zeta_rate = None

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def prescribed_data(tree: Tree, t):
        """(R_b (T, m, 3, 3), (d, ω, ω̇, ḋ, d̈) (T, m, 5, 3)) of the prescribed joints at t (T = 1 or len(t))."""
        tau = tree.tau_joints
        if not len(tau):
            return _NO_MOTION
        times = [t] if np.ndim(t) == 0 else list(t)
        states = [[tree.joints[tree.body_of_joint[k]].motion(ti) for k in tau] for ti in times]
        pres_R = np.array([[m.rotation for m in row] for row in states], dtype=float)
        pres_v = np.array([[(m.translation, m.angular_velocity, m.angular_acceleration, m.velocity, m.acceleration)
                            for m in row] for row in states], dtype=float)
        return pres_R, pres_v

    def rates(self, qd, *, frozen: bool):
        """ζ̇ (B, nz) of the moving joints for the velocities q̇ (B, n).

        q̇ on the coordinates' joints and, unless ``frozen`` (time frozen: the
        motion relative to the prescribed joints), 1 on the prescribed joints.
        """
        zd = np.zeros((self.B, len(self.tree.kind)), np.result_type(qd.dtype, self.dtype))
        zd[:, self.tree.q_joints] = qd
        if not frozen and len(self.tree.tau_joints):
            zd[:, self.tree.tau_joints] = 1.0
        return zd

    def _in_dtype(self, *arrays):
        """The joint twists and ``arrays`` in one dtype (the compiled kernels take one per call)."""
        dt = np.result_type(self.dtype, *arrays)
        own = (self.omega, self.origin, self.velocity, self.own_angular, self.own_linear)
        return [np.ascontiguousarray(a, dtype=dt) for a in own + arrays]

    def _body_indices(self, bodies) -> np.ndarray:
        """``bodies`` as the int64 rows of the tree's tables (ground last; negative counts from the end)."""
        rows = self.tree.path.shape[0]
        b = np.asarray(bodies)
        if b.ndim != 1 or b.dtype == bool or not np.issubdtype(b.dtype, np.integer):
            raise ValueError(f"bodies must be a 1-D array of body indices (0 … {rows - 1}, {rows - 1} the ground); "
                             f"got {b.dtype} values of shape {b.shape}")
        outside = b[(b < -rows) | (b >= rows)]
        if outside.size:
            raise ValueError(f"body index {int(outside[0])} is outside 0 … {rows - 1} ({rows - 1} the ground)")
        return np.ascontiguousarray(np.where(b < 0, b + rows, b), dtype=np.int64)

    def _fit(self, name: str, array, shape: tuple) -> np.ndarray:
        """``array`` broadcast to ``shape``, or a ValueError that names both."""
        try:
            return np.broadcast_to(array, shape)
        except ValueError:
            raise ValueError(f"{name} of shape {np.shape(array)} does not fit the shape {shape} "
                             "(configurations, points, …)") from None

    # ------------------------------------------------------------------ points
    def positions(self, bodies, X):
        """x = R X + p of reference points X (P, 3) on ``bodies`` (P,) → (B, P, 3)."""
        bodies = self._body_indices(bodies)
        X = self._fit("X", X, (len(bodies), 3))
        dt = np.result_type(self.R.dtype, self.p.dtype, X.dtype)
        R, p, X = (np.ascontiguousarray(a, dtype=dt) for a in (self.R, self.p, X))
        return positions_batch(R, p, bodies, X)

    def twists(self, bodies, x):
        """s_k(x) for points x (B, P, 3) on ``bodies`` → (B, P, nz, 3) (zero off the path)."""
        bodies = self._body_indices(bodies)
        omega, origin, velocity, _, _, x = self._in_dtype(self._fit("x", x, (self.B, len(bodies), 3)))
        return twists_batch(omega, origin, velocity, self.tree.path, bodies, x)

    def second_derivatives(self, bodies, x, S):
        """∂²x/∂ζ_j∂ζ_k → (B, P, nz, nz, 3)."""
        bodies = self._body_indices(bodies)
        B, P, nz = self.B, len(bodies), len(self.tree.kind)
        omega, origin, velocity, own_angular, own_linear, x, S = self._in_dtype(
            self._fit("x", x, (B, P, 3)), self._fit("S", S, (B, P, nz, 3)))
        tree = self.tree
        return second_derivatives_batch(omega, origin, velocity, own_angular, own_linear, tree.upstream,
                                        self.prescribed, tree.path, bodies, x, S)

    def velocity_product(self, bodies, x, S, *, frozen: bool = False, qd=None):
        """Σ_jk ∂²x/∂ζ_j∂ζ_k ζ̇_j ζ̇_k: the acceleration of the points at q̈ = 0 → (B, P, 3).

        ``frozen``: time frozen (ζ̇ = 0 on prescribed joints, no own
        accelerations), i.e. the velocity terms of the relative motion.
        """
        bodies = self._body_indices(bodies)
        B, P, nz = self.B, len(bodies), len(self.tree.kind)
        zd = self.zeta_rate if not frozen else self.rates(qd, frozen=True)
        omega, origin, velocity, own_angular, own_linear, zd, x, S = self._in_dtype(
            zd, self._fit("x", x, (B, P, 3)), self._fit("S", S, (B, P, nz, 3)))
        tree = self.tree
        return accelerations_batch(omega, origin, velocity, own_angular, own_linear, tree.upstream, self.prescribed,
                                   tree.path, zd, not frozen, bodies, x, S)

    # ------------------------------------------------------------------ bodies
    def angular_jacobian(self):
        """∂ω/∂ζ̇ of every body: (B, nb, nz, 3)."""
        nb = self.tree.n_bodies
        return self.omega[:, None] * self.tree.path[:nb][None, :, :, None]

    def angular_velocity_product(self, *, frozen: bool = False, qd=None):
        """Angular acceleration of every body at q̈ = 0: Σ_k ζ̇_k Ω⁻_k × ω_k (+ own ω̇) → (B, nb, 3)."""
        zd = self.zeta_rate if not frozen else self.rates(qd, frozen=True)
        omega, _, _, own_angular, _, zd = self._in_dtype(zd)
        tree = self.tree
        return angular_accelerations_batch(omega, own_angular, tree.upstream, tree.path, zd, not frozen,
                                           np.arange(tree.n_bodies, dtype=np.int64))

    def angular_second_derivatives(self):
        """∂ω_k/∂ζ_j (contribution of joint k's axis to a body's ω): (B, nz(j), nz(k), 3)."""
        up = self.tree.upstream
        A = cross(self.omega[:, :, None, :], self.omega[:, None, :, :])  # ω_j × ω_k
        A = A * up[None, :, :, None]
        idx = np.arange(len(self.tree.kind))
        A[:, idx, idx] = self.own_angular * self.prescribed[None, :, None]
        return A
