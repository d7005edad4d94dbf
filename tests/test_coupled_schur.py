"""The block elimination's Schur step (skfiber.coupled_kernels.schur_solve and its two companions), which the
general and the compiled coupled solves share, against a dense solve of the whole system."""
import numpy as np
import pytest

from skfiber.coupled_kernels import back_substitute, dependent_increment, schur_solve


@pytest.mark.parametrize("n", [0, 1, 3])
def test_the_schur_step_solves_the_bordered_system(n):
    rng = np.random.default_rng(n)
    N = 12
    K = rng.normal(size=(N, N)) + N * np.eye(N)
    W, Rq_u = rng.normal(size=(N, n)), rng.normal(size=(n, N))
    Rq_q = rng.normal(size=(n, n)) + 5 * np.eye(n)
    G, R_q = rng.normal(size=N), rng.normal(size=n)
    sol = np.linalg.solve(K, np.column_stack([-G, W]))  # [x0, Y] = K⁻¹ [−G, W]
    dq, S, regular = schur_solve(sol, Rq_u, Rq_q, R_q)
    dz = np.zeros(N + n)
    back_substitute(sol, dq, dz)
    D = np.array([2, 7], dtype=np.int64)
    C = rng.normal(size=(2, n))
    dependent_increment(dz, C, D, dq)
    full = np.linalg.solve(np.block([[K, W], [Rq_u, Rq_q]]), -np.concatenate([G, R_q]))
    assert regular
    free = np.setdiff1d(np.arange(N), D)
    np.testing.assert_allclose(dz[free], full[free], rtol=0, atol=1e-12 * np.abs(full).max())
    np.testing.assert_allclose(dz[N:], full[N:], rtol=0, atol=1e-12 * np.abs(full).max())
    np.testing.assert_allclose(dz[D], C @ full[N:], rtol=0, atol=1e-12 * np.abs(full).max())


def test_a_zero_schur_complement_of_one_coordinate_is_reported():
    sol = np.array([[1.0, 2.0], [0.5, 1.0]])
    dq, S, regular = schur_solve(sol, np.array([[1.0, 0.0]]), np.array([[2.0]]), np.array([1.0]))
    assert not regular and S[0, 0] == 0.0
