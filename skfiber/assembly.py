"""Fast evaluation of scikit-fem forms: one form call per assembly.

scikit-fem's :meth:`BilinearForm.assemble` calls the form once per pair of
local basis functions (12 × 12 = 144 calls for a 3D cubic Hermite cable), a
floor of about 1.5 ms per assembly whatever the mesh size.  A bilinear form
is, at each quadrature point, a bilinear function of the *jets* of u and v
(value, first and second derivatives: 3 + 3 + 3 numbers for a vector field on
a line).  So the same form function is called **once**, with u and v replaced
by the unit jets stacked on extra axes (test jets on one axis, trial jets on
another; :mod:`skfem.helpers` such as ``dot`` broadcast over them).  That
gives the pointwise coefficient matrix D (jets × jets × elements × points),
and the element matrices follow as Kₑ = Σ_q Bᵀ D B dx with B the jets of the
local basis functions — a batched matrix product.  The result equals
``form.assemble(basis, **w)`` to round-off (tested).  Forms that do not use
second derivatives are detected (they run with ``hess=None``) and use the
smaller first-order jets.

Examples
--------
>>> import numpy as np
>>> from skfem import MeshLine, Basis, ElementVector, ElementLineHermite, BilinearForm
>>> from skfem.helpers import dot
>>> basis = Basis(MeshLine(np.linspace(0, 1, 5)), ElementVector(ElementLineHermite(), 3))
>>> mass = BilinearForm(lambda u, v, w: dot(u, v))
>>> asm = BatchedAssembler(basis)
>>> K = asm.to_csr(asm.bilinear(mass))
>>> bool(abs(K - mass.assemble(basis)).max() < 1e-14)
True
"""
from __future__ import annotations

import contextlib
import re

import numpy as np
import scipy.sparse as sps
from skfem.assembly.form.form import FormExtraParams
from skfem.element import DiscreteField

__all__ = ["BatchedAssembler", "InvalidForm", "form_function", "named_term", "not_linear", "not_one_number"]


def form_function(form):
    """The plain function behind a decorated skfem form (or the function itself)."""
    return getattr(form, "form", None) or form


class InvalidForm(ValueError):
    """A form that is wrong whatever evaluates it: a residual form that does not give one number per point
    linear in the test function (a tangent form: bilinear in the trial and test functions)."""


def not_one_number(shape) -> str:
    """The message of :class:`InvalidForm` for a form that gives ``shape`` values per point."""
    return (f"the form returns {tuple(shape)} values per point, not one number: contract it with the test "
            "function, e.g. dot(f, v) * w.J for a vector f")


def not_linear(kind: str, what: str) -> str:
    """The message of :class:`InvalidForm` for a ``kind`` ("residual", "tangent") form with a part without
    ``what`` ("test function", "trial function")."""
    example = "dot(f, v) * w.J" if what == "test function" else "dot(K @ u, v) * w.J (u and v in every part)"
    return (f"the {kind} form is not linear in the {what} (it has a part without it): multiply every part by "
            f"the {what}, e.g. {example}")


#: the coefficients a form reads from ``w`` (skfiber.terms lists what they hold)
COEFFICIENTS = ("x", "xdot", "xddot", "X", "theta", "t", "J", "area", "rho", "gamma_m", "alpha", "x_s", "xdot_s",
                "lam", "lamdot", "S", "dS_dlam", "dS_dlamdot", "h", "c_v", "c_a")


def unknown_coefficient(name: str) -> str:
    """The message for a form that reads ``w.<name>``, which skfiber does not provide."""
    return (f"the form reads w.{name}, which skfiber does not provide (w holds {', '.join(COEFFICIENTS)}); a "
            "parameter of your own is a Python number the form closes over, e.g. EI = 1e-4 defined above it")


def returns_no_number(value) -> str:
    """The message of :class:`InvalidForm` for a form that returned ``value`` (None, a string, …), not numbers."""
    return (f"the form returns {value!r} ({type(value).__name__}), not a number per point: return its integrand, "
            "e.g. dot(f, v) * w.J")


def not_linear_degree(kind: str, what: str) -> str:
    """The message of :class:`InvalidForm` for a ``kind`` form that is not of degree 1 in ``what``."""
    return (f"the {kind} form is not linear in the {what} (its value at twice or minus the {what} is not twice or "
            f"minus its value): a part of degree 2 or more in it (e.g. an energy written in place of its variation), "
            f"or the {what} inside a branch or a nonlinear function (np.maximum, np.abs, np.where of an expression "
            f"holding it; a one-sided law branches on the state, not on the {what}); every part must hold the "
            f"{what} once, linearly, e.g. a · dot(d2(w.x), d2(v)) for the variation of (a/2) |d2(w.x)|²")


