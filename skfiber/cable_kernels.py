r"""The cable forms of :mod:`skfiber.forms` as compiled loops (numba).

The forms in :mod:`skfiber.forms` define the cable (paper eq. 38 and its
linearization, Appendix A.1–A.2).  Evaluating them through numpy costs a few
hundred numpy calls per Newton iteration, which dominates on the small meshes
of muscle models (40–320 elements).  The three kernels here compute the same
quantities in one pass over elements and quadrature points each:

* :func:`cable_kinematics` — x_s, ẋ_s, λ and λ̇ at the quadrature points
  (:func:`skfiber.forms.cable_kinematics`);
* :func:`internal_force` — the assembled vector of
  :func:`skfiber.forms.internal_force` and Σ|contributions| per DOF
  (the scale of its round-off);
* :func:`internal_tangent` — the element matrices of
  :func:`skfiber.forms.internal_tangent`;
* :func:`cable_residual` — internal force + inertia − external load in one
  pass, with the norms Newton's convergence test needs (what
  :meth:`skfiber.Model.evaluate` calls on its fast path).

The stress law stays a numpy call between the first and the other two.  The
model uses these kernels for its built-in cable terms (``Model(...,
compiled=True)``, the default); the forms stay the definition: the tests
compare kernels and forms on random states, and ``compiled=False`` evaluates
the forms.  Extra terms (:meth:`skfiber.Model.add_term`) always run as forms.

All kernels take ``jets`` = :func:`gradient_jets` of the basis: the
θ-derivatives of the local basis functions at the quadrature points, the
component each one moves, and its global DOF; ``J`` = |A1| and ``dx`` the
quadrature weights (e, q).

Example
-------
>>> import numpy as np
>>> from skfiber import Fiber
>>> from skfiber.discretization import Discretization
>>> d = Discretization([Fiber.straight((0, 0, 0), (2, 0, 0), n_elements=4)])
>>> jets = gradient_jets(d.assembler)
>>> x = d.reference_dofs * np.r_[1.1, 1, 1, 1.1, 1, 1][np.arange(d.n_dofs) % 6]  # 10 % stretch along x
>>> x_s, xdot_s, lam, lamdot = cable_kinematics(jets, x, np.zeros(d.n_dofs), d.jacobian)
>>> bool(np.allclose(lam, 1.1))
True
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["gradient_jets", "cable_kinematics", "internal_force", "internal_tangent", "cable_residual"]


def gradient_jets(assembler) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(g (e, q, nb), component (nb,), dofs (e, nb)) of a vector cubic Hermite line basis.

    Local basis function i is g[e, q, i] times the unit vector of its
    ``component[i]`` (a vector element: each basis function moves one
    component), g being its θ-derivative at the quadrature points.

    Raises
    ------
    ValueError
        If the basis is not a 3-component field on a line whose basis
        functions each move one component.
    """
    if assembler.ncomp != 3 or assembler.dim != 1:
        raise ValueError(f"the cable kernels need a 3-component field on a line, got {assembler.ncomp} "
                         f"components in {assembler.dim} dimensions")
    B = assembler._B  # (e, q, jets, nb): 3 values, 3 θ-derivatives (, second derivatives)
    moves = np.any(B[:, :, 0:3, :] != 0, axis=(0, 1)) | np.any(B[:, :, 3:6, :] != 0, axis=(0, 1))  # (3, nb)
    if not np.all(moves.sum(axis=0) == 1):
        raise ValueError("the cable kernels need a vector element whose basis functions each move one component")
    component = np.argmax(moves, axis=0).astype(np.int64)
    g = np.ascontiguousarray(np.take_along_axis(B[:, :, 3:6, :], component[None, None, None, :], axis=2)[:, :, 0, :])
    dofs = np.ascontiguousarray(assembler.element_dofs.T.astype(np.int64))
    return g, component, dofs


