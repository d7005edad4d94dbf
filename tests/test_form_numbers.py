"""A form's parameters changed between evaluations or runs act on the compiled and the numpy path alike."""
import copy
import functools
import pickle
import sys
import textwrap
import warnings

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


def test_an_objects_attribute_is_seen_and_no_code_of_its_runs():
    """A class's default set on the instance, the object rebound, an inherited class attribute set on the
    subclass: each seen.  A property, ``__getattr__`` and a ``__dict__`` property are not run (not seen)."""

    class Base:
        inherited = 1.0

    class Parameters(Base):
        k = 1.0
        calls = 0

        @property
        def computed(self):
            Parameters.calls += 1
            return 3.0

        def __getattr__(self, name):
            Parameters.calls += 1
            raise AttributeError(name)

    class Proxy:
        __slots__ = ("_target",)

        def __getattr__(self, name):
            raise KeyError(name)

    holder = {"p": Parameters()}
    proxy = Proxy()

    def form(v, w):
        p = holder["p"]  # (an alias: not followed)
        return p.k * v

    def direct(v, w):
        return box.p.k * box.p.inherited * box.p.computed * box.p.missing * proxy.k * v

    class Box:
        pass

    box = Box()
    box.p = Parameters()
    numbers = FormNumbers([direct])
    assert not numbers.changed()
    box.p.k = 2.0  # (the instance's own attribute, over the class's default)
    assert numbers.changed() and numbers.changed_names == ("box.p.k",)
    box.p = Parameters()  # (the object rebound: its k is the class's 1.0 again)
    assert numbers.changed() and numbers.changed_names == ("box.p",)
    Parameters.inherited = 5.0  # (set on the subclass, hiding the base's)
    assert numbers.changed() and numbers.changed_names == ("box.p.inherited",)
    assert not numbers.changed() and Parameters.calls == 0
    assert not _changes(form, lambda: setattr(holder["p"], "k", 7.0))  # (documented: read past an expression)


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


def test_the_ways_a_form_reaches_an_attribute():
    """An object's attribute read through a global, a closure variable, a chain of attributes, a method's self
    (a bound method as the form, a method the form calls, a callable object), a class's static method and a
    module reached through another module: each change is seen, and so is an object in between rebound."""
    space = {"__name__": "user_script"}
    exec(textwrap.dedent("""
        import types
        class Tendon:
            def __init__(self, E):
                self.E = E
        class Parameters:
            def __init__(self):
                self.k = 1.0
                self.tendon = Tendon(2.0)
            def scale(self):
                return self.k
            def residual(self, v, w):
                return self.k * v
            def __call__(self, v, w):
                return self.tendon.E * v
            def summed(self, v, w):
                return sum(self.tendon.E * v for _ in range(2))
        class Helpers:
            K = 3.0
            @staticmethod
            def coef():
                return Helpers.K
            @classmethod
            def from_class(cls):
                return cls.K
        params = Parameters()
        package = types.ModuleType("package")
        package.cfg = types.ModuleType("package.cfg")
        package.cfg.K = 4.0
        def make():
            local = Parameters()
            return local, lambda v, w: local.k * v
        local, closure_form = make()
        forms = dict(
            attribute=lambda v, w: params.k * v,
            chain=lambda v, w: params.tendon.E * v,
            method_called=lambda v, w: params.scale() * v,
            static_method=lambda v, w: Helpers.coef() * v,
            module_path=lambda v, w: package.cfg.K * v,
            closure=closure_form,
            bound_form=params.residual,
            callable_form=params,
            class_method=lambda v, w: Helpers.from_class() * v,
            self_in_generator=params.summed,
            rebound_root=lambda v, w: params.k * v,
        )
    """), space)
    forms, params = space["forms"], space["params"]
    for name, change in [("attribute", lambda: setattr(params, "k", 5.0)),
                         ("chain", lambda: setattr(params.tendon, "E", 6.0)),
                         ("chain", lambda: setattr(params, "tendon", space["Tendon"](7.0))),
                         ("method_called", lambda: setattr(params, "k", 8.0)),
                         ("static_method", lambda: setattr(space["Helpers"], "K", 9.0)),
                         ("module_path", lambda: setattr(space["package"].cfg, "K", 10.0)),
                         ("closure", lambda: setattr(space["local"], "k", 11.0)),
                         ("bound_form", lambda: setattr(params, "k", 12.0)),
                         ("callable_form", lambda: setattr(params.tendon, "E", 13.0)),
                         ("class_method", lambda: setattr(space["Helpers"], "K", 14.0)),
                         ("self_in_generator", lambda: params.tendon.__setattr__("E", 15.0)),
                         ("rebound_root", lambda: space.update(params=space["Parameters"]()))]:
        assert _changes(forms[name], change), name
    # an attribute the form does not read is no change
    assert not _changes(forms["attribute"], lambda: setattr(params, "unused", 1.0))


