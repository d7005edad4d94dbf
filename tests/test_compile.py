"""The form compiler (skfiber.compile): the generated kernel is the forms, its tangents are their derivatives."""
import sys
import warnings

import numpy as np
import pytest
import sympy as sp
from skfem import BilinearForm, LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber import forms
from skfiber.compile.codegen import branch_expressions
from skfiber.compile.tracer import InvalidForm, Untraceable, trace, traced_coefficients
from skfiber.compile.cache import cache_folder
from skfiber.terms import d1, d2

EI = 2e-3


@LinearForm
def bending(v, w):
    """EI ∫ x_ss · ξ_ss dS (the README's term)."""
    return EI * dot(d2(w.x), d2(v)) / w.J**3


@LinearForm
def viscous_drag(v, w):
    """A user term with a rate part and a nonlinear elastic part: ∫ (c |x′|² ẋ + k x_s (x_s·ẋ_s)) · ξ dS."""
    x_s = d1(w.x) / w.J
    return (3.0 * dot(x_s, x_s) * dot(w.xdot, v) + 40.0 * dot(x_s, d1(w.xdot) / w.J) * dot(x_s, d1(v))) * w.J


def make_model(*terms, compiled=True, laws=None):
    """Two fibers with different laws (one of them viscous, both active), one curved."""
    laws = laws or [sf.paper_law(sigma0=30.0), sf.paper_law(sigma0=12.0, mu_muscle=4e4, s_max=2e5)]
    fibers = [
        sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=5, law=laws[0], radius=0.05,
                          muscle_fraction=lambda t: 16 * (1 - t) ** 2 * t**2, activation=lambda t: 0.3 + 0.5 * t),
        sf.Fiber.polyline([(0, 0.4, 0), (0.5, 0.6, 0), (1, 0.4, 0.3)], n_elements=4, law=laws[1], radius=0.03,
                          activation=0.2),
    ]
    model = sf.Model(fibers, compiled=compiled)
    for k, term in enumerate(terms):
        model.add_term(term, name=f"t{k}")
    return model


def random_state(model, rng, size=0.03):
    n = model.n_dofs
    return size * rng.standard_normal(n), rng.standard_normal(n), 10 * rng.standard_normal(n)


