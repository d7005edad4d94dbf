r"""The kinematics of one body point, compiled (numba): the one definition of its derivatives.

With the joint twists of :func:`.pose_kernel.tree_poses` (ω_k, o_k, v_k in world
coordinates, see :mod:`.kinematics`), a point x fixed to body b has, at one
configuration y of a batch,

* its twists         s_k(x) = ω_k × (x − o_k) + v_k        (k on b's path, else 0),
* second derivatives ∂²x/∂ζ_j∂ζ_k = ω_j × s_k(x)           (j strictly upstream of k; symmetric),
                     ∂²x/∂ζ_k² = ω_k × s_k(x) + D_k(x),
  D_k(x) = ω̇_k × (x − o_k) + d̈_k − ω_k × v_k for a prescribed joint k, 0 otherwise,
* its acceleration at ζ̈ = 0: Σ_jk ∂²x/∂ζ_j∂ζ_k ζ̇_j ζ̇_k = Σ_k ζ̇_k (ζ̇_k ω_k + 2 Ω⁻_k) × s_k (+ Σ_τ D_τ(x)),
  with Ω⁻_k = Σ_{j strictly upstream of k} ζ̇_j ω_j, the angular velocity of joint k's parent body;

and body b's angular acceleration at ζ̈ = 0 is Σ_k ζ̇_k Ω⁻_k × ω_k (+ its prescribed joints' ω̇_k).

These functions are written once here and called by every kernel that needs them
(:mod:`.point_kernels`, :mod:`.inertia_kernel`) and, through the batch kernels at the end,
by the methods of :class:`~skfiber.rigid.kinematics.Kinematics`.  They work in any dtype
(float, or complex for the complex step; the arrays of one call share it) and write into given
outputs.  They are inlined into their callers at numba's level (``inline="always"``): called
as separate functions they made the fused Euler step about 1.6 times slower on the whiplash demo
(see docs/performance.md); inlined, it runs as fast as the hand-inlined copies they replaced.

Examples
--------
>>> import numpy as np
>>> from skfiber.rigid.jet_kernels import point_twists
>>> omega = np.array([[[0.0, 0.0, 1.0]]])           # one revolute joint about z at the origin
>>> origin, velocity = np.zeros((1, 1, 3)), np.zeros((1, 1, 3))
>>> S = np.empty((1, 3))
>>> point_twists(omega, origin, velocity, np.ones((1, 1), bool), 0, 0, np.array([1.0, 0.0, 0.0]), S)
>>> S[0].tolist()                                    # the point (1, 0, 0) moves along y
[0.0, 1.0, 0.0]
"""
from __future__ import annotations

import numpy as np

from ..core.jit import njit
from .vector_kernels import cross_components, matvec3

__all__ = ["point_position", "point_twists", "own_acceleration", "point_second_derivatives", "upstream_rates",
           "point_acceleration", "angular_acceleration", "positions_batch", "twists_batch",
           "second_derivatives_batch", "accelerations_batch", "angular_accelerations_batch"]


@njit(cache=True, inline="always")
def point_position(R, p, y, b, X, out):  # pragma: no cover - compiled
    """out = R_b X + p_b: the point X (3,) of body b at configuration y."""
    matvec3(R[y, b], X, out)
    for i in range(3):
        out[i] += p[y, b, i]


@njit(cache=True, inline="always")
def point_twists(omega, origin, velocity, path, y, b, x, S):  # pragma: no cover - compiled
    """S[k] = s_k(x) = ω_k × (x − o_k) + v_k for the joints k on body b's path, 0 for the others.

    Parameters
    ----------
    omega, origin, velocity : (B, nz, 3)
        The joint twists of :func:`.pose_kernel.tree_poses`.
    path : (nb + 1, nz)
        The tree's table of the joints on each body's path.
    y, b : int
        The configuration and the body.
    x : (3,)
        The point, in world coordinates.
    S : (nz, 3)
        Where the twists are written.
    """
    for k in range(omega.shape[1]):
        if path[b, k]:
            o = origin[y, k]
            om = omega[y, k]
            c = cross_components(om[0], om[1], om[2], x[0] - o[0], x[1] - o[1], x[2] - o[2])
            for i in range(3):
                S[k, i] = c[i] + velocity[y, k, i]
        else:
            for i in range(3):
                S[k, i] = 0.0


