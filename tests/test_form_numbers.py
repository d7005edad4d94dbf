"""A form's parameters changed between evaluations or runs act on the compiled and the numpy path alike."""
import copy
import functools
import pickle
import sys
import textwrap

import numpy as np
import pytest
from skfem import LinearForm
from skfem.helpers import dot

import skfiber as sf
from skfiber.compile.form_numbers import MAX_ITEMS, FormNumbers, number_sources, read_numbers

STIFFNESS = 100.0
PARAMETERS = {"drag": 2.0}


@LinearForm
def spring(v, w):
    """A spring to the reference position, of the module's STIFFNESS (N/m²)."""
    return STIFFNESS * dot(w.x - w.X, v) * w.J


def drag_coefficient():
    """A helper of the user's that the form calls: its global is read through it."""
    return PARAMETERS["drag"]


@LinearForm
def drag(v, w):
    return drag_coefficient() * dot(w.xdot, v) * w.J


def _model(compiled, *terms):
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0.2, 0), n_elements=4)], compiled=compiled)
    for name, form in terms:
        model.add_term(form, name=name)
    return model


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    return 0.01 * rng.standard_normal(model.n_dofs), 0.1 * rng.standard_normal(model.n_dofs)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_changed_global_acts_on_the_next_evaluation(compiled, monkeypatch):
    model = _model(compiled, ("spring", spring))
    u, v = _state(model)
    z = np.zeros_like(u)
    before = model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"])
    K_before = model.tangent_matrix(before).toarray()
    monkeypatch.setattr(sys.modules[__name__], "STIFFNESS", 300.0)
    after = model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"])
    np.testing.assert_allclose(after.residual, 3.0 * before.residual, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(model.tangent_matrix(after).toarray(), 3.0 * K_before, rtol=1e-13, atol=1e-12)


def test_a_closure_variable_and_a_helpers_dict_entry(monkeypatch):
    def spring_of(k):
        box = [k]

        @LinearForm
        def form(v, w):
            return box[0] * dot(w.x - w.X, v) * w.J
        return form, box

    form, box = spring_of(50.0)
    models = [_model(c, ("spring", form), ("drag", drag)) for c in (True, False)]
    u, v = _state(models[0], seed=1)
    z = np.zeros_like(u)
    first = [m.evaluate(u, v, z, 0.0, c_v=1.0, c_a=0.0).residual for m in models]
    box[0] = 150.0
    monkeypatch.setitem(PARAMETERS, "drag", 7.0)
    second = [m.evaluate(u, v, z, 0.0, c_v=1.0, c_a=0.0).residual for m in models]
    # the change is the two terms' change: spring (k 50 → 150) and drag (2 → 7), on both paths
    reference = [m.evaluate(u, v, z, 0.0, c_v=1.0, c_a=0.0, parts=["spring", "drag"]).residual for m in models]
    box[0], PARAMETERS["drag"] = 50.0, 2.0
    old_terms = [m.evaluate(u, v, z, 0.0, c_v=1.0, c_a=0.0, parts=["spring", "drag"]).residual for m in models]
    for k in range(2):
        np.testing.assert_allclose(second[k] - first[k], reference[k] - old_terms[k], rtol=1e-12, atol=1e-12)
        assert np.abs(second[k] - first[k]).max() > 1e-3
    np.testing.assert_allclose(second[0], second[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("compiled_step", [True, False])
def test_a_second_run_takes_the_new_value_as_a_fresh_model_does(compiled_step, monkeypatch):
    """Through simulate's compiled step (one compiled call a time step) and the step of Newton in Python."""
    options = sf.NewtonOptions(compiled_step=compiled_step)

    def run(model):
        fiber = model.fibers[0]
        model.fix(fiber, "start")
        return sf.simulate(model, t_end=0.02, dt=0.01, progress=False, newton_options=options).final_state.u

    model = _model(True, ("spring", spring))
    model.add_gravity()
    first = run(model)
    monkeypatch.setattr(sys.modules[__name__], "STIFFNESS", 1000.0)
    second = sf.simulate(model, t_end=0.02, dt=0.01, progress=False, newton_options=options).final_state.u
    fresh = _model(True, ("spring", spring))
    fresh.add_gravity()
    np.testing.assert_allclose(second, run(fresh), rtol=1e-12, atol=1e-15)
    assert np.abs(second - first).max() > 1e-6


def test_sources_compare_by_value():
    nan_box, array = [float("nan")], np.arange(3.0)

    def form(v, w):
        return nan_box[0] * array[0] * np.sqrt(w.J) * v

    sources = number_sources([form])
    values = read_numbers(sources)
    assert len(sources) == 2  # the two closure cells; np (a module) and np.sqrt (a library's) are not sources
    assert read_numbers(sources) == values  # a nan equals itself
    array[1] = 5.0
    assert read_numbers(sources) != values


def test_an_attribute_is_not_seen():
    class Parameters:
        k = 1.0

    p = Parameters()

    def form(v, w):
        return p.k * v

    values = read_numbers(number_sources([form]))
    p.k = 2.0
    assert read_numbers(number_sources([form])) == values  # documented: held in an object, read at the trace


def _changes(form, change):
    """Whether FormNumbers of ``form`` sees ``change()`` (and nothing before it)."""
    numbers = FormNumbers([form])
    assert not numbers.changed() and not numbers.changed()
    change()
    return numbers.changed()


def test_the_ways_a_form_reaches_its_numbers():
    """A helper rebound to another function, a partial, a bound method, a callable object's __call__, a
    function in a module of the user's, a list with other items, a dict with tuple keys: each change is
    seen."""
    space = {"__name__": "user_script"}
    exec(textwrap.dedent("""
        import functools
        import types
        def make(k):
            return lambda: k
        stiffness = make(2.0)
        K = 1.0
        table = [2.0, "N/m"]
        by_pair = {(0, 1): 3.0}
        def read_K(scale):
            return scale * K
        class Spring:
            def rate(self):
                return K
            def __call__(self):
                return K
        spring = Spring()
        helpers = types.ModuleType("helpers")
        exec("C = 4.0\\ndef coef():\\n    return C", vars(helpers))
        scaled = functools.partial(read_K, 2.0)
        rate = spring.rate
        forms = dict(
            rebound=lambda v, w: stiffness() * v,
            partial=lambda v, w: scaled() * v,
            method=lambda v, w: rate() * v,
            callable_object=lambda v, w: spring() * v,
            module=lambda v, w: helpers.coef() * v,
            mixed_list=lambda v, w: table[0] * v,
            tuple_keys=lambda v, w: by_pair[(0, 1)] * v,
        )
    """), space)
    forms = space["forms"]
    helpers = space["helpers"]
    assert _changes(forms["rebound"], lambda: space.update(stiffness=space["make"](6.0)))
    for name in ("partial", "method", "callable_object"):
        space["K"] = 1.0
        assert _changes(forms[name], lambda: space.update(K=5.0)), name
    assert _changes(forms["module"], lambda: setattr(helpers, "C", 8.0))
    assert _changes(forms["mixed_list"], lambda: space["table"].__setitem__(0, 7.0))
    assert _changes(forms["tuple_keys"], lambda: space["by_pair"].__setitem__((0, 1), 9.0))


def test_attribute_names_are_not_globals_and_containers_are_bounded():
    """w.x, w.t, … are not the globals x, t (a script's x that a callback appends to would retrace every step);
    a list of more than MAX_ITEMS items and a list holding itself are compared by identity, quickly."""
    space = {"np": np, "x": [0.0], "t": [0.0], "big": list(np.arange(MAX_ITEMS + 1.0)), "K": 1.0}
    space["loop"] = [1.0]
    space["loop"].append(space["loop"])
    exec("def form(v, w):\n    return K * big[0] * loop[0] * w.x[0] * w.t * v", space)
    assert not _changes(space["form"], lambda: (space["x"].append(1.0), space["t"].append(1.0)))
    assert not _changes(space["form"], lambda: space["big"].__setitem__(0, 5.0))  # (in place, large: not seen)
    assert _changes(space["form"], lambda: space.update(big=[7.0]))  # (a new list: seen)
    assert _changes(space["form"], lambda: space["loop"].__setitem__(0, 2.0))


def test_a_model_with_form_numbers_copies_and_pickles(monkeypatch):
    """A copy made after a parameter changed evaluates with the new value (its kernel, traced with the old one,
    is traced again at its first evaluation), as the model itself does."""
    model = _model(True, ("spring", spring))
    u, v = _state(model)
    z = np.zeros_like(u)
    before = model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"]).residual
    monkeypatch.setattr(sys.modules[__name__], "STIFFNESS", 3.0 * STIFFNESS)
    twin = copy.deepcopy(model)
    np.testing.assert_allclose(twin.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"]).residual,
                               3.0 * before, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"]).residual,
                               3.0 * before, rtol=1e-13, atol=1e-13)
    copied = pickle.loads(pickle.dumps(FormNumbers([drag_coefficient])))
    assert copied.changed() is True and copied.changed() is False


def test_a_non_finite_residual_names_the_state_or_the_term():
    """A nan in the state is named as the state's, not blamed on a form's parameters; a form that gives a nan at
    a finite state is named."""
    model = _model(False, ("spring", spring))
    u, v = _state(model)
    z = np.zeros_like(u)
    v[3] = np.nan
    with pytest.raises(FloatingPointError, match=r"the state \(v\) holds a NaN or an infinity"):
        model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0)
    nan_term = LinearForm(lambda v_, w: np.nan * dot(w.x, v_) * w.J)
    model = _model(False, ("spring", spring), ("broken", nan_term))
    with pytest.raises(FloatingPointError, match="the term 'broken' gives a non-finite value"):
        model.evaluate(u, np.zeros_like(u), z, 0.0, c_v=0.0, c_a=0.0)


def test_what_a_rebound_helper_or_a_partials_argument_reads():
    """After a name is bound to another helper, that helper's numbers are the ones watched; a partial's dict
    argument changed in place is seen; an attribute of the user's module is read as cfg.K, not as any .K."""
    space = {"__name__": "user_script", "functools": functools}
    exec(textwrap.dedent("""
        import types
        P1, P2 = {"k": 1.0}, {"k": 2.0}
        def make(p):
            return lambda x: p["k"] * x
        HELP = make(P1)
        def g(x, params):
            return params["k"] * x
        PP = {"k": 1.0}
        G = functools.partial(g, params=PP)
        cfg = types.ModuleType("cfg")
        cfg.K, cfg.x = 1.0, [0.0]
        forms = dict(helper=lambda v, w: HELP(w.x[0]) * v, partial=lambda v, w: G(w.x[0]) * v,
                     module=lambda v, w: cfg.K * w.x[0] * v)
    """), space)
    numbers = FormNumbers([space["forms"]["helper"]])
    assert not numbers.changed()
    space["HELP"] = space["make"](space["P2"])
    assert numbers.changed()
    space["P2"]["k"] = 7.0
    assert numbers.changed()
    assert _changes(space["forms"]["partial"], lambda: space["PP"].__setitem__("k", 5.0))
    cfg = space["cfg"]
    assert not _changes(space["forms"]["module"], lambda: cfg.x.append(1.0))
    assert _changes(space["forms"]["module"], lambda: setattr(cfg, "K", 2.0))


def test_a_small_entry_beside_a_large_one_is_compared_by_value():
    """A dict holding a table of 1,000 numbers before the 1-item list the form reads: the list's change is seen
    (a budget shared by the dict's items once used it up on the table, and compared the list by identity)."""
    space = {"P": {"table": [0.0] * MAX_ITEMS, "k": [100.0]}}
    exec("def form(v, w):\n    return P['k'][0] * v", space)
    assert _changes(space["form"], lambda: space["P"]["k"].__setitem__(0, 300.0))
