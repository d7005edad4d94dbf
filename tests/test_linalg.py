"""The linear solver of the Newton systems (skfiber.linalg, skfiber.block_tridiagonal):
block-tridiagonal LU with its safety checks, and the band / sparse fallbacks."""
import numpy as np
import pytest
import scipy.sparse as sps
import scipy.sparse.linalg as spla
from skfem import Basis, ElementLineHermite, ElementVector, MeshLine

import skfiber as sf
from skfiber import block_tridiagonal as bt
from skfiber.assembly import BatchedAssembler
from skfiber.discretization import Discretization
from skfiber.linalg import ConstrainedSolver

B = bt.B


@pytest.fixture(scope="module")
def asm():
    """Three stacked fibers (3, 5 and 2 elements): N = 78 DOFs, 13 nodes."""
    fibers = [sf.Fiber.straight((0, 0, k), (1, 0, k), n_elements=ne) for k, ne in enumerate([3, 5, 2])]
    return Discretization(fibers).assembler


def element_matrices(asm, rng, shift=20.0):
    """Random unsymmetric element matrices, diagonally dominant enough to be safely non-singular."""
    nb = asm.nbfun
    return rng.normal(size=(asm.nelems, nb, nb)) + shift * np.eye(nb)


def pattern_triplets(N, rng, size=60):
    """COO triplets with node distance ≤ 1 (inside the block-tridiagonal pattern), repeated entries included,
    plus entries coupling the last node of the first fiber (node 3) to the first of the second (node 4)."""
    r = rng.integers(0, N, size=size)
    node = np.clip(r // B + rng.integers(-1, 2, size=size), 0, N // B - 1)
    c = node * B + rng.integers(0, B, size=size)
    r = np.concatenate([r, r[:5], 3 * B + np.arange(B), 4 * B + np.arange(B)])
    c = np.concatenate([c, c[:5], 4 * B + np.arange(B), 3 * B + np.arange(B)[::-1]])
    return r, c, rng.normal(size=r.size)


def dense(asm, Ke, extra):
    K = np.zeros((asm.N, asm.N))
    np.add.at(K, (asm.rows, asm.cols), Ke.ravel())
    for r, c, v in extra:
        np.add.at(K, (r, c), v)
    return K


def reference(K, rhs, constrained):
    """Dense solve on the free DOFs, 0 on the constrained ones (what ConstrainedSolver computes)."""
    N = K.shape[0]
    free = np.setdiff1d(np.arange(N), constrained)
    x = np.zeros(rhs.shape)
    x[free] = np.linalg.solve(K[np.ix_(free, free)], rhs[free])
    return x


def rel_err(x, ref):
    return np.abs(x - ref).max() / np.abs(ref).max()


@pytest.mark.parametrize("k", [None, 1, 3])
def test_block_solve_matches_dense_and_sparse_solves(asm, k):
    """Several fibers, constrained DOFs (also next to fiber ends), extra triplets inside the pattern, one and
    several right-hand sides: the block path solves and agrees with dense and SuperLU solves to ~1e-10."""
    rng = np.random.default_rng(3 if k is None else k)
    N = asm.N
    Ke = element_matrices(asm, rng)
    extra = [pattern_triplets(N, rng), pattern_triplets(N, rng, 10)]
    constrained = np.array([0, 1, 2, 17, 23, 24, 50, N - 1])
    rhs = rng.normal(size=(N,) if k is None else (N, k))
    solver = ConstrainedSolver(asm, constrained)
    x = solver.solve(Ke, rhs, extra)
    assert solver.last_method == "block" and solver.block_fallbacks == 0
    assert x.shape == rhs.shape
    K = dense(asm, Ke, extra)
    ref = reference(K, rhs, constrained)
    assert rel_err(x, ref) < 1e-10
    assert np.all(x[constrained] == 0.0)
    # SuperLU on the same matrix: constrained rows / columns replaced by the identity, rhs 0 there
    K[constrained] = 0.0
    K[:, constrained] = 0.0
    K[constrained, constrained] = 1.0
    b = rhs.copy()
    b[constrained] = 0.0
    assert rel_err(x, spla.spsolve(sps.csc_matrix(K), b).reshape(rhs.shape)) < 1e-10
    # the band path gives the same answer
    banded = ConstrainedSolver(asm, constrained, block=False)
    assert rel_err(x, banded.solve(Ke, rhs, extra)) < 1e-10 and banded.last_method == "banded"


def test_block_solve_of_a_real_tangent():
    """A real Newton tangent (two fibers, gravity, damping): block path, same answer as gbsv."""
    law = sf.paper_law()
    fibers = [sf.Fiber.straight((0, 0.3 * k, 0), (1, 0.3 * k, 0), n_elements=6, law=law) for k in range(2)]
    model = sf.Model(fibers)
    model.add_gravity((0, 0, -9.81))
    st = model.initial_state()
    dt = 1e-3
    ev = model.evaluate(st.u, st.v, st.a, st.t, c_v=1 / dt, c_a=1 / dt**2)
    constrained = model.constrained_dofs
    rhs = np.stack([-ev.residual, np.random.default_rng(0).normal(size=model.n_dofs)], axis=1)
    solver = ConstrainedSolver(model.discretization.assembler, constrained)
    x = solver.solve(ev.element_matrices, rhs, ev.extra)
    assert solver.last_method == "block"
    banded = ConstrainedSolver(model.discretization.assembler, constrained, block=False)
    ref = banded.solve(ev.element_matrices, rhs, ev.extra)
    assert banded.last_method == "banded"
    assert rel_err(x, ref) < 1e-10


def breakdown_triplets(N, rng, eps=0.0):
    """A non-singular block-tridiagonal matrix (as triplets) on which block LU without pivoting across blocks
    breaks down: nodes 0, 1, 2 carry [[I, I, 0], [I, (1 + eps) I, I], [0, I, 2 I]] (the Schur complement of
    node 1 is eps I); the other nodes are random and diagonally dominant."""
    nn = N // B
    K = np.zeros((nn, nn, B, B))
    for n in range(nn):
        K[n, n] = rng.normal(size=(B, B)) + 10 * np.eye(B)
        if n + 1 < nn:
            K[n, n + 1] = rng.normal(size=(B, B))
            K[n + 1, n] = rng.normal(size=(B, B))
    eye = np.eye(B)
    K[0, 0], K[0, 1], K[1, 0], K[1, 1], K[1, 2], K[2, 1], K[2, 2] = eye, eye, eye, (1 + eps) * eye, eye, eye, 2 * eye
    Kd = K.transpose(0, 2, 1, 3).reshape(N, N)
    r, c = np.nonzero(Kd)
    return r, c, Kd[r, c]


def test_block_breakdown_falls_back_to_the_band_solver(asm):
    """A zero Schur complement (a diagonal block that needs pivoting with the next node): the block LU stops,
    gbsv (which pivots across blocks) solves, and last_method / block_fallbacks say so."""
    rng = np.random.default_rng(5)
    N = asm.N
    Ke = np.zeros((asm.nelems, asm.nbfun, asm.nbfun))
    extra = [breakdown_triplets(N, rng)]
    A = np.zeros(N // B * 3 * B * B)
    assert bt.add_triplets(A, *extra[0], N)
    assert bt.factor_solve(A.reshape(-1, 3, B, B), np.ones((N // B, B, 1)), 1e-14)[1] == 2  # breaks down at node 1
    rhs = rng.normal(size=(N, 2))
    solver = ConstrainedSolver(asm, np.array([], dtype=int))
    x = solver.solve(Ke, rhs, extra)
    assert solver.last_method == "banded" and solver.block_fallbacks == 1
    assert rel_err(x, reference(dense(asm, Ke, extra), rhs, [])) < 1e-10


@pytest.mark.parametrize("eps", [1e-11, 1e-8])
def test_inaccurate_block_solve_is_rejected_by_the_residual_check(asm, eps):
    """A tiny (not zero) Schur complement: the block LU runs through but loses accuracy through element
    growth; the residual check rejects it and gbsv solves."""
    rng = np.random.default_rng(6)
    N = asm.N
    Ke = np.zeros((asm.nelems, asm.nbfun, asm.nbfun))
    extra = [breakdown_triplets(N, rng, eps)]
    rhs = rng.normal(size=N)
    K = dense(asm, Ke, extra)
    assert np.linalg.cond(K) < 1e3  # the loss of accuracy is the block LU's, not the matrix's
    A = np.zeros(N // B * 3 * B * B)
    bt.add_triplets(A, *extra[0], N)
    A, R = A.reshape(-1, 3, B, B), rhs.reshape(-1, B, 1)
    x, info = bt.factor_solve(A, R, 16 * np.finfo(float).eps)
    assert info == 0 and rel_err(x.ravel(), np.linalg.solve(K, rhs)) > 1e-9
    assert not bt.residual_ok(A, x, R, 1e3 * np.finfo(float).eps)
    solver = ConstrainedSolver(asm, np.array([], dtype=int))
    x = solver.solve(Ke, rhs, extra)
    assert solver.last_method == "banded" and solver.block_fallbacks == 1
    assert rel_err(x, reference(K, rhs, [])) < 1e-10


def test_residual_check(asm):
    """residual_ok accepts the block solution, rejects a perturbed one and non-finite values."""
    rng = np.random.default_rng(8)
    nn = asm.N // B
    A = np.zeros(nn * 3 * B * B)
    bt.scatter_add(A, bt.flat_index(asm.rows, asm.cols), element_matrices(asm, rng).ravel())
    A = A.reshape(nn, 3, B, B)
    R = rng.normal(size=(nn, B, 2))
    x, info = bt.factor_solve(A, R, 1e-14)
    assert info == 0 and bt.residual_ok(A, x, R, 1e3 * np.finfo(float).eps)
    y = x.copy()
    y[4, 2, 1] *= 1 + 1e-9
    assert not bt.residual_ok(A, y, R, 1e3 * np.finfo(float).eps)
    y = x.copy()
    y[7, 0, 0] = np.nan
    assert not bt.residual_ok(A, y, R, 1e3 * np.finfo(float).eps)
    B_ = A.copy()
    B_[3, 1, 0, 0] = np.inf
    assert bt.factor_solve(B_, R, 1e-14)[1] == 4


def test_extras_outside_the_pattern_fall_back(asm):
    """An extra entry two nodes away: gbsv when it is inside the band, SuperLU when outside."""
    rng = np.random.default_rng(9)
    N = asm.N
    Ke = element_matrices(asm, rng)
    constrained = np.array([3, 40])
    rhs = rng.normal(size=(N, 2))
    for col, method in [(2 * B, "banded"), (5 * B, "splu")]:  # row 5 (node 0) to node 2, to node 5
        r, c, v = pattern_triplets(N, rng)
        extra = [(r, c, v), (np.array([5]), np.array([col]), np.array([0.7]))]
        solver = ConstrainedSolver(asm, constrained)
        x = solver.solve(Ke, rhs, extra)
        assert solver.last_method == method and solver.block_fallbacks == 0
        assert rel_err(x, reference(dense(asm, Ke, extra), rhs, constrained)) < 1e-10


def test_other_structures_use_the_band_solver():
    """An assembler whose elements couple nodes two apart (a permuted mesh): no block path."""
    mesh = MeshLine(np.array([[0.0, 2.0, 1.0, 3.0]]), np.array([[0, 2, 1], [2, 1, 3]]))
    asm = BatchedAssembler(Basis(mesh, ElementVector(ElementLineHermite(), 3)))
    rng = np.random.default_rng(10)
    Ke = element_matrices(asm, rng)
    rhs = rng.normal(size=asm.N)
    solver = ConstrainedSolver(asm, np.array([0, 1, 2]))
    assert solver.block_index is None
    x = solver.solve(Ke, rhs)
    assert solver.last_method == "banded"
    assert rel_err(x, reference(dense(asm, Ke, []), rhs, [0, 1, 2])) < 1e-10


@pytest.mark.parametrize("block", [True, False])
def test_singular_matrices_raise(asm, block):
    """As before the block path: a singular matrix raises numpy.linalg.LinAlgError (from gbsv)."""
    rng = np.random.default_rng(11)
    Ke = element_matrices(asm, rng)
    Ke[:, :, 7] = 0.0  # the second DOF of each fiber's last node (local DOF 7 of one element only) gets no entries
    with pytest.raises(np.linalg.LinAlgError):
        ConstrainedSolver(asm, np.array([0]), block=block).solve(Ke, rng.normal(size=asm.N))
    with pytest.raises(np.linalg.LinAlgError):
        ConstrainedSolver(asm, np.array([0]), block=block).solve(np.zeros_like(Ke), rng.normal(size=asm.N))


@pytest.mark.parametrize("path", ["block", "banded", "splu"])
def test_kept_factors_solve_further_right_hand_sides(asm, path):
    """factor_solve's Factorization (modified Newton's kept matrix) solves new right-hand sides, one or
    several, like a fresh solve of the same matrix: block LU, band LU and SuperLU (a wide extra entry)."""
    rng = np.random.default_rng(11)
    N = asm.N
    Ke = element_matrices(asm, rng)
    extra = [pattern_triplets(N, rng)]
    if path == "splu":
        extra.append((np.array([2 * B]), np.array([N - 1]), np.array([0.3])))  # outside the band
    constrained = np.array([0, 1, 2, 30, N - 1])
    solver = ConstrainedSolver(asm, constrained, block=path == "block")
    x, lu = solver.factor_solve(Ke, rng.normal(size=N), extra)
    assert solver.last_method == lu.method == path
    K = dense(asm, Ke, extra)
    for rhs in (rng.normal(size=N), rng.normal(size=(N, 3))):
        kept = rhs.copy()
        y = lu.solve(rhs)
        assert np.array_equal(rhs, kept)  # not overwritten
        assert rel_err(y, reference(K, rhs, constrained)) < 1e-10 and np.all(y[constrained] == 0.0)
        assert rel_err(y, solver.solve(Ke, rhs, extra)) < 1e-13


def test_factor_and_solve_are_the_combined_block_lu():
    """bt.factor + bt.solve_factored give factor_solve's solution bit for bit; a breakdown is reported."""
    rng = np.random.default_rng(5)
    nn = 7
    A = rng.normal(size=(nn, 3, B, B))
    A[:, 1] += 10 * np.eye(B)
    A[0, 0] = A[-1, 2] = 0.0
    R = rng.normal(size=(nn, B, 2))
    x, info = bt.factor_solve(A, R, 1e-14)
    LU, piv, X, info2 = bt.factor(A, 1e-14)
    assert info == info2 == 0 and np.array_equal(bt.solve_factored(A, LU, piv, X, R), x)
    A[3, 1] = 0.0
    A[3, 0] = 0.0
    assert bt.factor(A, 1e-14)[3] == 4 and bt.factor_solve(A, R, 1e-14)[1] == 4


def test_solvers_of_one_assembler_share_their_index_maps(asm):
    """The index maps are made once per (assembler, constrained DOFs, block): a second solver reuses them,
    other constraints get their own, and every solver still solves its own system (dense reference)."""
    rng = np.random.default_rng(7)
    Ke = element_matrices(asm, rng)
    rhs = rng.normal(size=asm.N)
    one, two = ConstrainedSolver(asm, np.arange(6)), ConstrainedSolver(asm, np.arange(6))
    other = ConstrainedSolver(asm, np.arange(3, 9))
    band = ConstrainedSolver(asm, np.arange(6), block=False)
    assert two.block_index is one.block_index and two._fixed_band is one._fixed_band
    assert other.block_fixed is not one.block_fixed and band.block_index is None
    K = dense(asm, Ke, [])
    for solver, constrained in ((one, np.arange(6)), (two, np.arange(6)), (other, np.arange(3, 9)),
                                (band, np.arange(6))):
        x = solver.solve(Ke, -rhs)
        assert rel_err(x, reference(K, -rhs, constrained)) < 1e-10
        assert solver.last_method == ("banded" if solver is band else "block")


def test_threshold_pivoting_of_superlu_is_checked_and_redone_with_partial_pivoting(asm, monkeypatch):
    """SuperLU first factorizes with threshold pivoting (SPLU_PIVOT_THRESHOLD): one factorization when its
    solution passes the residual check; a rejected one is redone with partial pivoting.  The check accepts
    the solution and rejects a perturbed or non-finite one."""
    import skfiber.linalg as la

    N = asm.N
    rng = np.random.default_rng(12)
    Ke = element_matrices(asm, rng)
    far = (np.array([0, 5 * B]), np.array([5 * B, 0]), np.array([1.0, 1.0]))  # outside the band: SuperLU
    K = dense(asm, Ke, [far])
    rhs = rng.normal(size=N)
    calls = []
    real_splu = la.spla.splu
    monkeypatch.setattr(la.spla, "splu", lambda A, **kw: calls.append(kw) or real_splu(A, **kw))
    solver = ConstrainedSolver(asm, np.array([], dtype=int))
    x = solver.solve(Ke, rhs, [far])
    assert solver.last_method == "splu" and calls == [{"permc_spec": la.SPLU_ORDERING,
                                                         "diag_pivot_thresh": la.SPLU_PIVOT_THRESHOLD}]
    assert rel_err(x, np.linalg.solve(K, rhs)) < 1e-12
    Ks = sps.csc_matrix(K)
    assert la._sparse_residual_ok(Ks, x, rhs)
    y = x.copy()
    y[7] *= 1 + 1e-9
    assert not la._sparse_residual_ok(Ks, y, rhs)
    y[7] = np.nan
    assert not la._sparse_residual_ok(Ks, y, rhs)
    calls.clear()
    monkeypatch.setattr(la, "_sparse_residual_ok", lambda *args: False)  # the threshold's solution rejected
    x = solver.solve(Ke, rhs, [far])
    assert len(calls) == 2 and calls[1] == {} and solver.splu_fallbacks == 1  # then partial pivoting
    assert rel_err(x, np.linalg.solve(K, rhs)) < 1e-12


def test_superlu_factorizes_the_matrix_scaled_to_a_unit_diagonal(asm):
    """The sparse path factorizes diag(s) K diag(s) with s = |diag K|^(-1/2) (a zero diagonal scaled by its
    row's largest entry): the solutions of the scaled factors, for one and for several right-hand sides, are
    those of K itself, and rows whose diagonal is small beside their column's entries (as the Hermite slopes')
    keep their pivots on the diagonal."""
    import skfiber.linalg as la

    N = asm.N
    rng = np.random.default_rng(5)
    Ke = element_matrices(asm, rng)
    far = (np.array([0, 5 * B]), np.array([5 * B, 0]), np.array([1.0, 1.0]))  # outside the band: SuperLU
    size = np.where(np.arange(N) % B >= 3, 1e-4, 1.0)[asm.element_dofs.T]  # "slopes" 10⁻⁴ times "positions"
    Ke = Ke * size[:, :, None] * size[:, None, :]  # a slope's diagonal 2·10⁻³ times its column's largest
    K = dense(asm, Ke, [far])
    unscaled = spla.splu(sps.csc_matrix(K), permc_spec=la.SPLU_ORDERING, diag_pivot_thresh=la.SPLU_PIVOT_THRESHOLD)
    assert not np.array_equal(unscaled.perm_r, unscaled.perm_c)
    solver = ConstrainedSolver(asm, np.array([], dtype=int))
    rhs = rng.normal(size=(N, 3))
    x, factorization = solver.factor_solve(Ke, rhs, [far])
    assert solver.last_method == "splu" and solver.splu_fallbacks == 0
    assert rel_err(x, np.linalg.solve(K, rhs)) < 1e-10
    assert rel_err(factorization.solve(rhs[:, 1]), np.linalg.solve(K, rhs[:, 1])) < 1e-10
    lu, scale = factorization.factors
    np.testing.assert_allclose(scale, 1 / np.sqrt(np.abs(np.diag(K))))
    assert np.array_equal(lu.perm_r, lu.perm_c)
    Z = sps.csc_matrix(np.array([[0.0, 4.0, 0.0], [4.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(la.symmetric_scaling(Z), [0.5, 1.0, 1.0])  # by the row's largest; empty: 1
    T = sps.csc_matrix(np.array([[1e-320, 1.0], [1.0, 4.0]]))  # a subnormal diagonal: no overflow
    s = la.symmetric_scaling(T)
    assert np.all(np.isfinite((sps.diags(s) @ T @ sps.diags(s)).toarray()))