def relative(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def test_kernel_equals_skfem_assembly_and_the_batched_assembler(rng):
    """Each row of the generated kernel is its form assembled by scikit-fem itself and by BatchedAssembler."""
    model = make_model(bending, viscous_drag)
    kernel = model.form_kernel
    assert kernel.names == ("internal_force", "inertia", "t0", "t1") and kernel.untraced == {}
    assert kernel.n_branches == 1  # two laws of one form share the code; their numbers are parameters
    d = model.discretization
    basis, asm = d.basis, d.assembler
    for _ in range(3):
        u, v, a = random_state(model, rng)
        t = float(rng.uniform(0, 1))
        out = kernel(u, v, a, t, alpha=model.activations(t).ravel(), c_v=7.0, c_a=90.0)
        w = model.coefficients(u, v, t, c_v=7.0, a=a, c_a=90.0)
        for row, term in zip(out.residuals, model.all_terms):
            batched = asm.linear_vector(term.residual, w)
            params = {k: w[k] for k in ("J", "area", "rho", "x_s", "xdot_s", "S", "xddot", "x", "xdot")}
            skfem = term.residual.assemble(basis, **params)
            assert relative(row, batched) <= 1e-12, term.name
            assert relative(row, skfem) <= 1e-12, term.name
        np.testing.assert_allclose(out.stretch, w["lam"], rtol=1e-14)


@pytest.mark.parametrize("terms", [(), (bending,), (viscous_drag,), (bending, viscous_drag)],
                         ids=["builtin", "bending", "viscous", "both"])
def test_derived_tangent_equals_finite_differences(terms, rng):
    """K δ = d/dε R(u + εδ, v + c_v εδ, a + c_a εδ) for every term, term by term (central differences)."""
    model = make_model(*terms)
    kernel = model.form_kernel
    d = model.discretization
    c_v, c_a = 13.0, 400.0
    u, v, a = random_state(model, rng)
    t = 0.4
    alpha = model.activations(t).ravel()
    for name in kernel.names:
        mask = kernel.mask({name})
        out = kernel(u, v, a, t, alpha=alpha, c_v=c_v, c_a=c_a, mask=mask)
        K = d.assembler.to_csr(out.element_matrices)
        for _ in range(2):
            delta = rng.standard_normal(d.n_dofs)
            h = 1e-6 / np.max(np.abs(delta))
            plus = kernel(u + h * delta, v + c_v * h * delta, a + c_a * h * delta, t, alpha=alpha, c_v=c_v,
                          c_a=c_a, mask=mask, tangent=False)
            minus = kernel(u - h * delta, v - c_v * h * delta, a - c_a * h * delta, t, alpha=alpha, c_v=c_v,
                           c_a=c_a, mask=mask, tangent=False)
            k = list(kernel.names).index(name)
            fd = (plus.residuals[k] - minus.residuals[k]) / (2 * h)
            assert np.linalg.norm(K @ delta - fd) <= 1e-6 * np.linalg.norm(fd), name


def test_check_tangent_through_the_model():
    """The model's tangent (kernel) passes the library's own finite-difference check, statics and dynamics."""
    model = make_model(bending, viscous_drag)
    model.fix(0, "start")
    model.fix(1, "end")
    assert sf.check_tangent(model, dt=0.01) < 1e-6
    assert sf.check_tangent(model) < 1e-6


@pytest.mark.parametrize("dt", [None, 0.01])
def test_numpy_path_tangent_against_fd(dt):
    """The numpy path's own tangents (the complex step through the forms) pass the finite-difference check
    directly, not only by agreeing with the compiled kernel."""
    model = make_model(bending, viscous_drag, compiled=False)
    model.fix(0, "start")
    model.fix(1, "end")
    assert sf.check_tangent(model, dt=dt, perturbation=0.05) < 1e-6


def test_compiled_and_numpy_paths_agree(rng):
    """Model(compiled=False) evaluates the same forms with numpy: same residual and tangent."""
    fast, slow = make_model(bending, viscous_drag), make_model(bending, viscous_drag, compiled=False)
    u, v, a = random_state(fast, rng)
    e1 = fast.evaluate(u, v, a, 0.2, c_v=10.0, c_a=100.0)
    e2 = slow.evaluate(u, v, a, 0.2, c_v=10.0, c_a=100.0)
    assert relative(e1.residual, e2.residual) <= 1e-12
    assert relative(e1.element_matrices, e2.element_matrices) <= 1e-10  # numpy: explicit / complex-step tangents
    assert e1.min_stretch == pytest.approx(e2.min_stretch, rel=1e-14)
    e3 = fast.evaluate(u, v, a, 0.2, c_v=10.0, c_a=100.0, parts=["t0"])
    e4 = slow.evaluate(u, v, a, 0.2, c_v=10.0, c_a=100.0, parts=["t0"])
    assert relative(e3.residual, e4.residual) <= 1e-12


def test_replaced_and_edited_forms_change_the_result(rng, monkeypatch):
    model = make_model()
    u, v, a = random_state(model, rng)
    before = model.evaluate(u, v, a, 0.1, c_v=0.0, c_a=0.0, parts=["internal_force"]).residual

    @LinearForm
    def doubled(v_, w):
        return 2 * w.area * w.S * dot(w.x_s, forms.ds(v_, w)) * w.J

    model.replace_term("internal_force", doubled)
    after = model.evaluate(u, v, a, 0.1, c_v=0.0, c_a=0.0, parts=["cable"]).residual
    np.testing.assert_allclose(after, 2 * before, rtol=1e-13, atol=1e-13 * np.abs(before).max())
    # editing skfiber.forms itself changes every model made afterwards
    monkeypatch.setattr(forms, "internal_force", doubled)
    edited = make_model().evaluate(u, v, a, 0.1, c_v=0.0, c_a=0.0, parts=["internal_force"]).residual
    np.testing.assert_allclose(edited, 2 * before, rtol=1e-13, atol=1e-13 * np.abs(before).max())
    with pytest.raises(ValueError, match="no term named 'nonsense'"):
        model.replace_term("nonsense", doubled)
    with pytest.raises(ValueError, match="the name 'inertia' is taken"):
        model.add_term(doubled, name="inertia")


def test_an_explicit_tangent_is_the_one_compiled():
    """A user's own tangent form is used as given (so check_tangent checks it), not replaced by the derived one."""
    @LinearForm
    def spring(v, w):
        return 1e3 * dot(w.x, w.x) * dot(w.x, v) * w.J

    @BilinearForm
    def right(u, v, w):
        return 1e3 * (dot(w.x, w.x) * dot(u, v) + 2 * dot(w.x, u) * dot(w.x, v)) * w.J

    @BilinearForm
    def wrong(u, v, w):  # misses the 2 (x·u)(x·v) part
        return 1e3 * dot(w.x, w.x) * dot(u, v) * w.J

    for tangent, ok in ((right, True), (wrong, False)):
        model = make_model()
        model.add_term(spring, tangent, name="spring")
        assert "spring" in model.form_kernel.names
        error = sf.check_tangent(model, parts=["spring"])
        assert (error < 1e-6) == ok, error


def test_the_source_is_the_cache_key(rng):
    """Another form gives another source, module and cache file; the same forms give the same ones."""
    a, b = make_model(bending), make_model(bending)
    c = make_model(viscous_drag)
    assert a.form_kernel.source == b.form_kernel.source != c.form_kernel.source
    for model in (a, c):
        u, v, acc = random_state(model, rng)
        model.evaluate(u, v, acc, 0.0, c_v=1.0, c_a=1.0)
    fa, fc = a.form_kernel.function, c.form_kernel.function
    assert fa is not fc and fa.py_func.__module__ != fc.py_func.__module__
    assert b.form_kernel.function is fa  # the module is loaded once per source
    files = {p.name for p in cache_folder().glob("forms_*.py")}
    for f in (fa, fc):
        assert f"forms_{f.py_func.__module__.rsplit('_', 1)[1]}.py" in files
    # different numbers (EI) in the same form: the same source, numbers are parameters
    global EI
    saved, EI = EI, 7e-3
    try:
        assert make_model(bending).form_kernel.source == a.form_kernel.source
    finally:
        EI = saved


def test_untraceable_term_falls_back_with_a_warning(rng):
    """A value-dependent branch the tracer cannot follow (np.minimum of a whole vector: numpy's loop over its
    components asks for the truth of each comparison): the term runs with numpy (warned, naming the term and
    the construct), with the right numbers; the other terms stay compiled."""
    @LinearForm
    def one_sided(v, w):  # a spring acting only in compression of z
        return 1e3 * np.minimum(w.x, 0.0)[2] * v[2] * w.J

    model = make_model(one_sided)
    named = r"'t0' cannot be compiled \(a branch on a value .* at test_compile\.py:\d+\)"  # (the form's line)
    with pytest.warns(RuntimeWarning, match=named):
        kernel = model.form_kernel
    assert kernel.names == ("internal_force", "inertia") and "t0" in kernel.untraced
    slow = make_model(one_sided, compiled=False)
    u, v, a = random_state(model, rng)
    u[2::6] -= 0.05
    e1 = model.evaluate(u, v, a, 0.3, c_v=5.0, c_a=25.0)
    e2 = slow.evaluate(u, v, a, 0.3, c_v=5.0, c_a=25.0)
    assert relative(e1.residual, e2.residual) <= 1e-12
    assert relative(e1.element_matrices, e2.element_matrices) <= 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once
        model.evaluate(u, v, a, 0.3, c_v=5.0, c_a=25.0)


BRANCHES = {
    "maximum": lambda v, w: 5e3 * np.maximum(w.X[2] - w.x[2], 0.0) * (-v[2]) * w.J,
    "minimum": lambda v, w: 5e3 * np.minimum(w.x[2] - w.X[2], 0.0) * v[2] * w.J,
    "abs": lambda v, w: 5e3 * np.abs(w.x[2] - w.X[2]) * (w.x[2] - w.X[2]) * v[2] * w.J,
    "clip": lambda v, w: 5e3 * np.clip(w.x[2] - w.X[2], -0.01, 0.0) * v[2] * w.J,
    "where": lambda v, w: 5e3 * np.where((w.x[2] < w.X[2]) & (w.t > 0.5), w.X[2] - w.x[2], 0.0) * (-v[2]) * w.J,
    "switch": lambda v, w: 1e3 * (w.t > 0.5) * dot(w.x, w.x) * dot(w.x, v) * w.J,
    "clip, crossed bounds": lambda v, w: 5e3 * np.clip(w.x[2], 0.01, -0.01) * v[2] * w.J,  # numpy: the upper one
    "clip, one bound": lambda v, w: 5e3 * (np.clip(w.x[2], None, 0.0) + np.clip(w.x[2], -np.inf, 0.0)) * v[2] * w.J,
    "conditions as values": lambda v, w: 5e3 * np.where(w.t > 0.5, w.x[2] < 0, 1 - (w.x[2] > 0.1)) * w.x[2] * v[2] * w.J,
    "abs of a square root": lambda v, w: 50.0 * np.abs(np.sqrt(dot(w.x_s, w.x_s)) - 1.0) * dot(w.x_s, d1(v)) * w.J,
}


@pytest.mark.parametrize("name", sorted(BRANCHES))
def test_branches_on_numbers_are_compiled(name):
    """np.maximum, np.minimum, np.abs, np.clip and np.where of numbers, and a comparison read as 1 or 0, are
    traced (sympy's Max, Min, Abs, Piecewise): the term compiles, its residual equals the numpy path's and its
    derived tangent the finite differences, at a state on both sides of the branches."""
    models = []
    for compiled in (True, False):
        model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=sf.paper_law())],
                         compiled=compiled)
        model.add_term(LinearForm(BRANCHES[name]), name=name)
        models.append(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # compiled: no fallback warning
        assert name in models[0].form_kernel.names
    state = models[0].initial_state()
    u = state.u.copy()
    u[2::6] = 0.004 - 0.01 * np.arange(u[2::6].size)  # the fiber crosses its reference: both sides of the branch
    u[0::6] += 0.001
    zero = np.zeros_like(u)
    fast, slow = (m.evaluate(u, zero, zero, 1.0, c_v=0.0, c_a=0.0, parts=[name]).residual for m in models)
    assert np.linalg.norm(fast) > 0 and relative(fast, slow) <= 1e-12
    with warnings.catch_warnings():
        if name == "clip, crossed bounds":  # (a constant: nothing to check, as check_tangent says)
            warnings.simplefilter("ignore", UserWarning)
        assert sf.check_tangent(models[0], sf.State(1.0, u, state.v), dt=0.01, parts=[name]) < 1e-6


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("form", [lambda v, w: np.maximum(dot(w.x, v), 0.0) * w.J,
                                  lambda v, w: (v[2] > 0) * v[2] * w.J], ids=["max(x·v, 0)", "(v > 0) v"])
def test_a_branch_on_the_test_function_is_refused(form, compiled):
    """max(x·ξ, 0) doubles with ξ but is not odd in it: not linear, refused on both paths."""
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, law=sf.paper_law())], compiled=compiled)
    model.add_term(LinearForm(form), name="one_sided")
    with pytest.raises(InvalidForm, match="the term 'one_sided'.*not linear in the test function"):
        sf.check_tangent(model, dt=0.01)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("form", [lambda v, w: dot(w.x, v) * w.J + (w.t > 2.0) * 1e3 * dot(v, v) * w.J,
                                  lambda v, w: np.where(w.X[2] < 0.05, 1e3 * v[2] ** 2, 1e3 * v[2]) * w.J],
                         ids=["(t > 2) v·v", "where(X₂ < 0.05, v₂², v₂)"])
