"""Compiled stress laws (skfiber.law_kernels) equal the numpy evaluation of the same SymbolicLaw."""

from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import skfiber as sf
from skfiber import law_kernels
from skfiber.compile import cache
from skfiber.materials import MaterialPoint, law_from_function


def _points(rng, n=50):
    return dict(lam=rng.uniform(0.7, 1.6, n), lamdot=rng.uniform(-2, 2, n), theta=rng.uniform(0, 1, n),
                gamma=rng.uniform(0, 1, n), alpha=rng.uniform(0, 1, n))


def _compiled(law, p, t=0.3):
    n = p["lam"].size
    S, dS, dR = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    ok = law_kernels.law_kernel(law)(p["lam"], p["lamdot"], p["theta"], t, p["gamma"], p["alpha"], 1,
                                     np.arange(n), S, dS, dR)
    return ok, S, dS, dR


def _numpy(law, p, t=0.3):
    r = law(MaterialPoint(p["lam"], p["lamdot"], theta=p["theta"], t=t, muscle_fraction=p["gamma"], activation=p["alpha"]))
    return r.stress, r.d_stretch, r.d_stretch_rate


@pytest.mark.parametrize("law", [
    sf.paper_law(),
    sf.paper_law(sigma0=32.7, s_max=4.2e7, mu_muscle=2e4, eta_muscle=1e3, eta_tendon=1e3),
    sf.paper_law(nu=2.5),
    law_from_function(lambda lam, lamdot, theta, t: 1e3 * sp.tanh(lam - 1) * (1 + theta * t) + 5 * lamdot**2),
    law_from_function(lambda lam, lamdot, theta, t: sp.Piecewise((1e4 * (lam - 1) ** 2, lam > 1), (0, True))),
], ids=["paper", "biceps", "non-integer-nu", "tanh", "piecewise"])
def test_kernel_equals_numpy(law, rng):
    p = _points(rng)
    ok, *compiled = _compiled(law, p)
    assert ok
    for c, ref in zip(compiled, _numpy(law, p)):
        ref = np.broadcast_to(ref, c.shape)
        assert np.allclose(c, ref, rtol=1e-13, atol=1e-12 * np.abs(ref).max())


def test_same_form_shares_the_compiled_function(rng):
    """Only the numbers differ: one generated module, each law with its own values."""
    a, b = sf.paper_law(sigma0=10.0, s_max=1e5), sf.paper_law(sigma0=20.0, s_max=2e5)
    ka, kb = law_kernels.law_kernel(a), law_kernels.law_kernel(b)
    assert ka.source == kb.source and not np.array_equal(ka.params, kb.params)
    p = _points(rng)
    for law in (a, b):
        ok, S, _, _ = _compiled(law, p)
        assert ok and np.allclose(S, _numpy(law, p)[0], rtol=1e-13)
    assert law_kernels.law_kernel(a) is ka  # kept on the law


def test_uncompilable_law_falls_back_to_numpy_with_a_warning(rng, monkeypatch, tmp_path):
    """Generated code numba rejects (here: a name the math module lacks) → numpy, with a warning."""
    real_source = law_kernels._source

    def broken(expressions):
        source, params = real_source(expressions)
        return source.replace("math.exp(", "math.no_such_function("), params

    monkeypatch.setenv("SKFIBER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(law_kernels, "_source", broken)
    law = law_from_function(lambda lam, lamdot, theta, t: 1e3 * sp.exp(lam - 1) + 0.123)
    p = _points(rng, 5)
    with pytest.warns(RuntimeWarning, match="could not be compiled"):
        ok, S, _, _ = _compiled(law, p)
    assert not ok and np.isnan(S).all()  # outputs untouched
    fiber = lambda: sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=3, law=law)  # noqa: E731
    m1, m2 = sf.Model([fiber()]), sf.Model([fiber()], compiled=False)
    u = 0.01 * rng.standard_normal(m1.n_dofs)
    r1 = m1.evaluate(u, 0 * u, 0 * u, 0.0, c_v=0.0, c_a=0.0).residual  # the law has failed already: no new warning
    r2 = m2.evaluate(u, 0 * u, 0 * u, 0.0, c_v=0.0, c_a=0.0).residual
    assert np.allclose(r1, r2, rtol=1e-12, atol=1e-12 * np.abs(r2).max())


def test_cache_folder_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SKFIBER_CACHE_DIR", str(tmp_path / "c"))
    assert cache.cache_folder() == tmp_path / "c" / "laws"
    assert cache.writable_folder() == tmp_path / "c" / "laws"
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SKFIBER_CACHE_DIR", str(blocker))  # not a folder: a temporary one is used
    folder = cache.writable_folder()
    assert folder.is_dir() and blocker not in folder.parents


def test_broken_cache_is_rebuilt(tmp_path, monkeypatch, rng):
    """Garbage in numba's cache files for a law: recompiled, not a failure."""
    monkeypatch.setenv("SKFIBER_CACHE_DIR", str(tmp_path))
    law = law_from_function(lambda lam, lamdot, theta, t: 7e3 * (lam - 1) + 11 * lamdot * theta)
    kernel = law_kernels.law_kernel(law)
    module = cache.load_module(kernel.source)
    p = _points(rng, 4)
    assert _compiled(law, p)[0]
    # numba's cache files: beside the module, or under NUMBA_CACHE_DIR when the environment sets it
    import numba

    stem = Path(module.__file__).stem
    roots = [tmp_path / "laws" / "__pycache__"] + ([Path(numba.config.CACHE_DIR)] if numba.config.CACHE_DIR else [])
    caches = [path for root in roots if root.exists() for path in root.rglob(f"{stem}*") if path.is_file()]
    assert caches
    for path in caches:
        path.write_bytes(b"garbage")
    cache.unload_module(kernel.source)  # as a new process would start: module not loaded, cache on disk
    law2 = law_from_function(lambda lam, lamdot, theta, t: 7e3 * (lam - 1) + 11 * lamdot * theta)
    ok, S, _, _ = _compiled(law2, p)
    assert ok and np.allclose(S, _numpy(law2, p)[0], rtol=1e-13)
    assert module is not cache.load_module(kernel.source)


def test_law_without_code_printer_falls_back(monkeypatch, rng):
    def fail(expressions):
        raise NotImplementedError("no printer for this function")

    monkeypatch.setattr(law_kernels, "_source", fail)
    law = law_from_function(lambda lam, lamdot, theta, t: 2e3 * (lam - 1))
    with pytest.warns(RuntimeWarning, match="could not be compiled .*no printer"):
        ok, S, _, _ = _compiled(law, _points(rng, 3))
    assert not ok and np.isnan(S).all()