@njit(cache=True, inline="always")
def own_acceleration(omega, origin, velocity, own_angular, own_linear, y, k, x, out):  # pragma: no cover - compiled
    """out += D_k(x) = ω̇_k × (x − o_k) + d̈_k − ω_k × v_k: the own acceleration of the prescribed joint k."""
    oa = own_angular[y, k]
    o = origin[y, k]
    c = cross_components(oa[0], oa[1], oa[2], x[0] - o[0], x[1] - o[1], x[2] - o[2])
    om = omega[y, k]
    v = velocity[y, k]
    d = cross_components(om[0], om[1], om[2], v[0], v[1], v[2])
    for i in range(3):
        out[i] += c[i] + own_linear[y, k, i] - d[i]


@njit(cache=True, inline="always")
def point_second_derivatives(omega, origin, velocity, own_angular, own_linear, upstream, prescribed, path, y, b, x,
                             S, H2):  # pragma: no cover - compiled
    """H2[j, k] = ∂²x/∂ζ_j∂ζ_k (nz, nz, 3) of the point x of body b with twists S (:func:`point_twists`)."""
    nz = omega.shape[1]
    for k in range(nz):
        for j in range(nz):
            for i in range(3):
                H2[j, k, i] = 0.0
    for k in range(nz):
        if not path[b, k]:
            continue
        for j in range(nz):
            if j == k or upstream[j, k]:
                om = omega[y, j]
                c = cross_components(om[0], om[1], om[2], S[k, 0], S[k, 1], S[k, 2])
                for i in range(3):
                    H2[j, k, i] = c[i]
                    H2[k, j, i] = c[i]
        if prescribed[k]:
            own_acceleration(omega, origin, velocity, own_angular, own_linear, y, k, x, H2[k, k])


@njit(cache=True, inline="always")
def upstream_rates(omega, upstream, zd, y, Om, wk):  # pragma: no cover - compiled
    """Om[k] = Ω⁻_k = Σ_{j strictly upstream of k} ζ̇_j ω_j and wk[k] = ζ̇_k ω_k + 2 Ω⁻_k (nz, 3) each."""
    nz = omega.shape[1]
    for k in range(nz):
        for i in range(3):
            Om[k, i] = 0.0
        for j in range(nz):
            if upstream[j, k]:
                for i in range(3):
                    Om[k, i] += zd[y, j] * omega[y, j, i]
        for i in range(3):
            wk[k, i] = zd[y, k] * omega[y, k, i] + 2.0 * Om[k, i]


@njit(cache=True, inline="always")
def point_acceleration(omega, origin, velocity, own_angular, own_linear, prescribed, path, zd, wk, own, y, b, x, S,
                       out):  # pragma: no cover - compiled
    """out = Σ_k ζ̇_k w_k × s_k (+ Σ_τ D_τ(x) if ``own``): the point's acceleration at ζ̈ = 0.

    ``wk`` from :func:`upstream_rates`; ``own`` False for the motion relative to the prescribed
    joints (time frozen).
    """
    for i in range(3):
        out[i] = 0.0
    for k in range(omega.shape[1]):
        if not path[b, k]:
            continue
        c = cross_components(wk[k, 0], wk[k, 1], wk[k, 2], S[k, 0], S[k, 1], S[k, 2])
        for i in range(3):
            out[i] += zd[y, k] * c[i]
        if own and prescribed[k]:
            own_acceleration(omega, origin, velocity, own_angular, own_linear, y, k, x, out)