@numba.njit(cache=True)
def _kinematics(g, comp, dofs, x, v, J):  # pragma: no cover - compiled
    ne, nq, nb = g.shape
    x_s = np.empty((ne, nq, 3))
    xdot_s = np.empty((ne, nq, 3))
    lam = np.empty((ne, nq))
    lamdot = np.empty((ne, nq))
    xe = np.empty(nb)
    ve = np.empty(nb)
    for e in range(ne):
        for i in range(nb):
            xe[i] = x[dofs[e, i]]
            ve[i] = v[dofs[e, i]]
        for q in range(nq):
            # x′ and ẋ′ per component, in scalars (faster than indexing a small array by comp[i])
            s0 = s1 = s2 = t0 = t1 = t2 = 0.0
            for i in range(nb):
                gi = g[e, q, i]
                c = comp[i]
                if c == 0:
                    s0 += gi * xe[i]
                    t0 += gi * ve[i]
                elif c == 1:
                    s1 += gi * xe[i]
                    t1 += gi * ve[i]
                else:
                    s2 += gi * xe[i]
                    t2 += gi * ve[i]
            inv = 1.0 / J[e, q]
            s0 *= inv
            s1 *= inv
            s2 *= inv
            t0 *= inv
            t1 *= inv
            t2 *= inv
            x_s[e, q, 0], x_s[e, q, 1], x_s[e, q, 2] = s0, s1, s2
            xdot_s[e, q, 0], xdot_s[e, q, 1], xdot_s[e, q, 2] = t0, t1, t2
            lam[e, q] = np.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
            lamdot[e, q] = (s0 * t0 + s1 * t1 + s2 * t2) / lam[e, q]
    return x_s, xdot_s, lam, lamdot


def cable_kinematics(jets, x: np.ndarray, v: np.ndarray, J: np.ndarray):
    """x_s, ẋ_s (e, q, 3), λ = |x_s| and λ̇ = x_s·ẋ_s/λ (e, q) (eq. 33).

    ``jets`` is :func:`gradient_jets` of the basis; ``x`` are the DOFs of the
    current position (reference + displacement), ``v`` those of the velocity,
    both (N,).
    """
    g, comp, dofs = jets
    return _kinematics(g, comp, dofs, np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(v, dtype=float), J)


@numba.njit(cache=True)
def _add_internal_force(g, comp, dofs, coefficient, x_s, F, M):  # pragma: no cover - compiled
    """F += the internal force, M += Σ|contributions| (coefficient = area S dx per point)."""
    ne, nq, nb = g.shape
    for e in range(ne):
        for q in range(nq):
            c = coefficient[e, q]
            for i in range(nb):
                r = c * x_s[e, q, comp[i]] * g[e, q, i]
                F[dofs[e, i]] += r
                M[dofs[e, i]] += abs(r)


@numba.njit(cache=True)
def _internal_force(g, comp, dofs, n, coefficient, x_s):  # pragma: no cover - compiled
    F = np.zeros(n)
    M = np.zeros(n)
    _add_internal_force(g, comp, dofs, coefficient, x_s, F, M)
    return F, M