@pytest.mark.parametrize("compiled", [True, False])
def test_a_form_method_reads_its_objects_parameter_at_each_evaluation(compiled):
    """A sweep over an object's attribute: the form is a bound method reading ``self.stiffness``."""

    class Spring:
        def __init__(self, stiffness):
            self.stiffness = stiffness

        def residual(self, v, w):
            return self.stiffness * dot(w.x - w.X, v) * w.J

    spring_object = Spring(100.0)
    model = _model(compiled, ("spring", LinearForm(spring_object.residual)))
    u, v = _state(model)
    z = np.zeros_like(u)
    before = model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"]).residual
    spring_object.stiffness = 250.0
    after = model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"]).residual
    np.testing.assert_allclose(after, 2.5 * before, rtol=1e-13, atol=1e-15)


def test_a_parameter_changed_during_runs_is_warned_once_and_a_sweep_of_short_runs_is_not(monkeypatch):
    """Each change traces the forms again (milliseconds): a value a callback changes at every step is named in
    one warning, under simulate and under run_simulation (whose steps are one run); a sweep of short runs (a
    change before each run) and evaluations outside any run warn nothing."""
    from skfiber.run import run_simulation

    model = _model(True, ("spring", spring))
    model.fix(model.fibers[0], "start")
    module = sys.modules[__name__]
    u, v = _state(model)
    z = np.zeros_like(u)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for run in range(15):  # a sweep: one change, then a run of 3 steps
            monkeypatch.setattr(module, "STIFFNESS", 100.0 + run)
            sf.simulate(model, t_end=0.03, dt=0.01, progress=False)
        for k in range(15):  # no run
            monkeypatch.setattr(module, "STIFFNESS", 50.0 + k)
            model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["spring"])

    def stiffening(state, info):
        monkeypatch.setattr(module, "STIFFNESS", 200.0 + info.step)

    says = r"traced again 10 times in \d+ evaluations of this run .* the last time STIFFNESS, which a form reads"
    for run in (lambda: sf.simulate(model, t_end=0.3, dt=0.01, progress=False, callback=stiffening),
                lambda: run_simulation(model, t_end=0.3, dt=0.01, checkpoint_every=None, callback=stiffening,
                                       progress=False)):
        model = _model(True, ("spring", spring))
        model.fix(model.fibers[0], "start")
        with pytest.warns(RuntimeWarning, match=says) as caught:
            run()
        assert len([w for w in caught if "traced again" in str(w.message)]) == 1