#: scikit-fem's message for a coefficient that ``w`` does not hold
_MISSING = re.compile(r"Attribute '(\w+)' not found in 'w'")


def missing_coefficient(error: AttributeError) -> str | None:
    """The name of the coefficient a form read from ``w`` that skfiber does not give (``error`` scikit-fem's),
    or None (another AttributeError, or a coefficient this ``w`` lacks but skfiber gives elsewhere)."""
    missing = _MISSING.match(str(error))
    return None if missing is None or missing.group(1) in COEFFICIENTS else missing.group(1)


@contextlib.contextmanager
def named_term(name: str):
    """Within it, an :class:`InvalidForm` names the term ``name`` it comes from, and any other error raised
    by evaluating the term's forms gets a note naming it (Python ≥ 3.11)."""
    try:
        yield
    except InvalidForm as error:
        raise InvalidForm(f"the term {name!r}: {error}") from None
    except Exception as error:
        missing = missing_coefficient(error) if isinstance(error, AttributeError) else None
        if missing is not None:
            raise InvalidForm(f"the term {name!r}: {unknown_coefficient(missing)}") from None
        if hasattr(error, "add_note"):
            error.add_note(f"(raised while skfiber evaluated the term {name!r})")
        raise


def _scaled(field: DiscreteField, factor: float) -> DiscreteField:
    """``factor`` times a probe field, its derivatives included."""
    return DiscreteField(*(None if a is None else factor * np.asarray(a) for a in field.astuple))


def _one_number(values: np.ndarray, shape: tuple) -> np.ndarray:
    """``values`` of a form called with probes, broadcast to ``shape`` (probe axes, e, q), or InvalidForm when
    the form gave more than one number per point (extra leading axes, or axes that do not broadcast) or
    something else than numbers (None: a form without ``return``)."""
    if values.dtype == object:
        raise InvalidForm(returns_no_number(values.flat[0] if values.size else None))
    try:
        if values.ndim <= len(shape):
            return np.broadcast_to(values, shape)
    except ValueError:
        pass
    extra = values.shape[:max(values.ndim - len(shape), 0)] or values.shape[:1]
    raise InvalidForm(not_one_number(extra))


def _has_part(values: np.ndarray) -> bool:
    """Whether a form's values at a zero probe are nonzero anywhere they are finite (a non-finite state is
    reported by the residual's own check)."""
    if not values.any():  # a correct form: exactly zero (the common case, one pass)
        return False
    return bool(np.any((values != 0) & np.isfinite(values)))