def test_a_quadratic_part_in_a_branch_the_samples_miss_is_refused(form, compiled):
    """The compiler's degree check samples the state in [0.5, 1.5]; a part of degree 2 behind a branch taken
    elsewhere (t > 2, X₂ < 0.05) is found in the branch's own expression, as numpy finds it where it acts."""
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, law=sf.paper_law())], compiled=compiled)
    model.add_term(LinearForm(form), name="branched")
    z = np.zeros(model.n_dofs)
    with pytest.raises(InvalidForm, match="the term 'branched'.*not linear in the test function"):
        model.evaluate(z, z, z, 3.0, c_v=0.0, c_a=0.0)


def test_an_equality_of_conditions_falls_back_with_the_right_numbers():
    """``cond == True`` is a branch the tracer cannot follow (not an identity that is always false)."""
    form = LinearForm(lambda v, w: np.where((w.t > 0.5) == True, 1.0, 0.0) * w.x[2] * v[2] * w.J)  # noqa: E712
    models = [sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, law=sf.paper_law())], compiled=c)
              for c in (True, False)]
    with pytest.warns(RuntimeWarning, match="cannot be compiled"):
        for model in models:
            model.add_term(form, name="switch")
        models[0].form_kernel
    u = np.zeros(models[0].n_dofs)
    u[2::6] = 0.01
    fast, slow = (m.evaluate(u, 0 * u, 0 * u, 1.0, c_v=0.0, c_a=0.0, parts=["switch"]).residual for m in models)
    assert np.linalg.norm(fast) > 0 and relative(fast, slow) == 0