def test_a_parameter_changed_during_a_run_of_fibers_and_bodies_acts_on_the_compiled_path(monkeypatch):
    """Fibers coupled to bodies (the compiled coupled evaluation): a value a callback changes after the first
    step acts on the steps after it as on numpy's path."""
    from conftest import two_link_model

    module = sys.modules[__name__]
    finals = {}
    for compiled in (True, False):
        monkeypatch.setattr(module, "STIFFNESS", 0.0)
        model = two_link_model()
        model.compiled = compiled
        model.add_term(spring, name="spring")

        def stiffening(state, info):
            if info.step == 1:
                monkeypatch.setattr(module, "STIFFNESS", 5000.0)

        finals[compiled] = sf.simulate(model, t_end=0.05, dt=0.01, progress=False, callback=stiffening).final_state
    scale = np.abs(finals[False].u).max()
    assert scale > 0.05  # (the spring moved the fibers)
    np.testing.assert_allclose(finals[True].u, finals[False].u, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(finals[True].q, finals[False].q, rtol=0, atol=1e-9)


def test_the_check_reads_no_code_of_the_users_and_survives_odd_objects():
    """A module's __getattr__, a metaclass's __getattr__, a __class__ property, a __dict__ property, a function
    of hundreds of names (EXTENDED_ARG): the check neither runs them nor fails; what it can read, it follows."""
    space = {"__name__": "user_script"}
    exec(textwrap.dedent("""
        import types
        lazy = types.ModuleType("lazy")
        def refuse(name):
            raise RuntimeError("a module's __getattr__ ran")
        lazy.__getattr__ = refuse
        lazy.K = 1.0
        class Meta(type):
            def __getattr__(cls, name):
                raise RuntimeError("a metaclass __getattr__ ran")
        class Odd(metaclass=Meta):
            pass
        class Holder:
            odd = Odd()
            k = 2.0
        class Masked:
            @property
            def __class__(self):
                raise RuntimeError("a __class__ property ran")
        class DictProperty:
            k = 1.0
            @property
            def __dict__(self):
                raise RuntimeError("a __dict__ property ran")
        holder, masked, hidden = Holder(), Masked(), DictProperty()
        forms = dict(module=lambda v, w: lazy.K * v, metaclass=lambda v, w: holder.k * v,
                     masked=lambda v, w: masked * v, hidden=lambda v, w: hidden.k * v)
    """), space)
    names = [f"x{k}" for k in range(300)]
    exec("def many(v, w):\n    " + "; ".join(f"{n} = {k}" for k, n in enumerate(names)) + "\n    return holder.k * v",
         space)
    forms = space["forms"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _changes(forms["module"], lambda: setattr(space["lazy"], "K", 3.0))
        assert _changes(forms["metaclass"], lambda: setattr(space["holder"], "k", 4.0))
        assert not _changes(forms["masked"], lambda: None)
        assert not _changes(forms["hidden"], lambda: None)  # (documented: not read, so not seen)
        assert _changes(space["many"], lambda: setattr(space["holder"], "k", 5.0))


def test_an_object_replaced_in_between_or_given_another_dict_is_seen():
    """The compared identity keeps its object alive (a new object at the old one's address is no false
    "unchanged"), and an object's attributes are read from the dict it has now."""

    class Tendon:
        def __init__(self, E):
            self.E = E

    class Parameters:
        def __init__(self):
            self.tendon = Tendon(2.0)
            self.k = 1.0

    params = Parameters()

    def form(v, w):
        return params.tendon.E * params.k * v

    numbers = FormNumbers([form])
    assert not numbers.changed()
    for k in range(20):
        params.tendon = None
        params.tendon = Tendon(7.0 + k)
        assert numbers.changed(), k
    params.__dict__ = {"tendon": params.tendon, "k": 5.0}
    assert numbers.changed() and "params.k" in numbers.changed_names


def test_a_copy_made_during_a_run_is_outside_it_and_a_changed_class_is_read(monkeypatch):
    """A model deep-copied by a callback is not in a run (a sweep on the copy warns nothing); an object given
    another class keeps its attributes read (the compiled path follows the change)."""
    model = _model(True, ("spring", spring))
    model.fix(model.fibers[0], "start")
    copies = []
    sf.simulate(model, t_end=0.03, dt=0.01, progress=False, callback=lambda s, i: copies.append(copy.deepcopy(model)))
    module = sys.modules[__name__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for run in range(15):
            monkeypatch.setattr(module, "STIFFNESS", 100.0 + run)
            sf.simulate(copies[0], t_end=0.03, dt=0.01, progress=False)

    class A:
        pass

    class B:
        pass

    params = A()
    params.k = 100.0

    @LinearForm
    def scaled(v, w):
        return params.k * dot(w.x - w.X, v) * w.J

    model = _model(True, ("scaled", scaled))
    u, v = _state(model)
    z = np.zeros_like(u)
    before = model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["scaled"]).residual
    params.__class__ = B
    params.k = 300.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        after = model.evaluate(u, v, z, 0.0, c_v=0.0, c_a=0.0, parts=["scaled"]).residual
    np.testing.assert_allclose(after, 3.0 * before, rtol=1e-13, atol=1e-15)