class BatchedAssembler:
    """Evaluate skfem forms on all elements with one form call.

    Parameters
    ----------
    basis
        A scikit-fem ``CellBasis`` (here: vector cubic Hermite on a MeshLine).

    Notes
    -----
    Element matrices have shape (nelems, nbfun_test, nbfun_trial) and
    element vectors (nelems, nbfun): rows belong to the test function, as
    in scikit-fem.
    """

    def __init__(self, basis):
        self.basis = basis
        nb = basis.Nbfun
        fields = [basis.basis[i][0] for i in range(nb)]
        f0 = fields[0]
        self.ncomp = f0.shape[0]
        self.dim = f0.grad.shape[1]
        self.has_hess = f0.hess is not None
        nc, dim = self.ncomp, self.dim
        ne, nq = basis.nelems, basis.X.shape[-1]
        value = np.stack([np.asarray(f) for f in fields], axis=0)  # (nb, c, e, q)
        grad = np.stack([f.grad for f in fields], axis=0)  # (nb, c, d, e, q)
        parts = [value.reshape(nb, nc, ne, nq), grad.reshape(nb, nc * dim, ne, nq)]
        if self.has_hess:
            hess = np.stack([f.hess for f in fields], axis=0)
            parts.append(hess.reshape(nb, nc * dim * dim, ne, nq))
        jets = np.concatenate(parts, axis=1)  # (nb, J, e, q)
        self.n_jets = {False: nc * (1 + dim), True: jets.shape[1]}
        # B[e, q, jet, i]: jets of the local basis functions
        self._B = np.ascontiguousarray(jets.transpose(2, 3, 1, 0))
        # contiguous copies for first-order (value + gradient) and full jets
        self._Bj = {h: np.ascontiguousarray(self._B[:, :, :J, :]) for h, J in self.n_jets.items()}
        # the same as sparse matrices: DOF vector → jets at all points, rows (e, q, jet);
        # interpolation is P @ dofs and a linear form's vector is Pᵀ @ r
        self._P = {}
        for h, J in self.n_jets.items():
            Bh = self._Bj[h]
            rows = np.broadcast_to(np.arange(ne * nq * J).reshape(ne, nq, J, 1), Bh.shape)
            cols = np.broadcast_to(basis.element_dofs.T[:, None, None, :], Bh.shape)
            keep = Bh != 0
            P = sps.csr_matrix((Bh[keep], (rows[keep], cols[keep])), shape=(ne * nq * J, basis.N))
            self._P[h] = (P, P.T.tocsr(), abs(P).T.tocsr())
        self.dx = np.asarray(basis.dx)
        self.element_dofs = basis.element_dofs  # (nb, e)
        self.N = basis.N
        self.nelems, self.nqp, self.nbfun = ne, nq, nb
        self._probes = {}
        self._uses_hess: dict = {}
        self._degree_checked: set = set()  # the residual forms checked to be of degree 1 in v (their first call)
        rows = np.broadcast_to(self.element_dofs.T[:, :, None], (ne, nb, nb)).ravel()
        cols = np.broadcast_to(self.element_dofs.T[:, None, :], (ne, nb, nb)).ravel()
        self.rows, self.cols = rows, cols
        # CSR pattern and the map from element entries to CSR data
        pattern = sps.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(self.N, self.N))
        pattern.sum_duplicates()
        self._csr_indptr = pattern.indptr
        self._csr_indices = pattern.indices
        lookup = sps.csr_matrix(
            (np.arange(pattern.nnz) + 1.0, pattern.indices, pattern.indptr), shape=pattern.shape
        )
        self._csr_map = np.asarray(lookup[rows, cols]).ravel().astype(np.int64) - 1
        self.bandwidth = int(np.max(np.abs(rows - cols)))

    @property
    def basis_jets(self) -> np.ndarray:
        """B (e, q, jets, nb): the jets (value, first and second derivatives, component-major within each
        order) of the local basis functions at the quadrature points."""
        return self._B

    # --- unit jets ------------------------------------------------------------
    def probe(self, *, axis: int, naxes: int, hess: bool, zero: bool = False) -> DiscreteField:
        """Unit jets stacked on extra axis ``axis`` of ``naxes`` extra axes.

        value (c, *extra, 1, 1), grad (c, d, *extra, 1, 1), hess (c, d, d, *extra, 1, 1).  With ``zero``, a
        last field whose jets are all zero follows the unit jets on that axis (a form's value there is its part
        without the field: zero for a form linear in it).
        """
        key = (axis, naxes, hess, zero)
        if key in self._probes:
            return self._probes[key]
        nc, dim = self.ncomp, self.dim
        J = self.n_jets[hess]
        eye = np.eye(J, J + 1) if zero else np.eye(J)
        extra = [1] * naxes
        extra[axis] = J + 1 if zero else J

        def block(start, shape):
            n = int(np.prod(shape))
            # (shape..., J) → (shape..., *extra, 1, 1): J is the only non-unit extra axis
            return eye[start:start + n].reshape(*shape, *extra, 1, 1)

        value = block(0, (nc,))
        grad = block(nc, (nc, dim))
        h = block(nc + nc * dim, (nc, dim, dim)) if hess else None
        field = DiscreteField(value, grad=grad, hess=h)
        self._probes[key] = field
        return field

    def call_form(self, form, naxes: int, make_args):
        """``make_args(hess)`` — a call of ``form`` with probes (:meth:`probe`) — with first-order jets
        (``hess=False``) when the form allows, else with second derivatives; returns (result, hess).
        Which one a form needs is found on its first call and remembered."""
        fn = form_function(form)
        try:
            if not self.has_hess:
                return make_args(False), False
            uses = self._uses_hess.get(fn)
            if uses is None:
                try:
                    out = make_args(False)
                    self._uses_hess[fn] = False
                    return out, False
                except (TypeError, ValueError, AttributeError, IndexError):
                    self._uses_hess[fn] = True
                    return make_args(True), True
            return make_args(uses), uses
        except ValueError as err:
            if "could not be broadcast" not in str(err):
                raise
            raise ValueError(f"{err}: numpy's path evaluates a form at all the test function's jets at once, on "
                             "axes of v of its own, so an elementwise product of v with a vector field, (a * v)"
                             ".sum(axis=0), does not broadcast there; write it as dot(a, v) or by component "
                             "(a[0] * v[0] + …), which run on both paths") from err

    # --- evaluation of fields ------------------------------------------------
    def interpolate(self, dofs: np.ndarray) -> DiscreteField:
        """Interpolate a DOF vector (N,) at the quadrature points (value, grad, hess)."""
        return self.interpolate_many(np.asarray(dofs)[None, :])[0]

    def interpolate_many(self, dofs: np.ndarray) -> list[DiscreteField]:
        """Interpolate several DOF vectors (m, N) at once (one matrix product)."""
        dofs = np.asarray(dofs)
        m = dofs.shape[0]
        nc, dim = self.ncomp, self.dim
        ne, nq = self.nelems, self.nqp
        Jall = self._B.shape[2]
        P = self._P[self.has_hess][0]
        # one sparse matrix–vector product per field (faster than P @ dofs.T)
        jets = np.stack([P @ row for row in dofs], axis=-1).reshape(ne, nq, Jall, m)
        jets = np.moveaxis(jets, (3, 2), (0, 1))  # (m, J, e, q)
        out = []
        for k in range(m):
            value = jets[k, :nc]
            grad = jets[k, nc:nc + nc * dim].reshape(nc, dim, ne, nq)
            hess = None
            if self.has_hess:
                hess = jets[k, nc + nc * dim:].reshape(nc, dim, dim, ne, nq)
            out.append(DiscreteField(value, grad=grad, hess=hess))
        return out

    def parameters(self, **w) -> FormExtraParams:
        """Build ``w`` as skfem does: DOF vectors (N,) are interpolated."""
        out = FormExtraParams(self.basis.default_parameters())
        for key, value in w.items():
            if isinstance(value, np.ndarray) and value.ndim == 1 and value.shape[0] == self.N:
                value = self.interpolate(value)
            out[key] = value
        return out

    # --- forms ----------------------------------------------------------------
    def pointwise_bilinear(self, form, w: FormExtraParams) -> tuple[np.ndarray, bool]:
        """The coefficient matrix D (J_test, J_trial, e, q) of a bilinear form.

        Raises
        ------
        InvalidForm
            When the form does not give one number per point, or has a part without the test or the trial
            function (checked at every call, at the points where that part is finite).
        """
        fn = form_function(form)

        def run(hess):
            u = self.probe(axis=1, naxes=2, hess=hess, zero=True)
            v = self.probe(axis=0, naxes=2, hess=hess, zero=True)
            return np.asarray(fn(u, v, w))

        D, hess = self.call_form(form, 2, run)
        J = self.n_jets[hess]
        D = _one_number(D, (J + 1, J + 1, self.nelems, self.nqp))
        for part, what in ((D[J], "test function"), (D[:, J], "trial function")):
            if _has_part(part):
                raise InvalidForm(not_linear("tangent", what))
        if fn not in self._degree_checked and self._check_degree(D, "tangent", lambda u, v: np.asarray(fn(u, v, w)),
                                                                  axes=2, hess=hess):
            self._degree_checked.add(fn)  # once per form: 2 and −1 times the values at 2u, −u (and v)
        return D[:J, :J], hess

    def _check_degree(self, values: np.ndarray, kind: str, call, *, axes: int, hess: bool) -> bool:
        """InvalidForm unless a form's ``values`` at the probes double and change sign with each field: a
        linear form's with the test function, a bilinear form's with the test and with the trial function
        (a form quadratic in one, or with a branch on its sign, passes the check for a part without it).
        Returns whether the check tested something (False where every finite value is 0: a form whose
        coefficients vanish now is checked again at its next call)."""
        fields = ("test function", "trial function")[:axes]
        scale = np.max(np.abs(values[np.isfinite(values)]), initial=0.0)
        if scale == 0.0:
            return False
        for axis, what in enumerate(fields):
            for factor in (2.0, -1.0):
                probes = [self.probe(axis=a, naxes=axes, hess=hess, zero=True) for a in range(axes)]
                probes[axis] = _scaled(probes[axis], factor)
                scaled = _one_number(call(*reversed(probes)), values.shape)  # (trial, test): the form's order
                finite = np.isfinite(values) & np.isfinite(scaled)
                if np.max(np.abs(scaled[finite] - factor * values[finite]), initial=0.0) > 1e-6 * 2 * scale:
                    raise InvalidForm(not_linear_degree(kind, what))
        return True

    def contract(self, D: np.ndarray, hess: bool) -> np.ndarray:
        """Element matrices Kₑ = Σ_q Bᵀ D B dx from pointwise coefficients D."""
        B = self._Bj[hess]  # (e, q, J, nb)
        ne, nq, nb = self.nelems, self.nqp, self.nbfun
        # jets that the form does not couple (zero rows and columns of D) are skipped
        active = np.flatnonzero(np.any(D != 0, axis=(1, 2, 3)) | np.any(D != 0, axis=(0, 2, 3)))
        if active.size < B.shape[2]:
            D = D[np.ix_(active, active)]
            B = np.ascontiguousarray(B[:, :, active, :])
        J = active.size
        Dm = np.moveaxis(D * self.dx, (0, 1), (2, 3))  # (e, q, J, J)
        T = Dm @ B  # (e, q, J, nb)
        Bf = B.reshape(ne, nq * J, nb)
        return np.swapaxes(Bf, 1, 2) @ T.reshape(ne, nq * J, nb)

    def bilinear(self, form, w: FormExtraParams | None = None, **kwargs) -> np.ndarray:
        """Element matrices (e, nb_test, nb_trial) of a bilinear form."""
        w = w if w is not None else self.parameters(**kwargs)
        D, hess = self.pointwise_bilinear(form, w)
        return self.contract(D, hess)

    def pointwise_linear(self, form, w: FormExtraParams) -> tuple[np.ndarray, bool]:
        """The coefficients r (e, q, J) of a linear form times the quadrature weights.

        Raises
        ------
        InvalidForm
            When the form does not give one number per point, or has a part without the test function
            (checked at every call, at the points where that part is finite).
        """
        fn = form_function(form)

        def run(hess):
            return np.asarray(fn(self.probe(axis=0, naxes=1, hess=hess, zero=True), w))

        r, hess = self.call_form(form, 1, run)
        J = self.n_jets[hess]
        r = _one_number(r, (J + 1, self.nelems, self.nqp))
        if _has_part(r[J]):
            raise InvalidForm(not_linear("residual", "test function"))
        if fn not in self._degree_checked and self._check_degree(r, "residual", lambda v: np.asarray(fn(v, w)),
                                                                  axes=1, hess=hess):
            self._degree_checked.add(fn)  # once per form: its values at 2v and −v are 2 and −1 times those at v
        r = r[:J] * self.dx
        return np.moveaxis(r, 0, 2), hess

    def linear(self, form, w: FormExtraParams | None = None, **kwargs) -> np.ndarray:
        """Element vectors (e, nb) of a linear form."""
        w = w if w is not None else self.parameters(**kwargs)
        r, hess = self.pointwise_linear(form, w)
        ne, nq, J = r.shape
        B = self._Bj[hess].reshape(ne, nq * J, self.nbfun)
        return (r.reshape(ne, 1, nq * J) @ B)[:, 0, :]

    def linear_vector(self, form, w: FormExtraParams | None = None, *, magnitude: bool = False, **kwargs):
        """The assembled global vector (N,) of a linear form (faster than
        ``vector(linear(...))``: one sparse product).

        With ``magnitude=True`` also Σ |contributions| per DOF (the scale of
        the round-off in the assembled vector)."""
        w = w if w is not None else self.parameters(**kwargs)
        r, hess = self.pointwise_linear(form, w)
        r = r.ravel()
        if magnitude:
            return self._P[hess][1] @ r, self._P[hess][2] @ np.abs(r)
        return self._P[hess][1] @ r

    # --- scattering -----------------------------------------------------------
    def vector(self, element_vectors: np.ndarray) -> np.ndarray:
        """Global vector from element vectors (e, nb)."""
        return np.bincount(
            self.element_dofs.T.ravel(), weights=element_vectors.ravel(), minlength=self.N
        )

    def to_csr(self, element_matrices: np.ndarray) -> sps.csr_matrix:
        """Global CSR matrix from element matrices (e, nb, nb)."""
        data = np.bincount(
            self._csr_map, weights=element_matrices.ravel(), minlength=self._csr_indices.size
        )
        return sps.csr_matrix((data, self._csr_indices, self._csr_indptr), shape=(self.N, self.N))
