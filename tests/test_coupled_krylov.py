"""The coupled Newton system with fibers in touch: block LU factors reused, element blocks split off the
block pattern, GMRES preconditioned by the block elimination — against dense solves."""
import numpy as np
import pytest

from skfiber import block_tridiagonal as bt
from skfiber.coupled_krylov import GMRES_ACCEPT, coupled_gmres

B = bt.B


def random_block_tridiagonal(rng, nn, fibers=1):
    """A well-conditioned block-tridiagonal matrix (block storage and dense); ``fibers`` chains of nodes."""
    A = np.zeros((nn, 3, B, B))
    A[:, 0] = 0.3 * rng.standard_normal((nn, B, B))
    A[:, 2] = 0.3 * rng.standard_normal((nn, B, B))
    A[:, 1] = rng.standard_normal((nn, B, B)) + 6 * np.eye(B)
    A[0, 0] = 0.0
    A[-1, 2] = 0.0
    ends = np.linspace(0, nn, fibers + 1).astype(int)[1:-1]  # no coupling between consecutive fibers
    A[ends, 0] = 0.0
    A[ends - 1, 2] = 0.0
    dense = np.zeros((nn * B, nn * B))
    for n in range(nn):
        for d, m in ((0, n - 1), (1, n), (2, n + 1)):
            if 0 <= m < nn:
                dense[n * B:(n + 1) * B, m * B:(m + 1) * B] = A[n, d]
    return A, dense


def test_factor_and_solve_factored_solve_like_factor_solve_and_dense():
    rng = np.random.default_rng(1)
    A, dense = random_block_tridiagonal(rng, 9, fibers=2)
    R = rng.standard_normal((9, B, 3))
    LU, piv, X, info = bt.factor(A, 1e-14)
    assert info == 0
    x = bt.solve_factored(A, LU, piv, X, R)
    np.testing.assert_array_equal(x, bt.factor_solve(A, R, 1e-14)[0])
    np.testing.assert_allclose(x.reshape(-1, 3), np.linalg.solve(dense, R.reshape(-1, 3)), rtol=0, atol=1e-12)
    v = rng.standard_normal((9, B))
    np.testing.assert_allclose(bt.multiply(A, v).ravel(), dense @ v.ravel(), rtol=0, atol=1e-12)


def test_split_blocks_sums_the_pattern_and_returns_the_rest():
    rng = np.random.default_rng(2)
    nn = 6
    n = nn * B
    # blocks of nodes 0–1 × 0–1 (in the pattern), 0–1 × 4–5 and 4–5 × 0–1 (two fibers in touch)
    row_dofs = np.array([np.arange(12), np.arange(12), np.arange(24, 36)])
    col_dofs = np.array([np.arange(12), np.arange(24, 36), np.arange(12)])
    blocks = rng.standard_normal((3, 12, 12))
    fixed = np.zeros(n, dtype=bool)
    fixed[[1, 30]] = True
    work = np.zeros(nn * 3 * B * B)
    ok, outside, e_blocks = bt.split_blocks(work, row_dofs, col_dofs, blocks, n, fixed)
    assert ok and outside.tolist() == [1, 2]
    A = work.reshape(nn, 3, B, B)
    np.testing.assert_array_equal(A[0, 1], blocks[0][:6, :6])
    np.testing.assert_array_equal(A[1, 0], blocks[0][6:, :6])
    expected = blocks[1:].copy()
    expected[0][1, :] = 0.0  # row DOF 1 fixed
    expected[0][:, 6] = 0.0  # column DOF 30 fixed
    expected[1][6, :] = 0.0  # row DOF 30 fixed
    expected[1][:, 1] = 0.0  # column DOF 1 fixed
    np.testing.assert_array_equal(e_blocks, expected)
    ok, _, _ = bt.split_blocks(np.zeros_like(work), row_dofs + n, col_dofs, blocks, n, fixed)
    assert not ok  # a DOF outside the matrix