@njit(cache=True, inline="always")
def angular_acceleration(omega, own_angular, path, zd, Om, own, y, b, out):  # pragma: no cover - compiled
    """out = Σ_k ζ̇_k Ω⁻_k × ω_k (+ ω̇_k if ``own``): body b's angular acceleration at ζ̈ = 0."""
    for i in range(3):
        out[i] = 0.0
    for k in range(omega.shape[1]):
        if not path[b, k]:
            continue
        om = omega[y, k]
        c = cross_components(Om[k, 0], Om[k, 1], Om[k, 2], om[0], om[1], om[2])
        for i in range(3):
            out[i] += zd[y, k] * c[i]
            if own:
                out[i] += own_angular[y, k, i]


# ---------------------------------------------------------------------- batches, for Kinematics
@njit(cache=True)
def positions_batch(R, p, bodies, X):  # pragma: no cover - compiled
    """x (B, P, 3) of the points X (P, 3) on ``bodies`` (P,) at every configuration."""
    B, P = R.shape[0], bodies.shape[0]
    x = np.empty((B, P, 3), R.dtype)
    for y in range(B):
        for q in range(P):
            point_position(R, p, y, bodies[q], X[q], x[y, q])
    return x


@njit(cache=True)
def twists_batch(omega, origin, velocity, path, bodies, x):  # pragma: no cover - compiled
    """S (B, P, nz, 3) of the points x (B, P, 3) on ``bodies`` (P,)."""
    B, P, nz = omega.shape[0], bodies.shape[0], omega.shape[1]
    S = np.empty((B, P, nz, 3), omega.dtype)
    for y in range(B):
        for q in range(P):
            point_twists(omega, origin, velocity, path, y, bodies[q], x[y, q], S[y, q])
    return S


@njit(cache=True)
def second_derivatives_batch(omega, origin, velocity, own_angular, own_linear, upstream, prescribed, path, bodies, x,
                             S):  # pragma: no cover - compiled
    """H (B, P, nz, nz, 3) = ∂²x/∂ζ_j∂ζ_k of the points x (B, P, 3) on ``bodies`` with twists S."""
    B, P, nz = omega.shape[0], bodies.shape[0], omega.shape[1]
    H = np.empty((B, P, nz, nz, 3), S.dtype)
    for y in range(B):
        for q in range(P):
            point_second_derivatives(omega, origin, velocity, own_angular, own_linear, upstream, prescribed, path, y,
                                     bodies[q], x[y, q], S[y, q], H[y, q])
    return H


@njit(cache=True)
def accelerations_batch(omega, origin, velocity, own_angular, own_linear, upstream, prescribed, path, zd, own, bodies,
                        x, S):  # pragma: no cover - compiled
    """(B, P, 3): :func:`point_acceleration` of the points x (B, P, 3) on ``bodies`` with twists S."""
    B, P, nz = omega.shape[0], bodies.shape[0], omega.shape[1]
    dt = omega.dtype
    a = np.empty((B, P, 3), dt)
    Om = np.empty((nz, 3), dt)
    wk = np.empty((nz, 3), dt)
    for y in range(B):
        upstream_rates(omega, upstream, zd, y, Om, wk)
        for q in range(P):
            point_acceleration(omega, origin, velocity, own_angular, own_linear, prescribed, path, zd, wk, own, y,
                               bodies[q], x[y, q], S[y, q], a[y, q])
    return a


@njit(cache=True)
def angular_accelerations_batch(omega, own_angular, upstream, path, zd, own, bodies):  # pragma: no cover - compiled
    """(B, P, 3): :func:`angular_acceleration` of ``bodies`` (P,)."""
    B, P, nz = omega.shape[0], bodies.shape[0], omega.shape[1]
    dt = omega.dtype
    al = np.empty((B, P, 3), dt)
    Om = np.empty((nz, 3), dt)
    wk = np.empty((nz, 3), dt)
    for y in range(B):
        upstream_rates(omega, upstream, zd, y, Om, wk)
        for q in range(P):
            angular_acceleration(omega, own_angular, path, zd, Om, own, y, bodies[q], al[y, q])
    return al