def internal_force(jets, n: int, *, S: np.ndarray, area: np.ndarray, dx: np.ndarray,
                   x_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """π r0² ∫ S x_s · ξ_s dS assembled (N,), and Σ|contributions| per DOF.

    With ξ_s = ξ′/|A1| and dS = |A1| dθ the integrand is area · S · x_s · ξ′ dθ.
    """
    g, comp, dofs = jets
    return _internal_force(g, comp, dofs, int(n), area * S * dx, x_s)


@numba.njit(cache=True)
def _residual(g, comp, dofs, coefficient, x_s, mass, a, f_ext, load_factor, out):  # pragma: no cover - compiled
    # out ← F_int + M a − load_factor f_ext; returns (‖F_int‖, ‖Σ|F_int contributions|‖, ‖M a‖, ‖load_factor f_ext‖)
    ne, nq, nb = g.shape
    n = out.shape[0]
    F = np.zeros(n)
    A = np.zeros(n)
    Ma = np.zeros(n)
    _add_internal_force(g, comp, dofs, coefficient, x_s, F, A)
    for e in range(ne):
        for i in range(nb):
            s = 0.0
            for j in range(nb):
                s += mass[e, i, j] * a[dofs[e, j]]
            Ma[dofs[e, i]] += s
    nF = nA = nM = nE = 0.0
    for k in range(n):
        fe = load_factor * f_ext[k]
        out[k] = F[k] + Ma[k] - fe
        nF += F[k] * F[k]
        nA += A[k] * A[k]
        nM += Ma[k] * Ma[k]
        nE += fe * fe
    return np.sqrt(nF), np.sqrt(nA), np.sqrt(nM), np.sqrt(nE)


def cable_residual(jets, *, S, area, dx, x_s, mass, a, f_ext, load_factor: float = 1.0):
    """(R, norms): R = F_int + M a − load_factor · f_ext (N,) of the built-in cable terms.

    F_int is :func:`internal_force`, ``mass`` the element mass matrices (e, nb, nb),
    ``a`` the acceleration DOFs and ``f_ext`` the assembled external load.  ``norms``
    = (‖F_int‖, ‖Σ|contributions of F_int|‖, ‖M a‖, ‖load_factor f_ext‖): the force
    scales of Newton's convergence test (:class:`skfiber.solver.NewtonOptions`).
    """
    g, comp, dofs = jets
    R = np.empty(f_ext.shape[0])
    norms = _residual(g, comp, dofs, area * S * dx, x_s, mass, np.ascontiguousarray(a, dtype=float),
                      np.ascontiguousarray(f_ext, dtype=float), float(load_factor), R)
    return R, norms


@numba.njit(cache=True)
def _internal_tangent(g, comp, c0, c1, c2, x_s, xdot_s, M, c_a):  # pragma: no cover - compiled
    # D = c0 I + x_s ⊗ (c1 x_s + c2 ẋ_s) (test ⊗ trial), so per point
    # K += c0 (g gᵀ on equal components) + p yᵀ with p_i = g_i x_s[comp i], y_j = g_j (c1 x_s + c2 ẋ_s)[comp j];
    # K starts as c_a M (M empty: zero)
    ne, nq, nb = g.shape
    K = np.empty((ne, nb, nb))
    p = np.empty(nb)
    y = np.empty(nb)
    for e in range(ne):
        if M.shape[0]:
            for i in range(nb):
                for j in range(nb):
                    K[e, i, j] = c_a * M[e, i, j]
        else:
            K[e] = 0.0
        for q in range(nq):
            a0 = c0[e, q]
            a1 = c1[e, q]
            a2 = c2[e, q]
            for i in range(nb):
                a = comp[i]
                gi = g[e, q, i]
                p[i] = gi * x_s[e, q, a]
                y[i] = gi * (a1 * x_s[e, q, a] + a2 * xdot_s[e, q, a])
            for i in range(nb):
                pi = p[i]
                gi0 = a0 * g[e, q, i]
                ci = comp[i]
                for j in range(nb):
                    v = pi * y[j]
                    if comp[j] == ci:
                        v += gi0 * g[e, q, j]
                    K[e, i, j] += v
    return K


@numba.njit(cache=True)
def _law_tangent(g, comp, area, dx, J, S, dS, dR, lam, lamdot, c_v, x_s, xdot_s, M, c_a):  # pragma: no cover - compiled
    """:func:`_internal_tangent` with its coefficients computed from the law's response (as in
    :func:`internal_tangent`, same arithmetic)."""
    ne, nq = S.shape
    c0 = np.empty((ne, nq))
    c1 = np.empty((ne, nq))
    c2 = np.empty((ne, nq))
    for e in range(ne):
        for q in range(nq):
            f = area[e, q] * dx[e, q] / J[e, q]
            la = lam[e, q]
            c0[e, q] = f * S[e, q]
            c1[e, q] = f * (dS[e, q] / la + dR[e, q] * (c_v / la - lamdot[e, q] / (la * la)))
            c2[e, q] = f * dR[e, q] / la
    return _internal_tangent(g, comp, c0, c1, c2, x_s, xdot_s, M, c_a)


def internal_tangent(jets, *, S, dS_dlam, dS_dlamdot, c_v: float, lam, lamdot, x_s, xdot_s,
                     area, dx, J, mass: np.ndarray | None = None, c_a: float = 0.0) -> np.ndarray:
    """Element matrices (e, nb, nb) of :func:`skfiber.forms.internal_tangent`.

    With g = ∂/∂θ of the basis functions, the form is
    Σ_q g_test · D g_trial with, per quadrature point,
    D = f [S I + x_s ⊗ (ĉ₁ x_s + ĉ₂ ẋ_s)], f = area dx / |A1|,
    ĉ₁ = ∂S/∂λ / λ + ∂S/∂λ̇ (c_v/λ − λ̇/λ²), ĉ₂ = ∂S/∂λ̇ / λ.
    With ``mass`` (element matrices (e, nb, nb)) the result is c_a · mass plus the
    internal tangent (the inertia term of the time scheme in the same pass).
    """
    g, comp, _ = jets
    ne, _, nb = g.shape
    if mass is None:
        mass = np.zeros((0, nb, nb))
    elif mass.shape != (ne, nb, nb) or mass.dtype != np.float64:
        raise ValueError(f"mass must be float element matrices of shape {(ne, nb, nb)}, got {mass.shape}")
    shape = np.shape(S)

    def c(a):  # (e, q) float arrays (a law may give a derivative as a scalar)
        return np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=float), shape))

    return _law_tangent(g, comp, c(area), c(dx), c(J), c(S), c(dS_dlam), c(dS_dlamdot), c(lam), c(lamdot),
                        float(c_v), x_s, xdot_s, np.ascontiguousarray(mass), float(c_a))
