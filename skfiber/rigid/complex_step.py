"""Complex-step derivatives: ∂f/∂x = Im f(x + i h e_j)/h, exact to round-off.

The tangents of the rigid system (force elements, inertia terms, the
backward-Euler residual) are complex-step derivatives of their analytic
expressions: every evaluation takes a batch of configurations, so the
whole Jacobian is one evaluation at the batch x + i h I.

Examples
--------
>>> import numpy as np
>>> from skfiber.rigid.complex_step import complex_jacobian
>>> value, J = complex_jacobian(lambda X: np.sin(X) * X[:, ::-1], np.array([0.5, 2.0]))
>>> bool(np.allclose(J, [[np.cos(0.5) * 2.0, np.sin(0.5)], [np.sin(2.0), np.cos(2.0) * 0.5]]))
True
"""
from __future__ import annotations

import numpy as np

__all__ = ["COMPLEX_STEP", "complex_jacobian"]

#: step of the complex-step derivatives
COMPLEX_STEP = 1e-30


def complex_jacobian(fn, x):
    """(fn(x), ∂fn/∂x) by the complex step: fn maps a batch (B, n) to (B, m), evaluated once with B = n."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    if n == 0:
        value = np.real(fn(x[None, :].astype(complex)))[0]
        return value, np.zeros(value.shape + (0,))
    value = fn(x[None, :] + 1j * COMPLEX_STEP * np.eye(n))
    return np.real(value[0]), np.imag(value).T / COMPLEX_STEP
