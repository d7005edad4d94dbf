"""Manufactured solution of paper §5.1 (demos/manufactured_solution.py).

The body force is checked independently of sympy (finite differences of the
numerically evaluated law, and the consistency of the discrete residual at
the interpolated exact solution); the small studies must show backward
Euler's rate 1 and the cubic Hermite rate 4; the command line must end with
the summary line.
"""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import skfiber as sf
from skfiber.demos import manufactured_solution as ms

SUMMARY = re.compile(r"summary: temporal_rate=-?\d+\.\d{2} spatial_rate=-?\d+\.\d{2} bdf2_temporal_rate=-?\d+\.\d{2}")


@pytest.fixture(scope="module")
def small():
    return ms.run(small=True, progress=False)


# --------------------------------------------------------------------------- body force
def _axial(law, theta, t, *, static, dt=1e-4):
    """S x′/|A1| from the law's numeric evaluation; λ̇ by central differences in t."""
    def slope(tt):
        g = 1.0 - np.cos(tt)
        return np.array([np.ones_like(theta), -np.sin(theta) * g, 8.0 * np.cos(8.0 * theta) * g])

    x1 = slope(t)
    lam = np.linalg.norm(x1, axis=0)
    if static:
        lamdot = np.zeros_like(lam)
    else:
        lamdot = (np.linalg.norm(slope(t + dt), axis=0) - np.linalg.norm(slope(t - dt), axis=0)) / (2 * dt)
    point = sf.MaterialPoint(lam, lamdot, theta=theta, t=t, muscle_fraction=ms.muscle_fraction(theta), activation=ms.activation(t))
    return law(point).stress * x1


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("t", [0.3, 1.0])
def test_body_force_is_the_strong_form(static, t):
    """b0 = ρ ẍ − ∂θ(S x′) (|A1| = 1), rebuilt with finite differences.

    ρ ẍ alone is ~3e-5 of the scale, so dropping it would fail the check.
    """
    law = ms._default_law()
    theta = np.linspace(0.02, 0.98, 25)
    h, k = 1e-4, 1e-3

    def axial(shift):
        return _axial(law, theta + shift, t, static=static)

    # 4th-order central difference in θ (S varies steeply: 2nd order is too crude)
    expected = -(8 * (axial(h) - axial(-h)) - (axial(2 * h) - axial(-2 * h))) / (12 * h)
    if not static:
        u = ms.exact_displacement
        expected += ms.DENSITY * (u(theta, t + k) - 2 * u(theta, t) + u(theta, t - k)) / k**2
    b0 = ms.body_force(law, static=static)(theta, t)
    assert b0.shape == (3, theta.size)
    scale = np.max(np.abs(expected))
    assert np.max(np.abs(b0 - expected)) < 1e-7 * scale  # measured ≤ 1e-8
    # the active term is exercised: b0 changes when the activation is switched off
    passive = ms.body_force(sf.paper_law(s_max=0.0), static=static)(theta, t)
    assert np.max(np.abs(b0 - passive)) > 1e-3 * scale


def _relative_residual(n_elements, *, static, b0_static):
    """‖residual‖/reference force on the free DOFs at the interpolated exact solution."""
    t = 0.8
    model = ms.build_model(n_elements, static=b0_static)
    u = ms.hermite_interpolant(model, t)
    zero = np.zeros_like(u)
    v = zero if static else ms.hermite_interpolant(model, t, time_derivative=1)
    a = zero if static else ms.hermite_interpolant(model, t, time_derivative=2)
    ev = model.evaluate(u, v, a, t, c_v=0.0, c_a=0.0)
    free = np.ones(u.size, dtype=bool)
    free[model.constrained_dofs] = False
    return np.linalg.norm(ev.residual[free]) / ev.reference_force


@pytest.mark.parametrize("static", [False, True])
def test_discrete_residual_of_the_exact_solution_vanishes(static):
    """Consistency: the weak form at the Hermite interpolant of x(θ, t) → 0 with h."""
    meshes = np.array([16, 32, 64])
    res = np.array([_relative_residual(n, static=static, b0_static=static) for n in meshes])
    assert ms.fitted_rate(1.0 / meshes, res) > 3.0
    assert res[-1] < 1e-5
    # with the other body force (ρ ẍ and λ̇ wrongly dropped or added) it does not
    wrong = _relative_residual(64, static=static, b0_static=not static)
    assert wrong > 1e-3


# --------------------------------------------------------------------------- studies
def test_temporal_rate_is_one(small):
    tmp = small.temporal
    assert np.all(tmp.retries == 0)  # uniform time grid: no Newton step was split
    assert np.all(np.diff(tmp.errors) < 0)
    assert 0.85 <= tmp.rate <= 1.2, tmp.table()


def test_bdf2_temporal_rate_is_two(small):
    """BDF2 at fixed steps on Ne = 64 (N = 256, 512, 1024): rate 2.0 ± 0.1 (measured 1.95), errors 1e-7 … 1e-8,
    below backward Euler's by two orders of magnitude on the same step."""
    bdf2 = small.temporal_bdf2
    assert bdf2.method == "bdf2" and np.all(np.diff(bdf2.errors) < 0)
    assert abs(bdf2.rate - 2.0) <= 0.1, bdf2.table()
    assert bdf2.errors[0] < 0.01 * small.temporal.errors[-1]  # both at Δt = T/256


def test_spatial_rate_is_four(small):
    spatial = small.spatial
    assert np.all(np.diff(spatial.l2_errors) < 0)
    assert spatial.rate >= 3.9, spatial.table()
    # converged to the manufactured solution, not to another equilibrium
    assert spatial.l2_errors[-1] < 1e-9
    assert spatial.midpoint_errors[-1] < 1e-9


def test_main_ends_with_summary_line(capsys, tmp_path, small):
    argv = ["--small"]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        plot = None
    else:
        plot = tmp_path / "convergence.png"
        argv += ["--plot", str(plot)]
    ms.main(argv)
    lines = capsys.readouterr().out.rstrip("\n").splitlines()
    assert SUMMARY.fullmatch(lines[-1]), lines[-1]
    assert sum(line.startswith("summary:") for line in lines) == 1
    assert lines[-1] == small.summary  # the same small studies, deterministic
    if plot is not None:
        assert plot.stat().st_size > 0


def test_demo_runs_as_a_script():
    script = Path(ms.__file__)
    out = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120, check=True
    )
    assert "--small" in out.stdout and "--plot" in out.stdout