def test_a_law_that_is_not_symbolic_falls_back():
    class Linear:
        def __call__(self, point):
            lam = np.asarray(point.stretch)
            return sf.materials.StressResponse(1e4 * (lam - 1) + 10.0, np.full_like(lam, 1e4), np.zeros_like(lam))

    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=3, law=Linear())
    model = sf.Model([fiber])
    with pytest.warns(RuntimeWarning, match="'internal_force' cannot be compiled .*not symbolic"):
        names = model.form_kernel.names
    assert names == ("inertia",)
    model.fix(0, "start")
    model.fix(0, "end")
    assert sf.check_tangent(model, dt=0.01) < 1e-6


@pytest.mark.parametrize("form, construct", [
    (lambda v, w: np.maximum(w.x, 1.0)[0] * v[0], "branch on a value"),
    (lambda v, w: (1.0 if w.t > 0.5 else 0.0) * v[0], "branch on a value"),
    (lambda v, w: float(w.J) * v[0], "conversion to float"),
])
def test_tracer_names_the_construct(form, construct):
    with pytest.raises(Untraceable, match=construct):
        trace(form, traced_coefficients())


def test_tracer_refuses_a_coefficient_skfiber_does_not_give_and_a_nan_constant():
    with pytest.raises(InvalidForm, match=r"reads w\.nonsense, which skfiber does not provide"):
        trace(lambda v, w: w.nonsense * v[0], traced_coefficients())
    with pytest.raises(InvalidForm, match="nan constant"):
        trace(lambda v, w: float("nan") * v[0] * w.J, traced_coefficients())