def coupled_system(rng, nn=12, n=2, n_blocks=6, scale=1.0):
    """Block-tridiagonal K₀ of three fibers, E of element blocks between them, and the coupling to n coordinates."""
    A, K0 = random_block_tridiagonal(rng, nn, fibers=3)
    N = nn * B
    per_fiber = nn // 3
    rows, cols, blocks = [], [], []
    for _ in range(n_blocks):
        fa, fb = rng.choice(3, 2, replace=False)
        ea = fa * per_fiber + rng.integers(0, per_fiber - 1)
        eb = fb * per_fiber + rng.integers(0, per_fiber - 1)
        rows.append(np.arange(ea * B, ea * B + 12))
        cols.append(np.arange(eb * B, eb * B + 12))
        blocks.append(scale * rng.standard_normal((12, 12)))
    rows, cols, blocks = np.array(rows), np.array(cols), np.array(blocks)
    E = np.zeros((N, N))
    for r, c, b in zip(rows, cols, blocks):
        E[np.ix_(r, c)] += b
    W = rng.standard_normal((N, n))
    Rq_u = rng.standard_normal((n, N))
    Rq_q = rng.standard_normal((n, n)) + 10 * np.eye(n)
    T = np.block([[K0 + E, W], [Rq_u, Rq_q]])
    return A, rows, cols, blocks, W, Rq_u, Rq_q, T


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_gmres_solves_the_coupled_system_with_fibers_in_touch(seed):
    rng = np.random.default_rng(seed)
    A, rows, cols, blocks, W, Rq_u, Rq_q, T = coupled_system(rng)
    N, n = W.shape
    LU, piv, X, info = bt.factor(A, 1e-14)
    Y_w = bt.solve_factored(A, LU, piv, X, W.reshape(-1, B, n)).reshape(N, n)
    S_inv = np.linalg.inv(Rq_q - Rq_u @ Y_w)
    b = rng.standard_normal(N + n)
    x, iterations, residual = coupled_gmres(A, LU, piv, X, rows, cols, blocks, W, Rq_u, Rq_q, S_inv, Y_w, b,
                                            np.zeros(N + n))
    exact = np.linalg.solve(T, b)
    assert residual <= 1e-13
    np.testing.assert_allclose(x, exact, rtol=0, atol=1e-12 * np.abs(exact).max())
    # the preconditioned operator is I + a term of rank ≤ the rows E touches: GMRES ends within that many
    assert 0 < iterations <= np.unique(rows).size + 1
    np.testing.assert_allclose(np.linalg.norm(b - T @ x) / np.linalg.norm(b), residual, rtol=1e-6, atol=1e-16)


def test_gmres_without_e_returns_the_start_and_with_too_few_iterations_reports_its_residual():
    rng = np.random.default_rng(6)
    A, rows, cols, blocks, W, Rq_u, Rq_q, T = coupled_system(rng, scale=5.0)
    N, n = W.shape
    LU, piv, X, _ = bt.factor(A, 1e-14)
    Y_w = bt.solve_factored(A, LU, piv, X, W.reshape(-1, B, n)).reshape(N, n)
    S_inv = np.linalg.inv(Rq_q - Rq_u @ Y_w)
    b = rng.standard_normal(N + n)
    # no E: the block elimination is exact, the start is the solution and no iteration is made
    T0 = np.block([[T[:N, :N] - sum_e(rows, cols, blocks, N), W], [Rq_u, Rq_q]])
    start = np.linalg.solve(T0, b)
    x, iterations, residual = coupled_gmres(A, LU, piv, X, rows[:0], cols[:0], blocks[:0], W, Rq_u, Rq_q, S_inv, Y_w,
                                            b, start)
    assert iterations == 0 and residual < 1e-13
    # a strong E and two iterations: not converged, and the true residual says so (the caller falls back)
    x, iterations, residual = coupled_gmres(A, LU, piv, X, rows, cols, blocks, W, Rq_u, Rq_q, S_inv, Y_w, b,
                                            np.zeros(N + n), 1e-14, 2)
    assert iterations == 2 and residual > GMRES_ACCEPT
    np.testing.assert_allclose(np.linalg.norm(b - T @ x) / np.linalg.norm(b), residual, rtol=1e-6)


def sum_e(rows, cols, blocks, N):
    E = np.zeros((N, N))
    for r, c, b in zip(rows, cols, blocks):
        E[np.ix_(r, c)] += b
    return E