@pytest.mark.parametrize("form, mistake", [
    (lambda v, w: w.J * v, "values per point, not one number: contract it with the test function"),
    (lambda v, w: w.J + v[0], "not linear in the test function .* multiply every part by the test function"),
])
@pytest.mark.parametrize("compiled", [True, False])
def test_a_wrong_form_is_an_error_naming_the_term_and_the_fix(form, mistake, compiled):
    """A residual form that is wrong whatever evaluates it (not one number per point, a part without the
    test function) is refused by the form compiler and by the numpy path alike (before the numpy check,
    ``Model(compiled=False)`` crashed inside numpy, or ran with wrong forces)."""
    with pytest.raises(InvalidForm, match=mistake):
        trace(form, traced_coefficients())
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=3)
    model = sf.Model([fiber], compiled=compiled)
    model.fix(fiber, "start")
    model.add_term(sf.Term(LinearForm(form), name="mistake"))
    with pytest.raises(InvalidForm, match="the term 'mistake': .*" + mistake):
        sf.simulate(model, t_end=0.01, dt=0.01, progress=False)


def test_an_untraceable_wrong_form_is_refused_on_the_numpy_path():
    """A form the compiler cannot trace runs with numpy; a part of it without the test function is refused
    there (it would add the same force to every d.o.f. of an element)."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=3)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.add_term(sf.Term(LinearForm(lambda v, w: np.maximum(w.x, 0.5)[0] * (1.0 + v[0])), name="untraceable"))
    with pytest.warns(RuntimeWarning, match="'untraceable' cannot be compiled"), \
            pytest.raises(InvalidForm, match="the term 'untraceable': the residual form is not linear"):
        sf.simulate(model, t_end=0.01, dt=0.01, progress=False)


def test_traced_integrand_of_the_internal_force():
    """The traced internal force is π r0² S x_s · ξ_s |A1| with the symbols of w (a closed form)."""
    w = traced_coefficients()
    kin = forms.cable_kinematics(w["x"], w["xdot"], w["J"])
    S = sp.Symbol("S")
    w.update(x_s=kin.x_s, S=sf.compile.tracer.Traced(S))
    expr = trace(forms.internal_force, w)
    J, area = sp.symbols("J area", real=True)
    x = sp.symbols("x_3:6", real=True)
    xi = sp.symbols("xi_3:6", real=True)
    expected = area * S * sum(a * b for a, b in zip(x, xi)) / J
    assert sp.simplify(expr - expected) == 0


def test_a_model_built_again_reuses_the_symbolic_work(rng, monkeypatch):
    """A second model of the same structure takes the derived expressions and the source from the process's
    memo (no symbolic work), with its own numbers: other parameters give their own, correct results."""
    from skfiber.compile import kernel as kernel_module

    first = make_model(bending)
    source = first.form_kernel.source
    u, v, a = random_state(first, rng)

    def no_symbolic_work(*args, **kwargs):
        raise AssertionError("the symbolic work was done again")

    monkeypatch.setattr(kernel_module, "branch_expressions", no_symbolic_work)
    monkeypatch.setattr(kernel_module, "kernel_source", no_symbolic_work)
    again = make_model(bending)
    assert again.form_kernel.source == source
    e1 = first.evaluate(u, v, a, 0.2, c_v=10.0, c_a=100.0)
    e2 = again.evaluate(u, v, a, 0.2, c_v=10.0, c_a=100.0)
    assert np.array_equal(e1.residual, e2.residual) and np.array_equal(e1.element_matrices, e2.element_matrices)
    # other numbers, the same structure: the memo's expressions with this model's parameters
    laws = [sf.paper_law(sigma0=55.0, s_max=3e5), sf.paper_law(sigma0=7.0, mu_muscle=5e4, s_max=1e5)]
    other = make_model(bending, laws=laws)
    reference = make_model(bending, laws=laws, compiled=False)
    e3 = other.evaluate(u, v, a, 0.2, c_v=10.0, c_a=100.0)
    e4 = reference.evaluate(u, v, a, 0.2, c_v=10.0, c_a=100.0)
    assert relative(e3.residual, e4.residual) <= 1e-12 and relative(e3.residual, e1.residual) > 1e-6
    # another structure is derived anew
    monkeypatch.undo()
    calls = []
    monkeypatch.setattr(kernel_module, "branch_expressions",
                        lambda *args, **kw: calls.append(1) or branch_expressions(*args, **kw))

    @LinearForm
    def unseen(v, w):  # a structure no other model of this process has
        x_s = d1(w.x) / w.J
        return 7.0 * dot(x_s, x_s) ** 3 * dot(x_s, d1(v))

    assert make_model(unseen).form_kernel.active and calls


def test_the_kernel_memo_is_bounded():
    from skfiber.compile import kernel as kernel_module

    memo = {}
    for k in range(kernel_module.MEMO_SIZE + 5):
        kernel_module._remember(memo, k, str(k))
    assert len(memo) == kernel_module.MEMO_SIZE and min(memo) == 5


def test_a_symbolic_law_compiles_to_numpy_when_first_called():
    """A law that is only a part of a sum is never compiled; laws of one expression share the function."""
    from skfiber.materials import MaterialPoint, SymbolicLaw

    lam = sf.materials.SYMBOLS["stretch"]
    part = SymbolicLaw(2e4 * (lam - 1), name="part")
    total = part + SymbolicLaw(1e3 * lam**2, name="other")
    assert "_compiled" not in vars(part) and "_compiled" not in vars(total)
    point = MaterialPoint(np.array([1.1, 1.3]), np.zeros(2), theta=np.zeros(2), t=0.0, muscle_fraction=np.ones(2), activation=np.zeros(2))
    response = total(point)
    assert np.allclose(response.stress, 2e4 * 0.1 * np.array([1, 3]) + 1e3 * np.array([1.1, 1.3]) ** 2, rtol=1e-14)
    assert np.allclose(response.d_stretch, 2e4 + 2e3 * np.array([1.1, 1.3]), rtol=1e-14)
    twin = SymbolicLaw(total.expression, name="twin")
    twin(point)
    assert twin._compiled is total._compiled and "_compiled" not in vars(part)


def test_a_symbolic_law_pickles_before_and_after_its_first_call():
    import pickle

    from skfiber.materials import MaterialPoint

    law = sf.paper_law(sigma0=30.0)
    point = MaterialPoint(np.array([1.1, 1.4]), np.array([0.0, 0.2]), theta=np.array([0.3, 0.6]), t=0.0, muscle_fraction=np.ones(2),
                          activation=np.array([0.0, 0.5]))
    before = pickle.loads(pickle.dumps(law))
    expected = law(point)
    after = pickle.loads(pickle.dumps(law))
    for copy in (before, after):
        response = copy(point)
        assert np.array_equal(response.stress, expected.stress)
        assert np.array_equal(response.d_stretch_rate, expected.d_stretch_rate)


def test_a_form_that_returns_zero_is_accepted():
    """``return 0.0`` is a sympy Float, not equal to the integer 0: it was refused as "not linear"."""
    assert trace(lambda v, w: 0.0, traced_coefficients()).is_zero
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=3)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.add_term(sf.Term(LinearForm(lambda v, w: 0.0), name="nothing"))
    assert "nothing" in model.form_kernel.names


def test_a_tangent_form_with_a_part_without_the_test_function_is_called_a_tangent_form():
    with pytest.raises(InvalidForm, match="the tangent form is not linear in the test function"):
        sf.compile.tracer.trace_tangent(lambda u, v, w: dot(u, v) * w.J + u[0], traced_coefficients())


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11+")
def test_an_error_inside_a_form_on_the_numpy_path_names_the_term():
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=3)
    model = sf.Model([fiber], compiled=False)
    model.fix(fiber, "start")
    model.add_term(sf.Term(LinearForm(lambda v, w: w.xdot * v * w.J), name="elementwise"))
    with pytest.raises(ValueError) as error:
        sf.simulate(model, t_end=0.01, dt=0.01, progress=False)
    assert "the term 'elementwise'" in " ".join(getattr(error.value, "__notes__", []))


@LinearForm
def bending_energy_in_place_of_its_variation(v, w):  # ½ EI ξ''·ξ'': quadratic in the test function
    return 0.05 * dot(d2(v), d2(v)) / w.J**3


@pytest.mark.parametrize("compiled", [True, False])
def test_a_residual_quadratic_in_the_test_function_is_refused(compiled):
    """An energy written in place of its variation has no part without v, and was assembled as a constant
    load that check_tangent scored 0: both paths refuse it, naming the term."""
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=sf.paper_law())], compiled=compiled)
    model.add_term(bending_energy_in_place_of_its_variation, name="bending")
    with pytest.raises(InvalidForm, match="the term 'bending'.*degree 2 or more"):
        sf.check_tangent(model, parts=["bending"])


@LinearForm
def reads_a_parameter_from_w(v, w):  # EI is not a coefficient skfiber gives
    return w.EI * dot(d2(w.x), d2(v)) / w.J**3


@LinearForm
def without_return(v, w):
    dot(w.x, v)


@pytest.mark.parametrize("form, message", [(reads_a_parameter_from_w, r"reads w\.EI, which skfiber does not provide"),
                                           (without_return, r"returns None")])
@pytest.mark.parametrize("compiled", [True, False])
def test_a_form_that_is_wrong_whatever_runs_it_is_an_invalid_form(form, message, compiled):
    """Not 'cannot be compiled' and then a traceback from scikit-fem or numpy on the numpy path: one InvalidForm
    naming the term and the fix, on both paths."""
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, law=sf.paper_law())], compiled=compiled)
    model.add_term(form, name="mine")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no fallback warning first)
        with pytest.raises(InvalidForm, match="the term 'mine': .*" + message):
            sf.check_tangent(model, dt=0.01)


def test_the_documented_coefficients_are_those_the_numpy_path_gives():
    from skfiber.assembly import COEFFICIENTS

    seen = set()

    @LinearForm
    def probe(v, w):
        seen.update(w.keys())
        return 0.0 * v[0] * w.J

    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, law=sf.paper_law())], compiled=False)
    model.add_term(probe, name="probe")
    zero = np.zeros(model.n_dofs)
    model.tangent_matrix(model.evaluate(zero, zero, zero, 0.0, c_v=100.0, c_a=1e4))  # the residual and the tangent
    assert seen == set(COEFFICIENTS)


def test_np_sign_compiles_with_its_tangent():
    """np.sign of a field compiles (a Piecewise: its derivative 0 away from 0, no DiracDelta): sign(y) y² is
    |y| y, whose tangent 2|y| the check confirms; numpy's complex step of np.sign is z/|z| (wrong), so the term
    must not fall back."""
    form = LinearForm(lambda v, w: 1e3 * np.sign(w.x[1]) * w.x[1] ** 2 * v[1] * w.J)
    same = LinearForm(lambda v, w: 1e3 * np.sqrt(w.x[1] ** 2) * w.x[1] * v[1] * w.J)
    models = []
    for f in (form, same):
        model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0.2, 0.1), n_elements=4)])
        model.add_term(f, name="T")
        models.append(model)
    assert models[0].form_kernel.untraced == {}
    assert sf.check_tangent(models[0], parts=["T"]) < 1e-8
    u = 0.01 * np.random.default_rng(2).standard_normal(models[0].n_dofs)
    z = np.zeros_like(u)
    r = [m.evaluate(u, z, z, 0.0, c_v=0.0, c_a=0.0, parts=["T"]).residual for m in models]
    np.testing.assert_allclose(r[0], r[1], rtol=1e-12, atol=1e-12)


def test_np_cbrt_is_the_real_cube_root():
    """np.cbrt compiles as numpy's real cube root (sympy's cbrt, the principal root, is complex below 0: the
    residual was nan where x₀ < 0.5)."""
    forms_ = [LinearForm(lambda v, w: 1e3 * np.cbrt(w.x[0] - 0.5) * v[1] * w.J),
              LinearForm(lambda v, w: 1e3 * np.sign(w.x[0] - 0.5) * np.abs(w.x[0] - 0.5) ** (1 / 3) * v[1] * w.J)]
    residuals = []
    for form in forms_:
        model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0.2, 0.1), n_elements=4)])
        model.add_term(form, name="T")
        assert model.form_kernel.untraced == {}
        z = np.zeros(model.n_dofs)
        residuals.append(model.evaluate(z, z, z, 0.0, c_v=0.0, c_a=0.0, parts=["T"]).residual)
    assert np.isfinite(residuals[0]).all() and np.abs(residuals[0]).max() > 1.0
    np.testing.assert_allclose(residuals[0], residuals[1], rtol=1e-12, atol=1e-12)
