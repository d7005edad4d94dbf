"""The bending term against a closed form: a pinned–pinned tensioned beam (string-beam).

EI w'''' − N w'' = q, w = w'' = 0 at s = 0 and L, k = √(N/EI):

    w(s)  = q/(N k²) [cosh(k(s − L/2))/cosh(kL/2) − 1 + k² s (L − s)/2]
    w''(s) = q/N [cosh(k(s − L/2))/cosh(kL/2) − 1]

(``demos/custom_term.py``: ``tensioned_beam_deflection``).  The fiber is
pinned: end positions fixed (``model.fix``), end slopes free, so w'' = 0 there
is the natural boundary condition of the bending term.  The term is the
README's ``LinearForm`` added without a tangent (derived by skfiber).
"""
import math

import numpy as np
import pytest

from skfiber.demos import custom_term

beam = custom_term.tensioned_beam_deflection


@pytest.mark.parametrize("kL", [0.0, 0.5, 1.999, 2.001, 6.0, 40.0, 2000.0])
def test_closed_form_solves_the_tensioned_beam_problem(kL):
    """The formula (series below kL = 2, exponentials above) satisfies the equation, the
    boundary conditions, and agrees with the midpoint formula and with the T = 0 beam."""
    L, EI, q = 1.7, 2.3, 0.9
    N = EI * (kL / L) ** 2
    s = np.linspace(0.0, L, 41)[1:-1]
    w, w2 = beam(s, q, tension=N, EI=EI, length=L), beam(s, q, tension=N, EI=EI, length=L, derivative=2)
    scale_w, scale_w2 = np.abs(w).max(), np.abs(w2).max()
    # w'' is the second derivative of w, and EI (w'')'' − N w'' = q (central differences, O(h²))
    h = 1e-4 * L
    fd2 = lambda f: (f(s + h) - 2 * f(s) + f(s - h)) / h**2  # noqa: E731
    assert np.abs(fd2(lambda x: beam(x, q, tension=N, EI=EI, length=L)) - w2).max() < 1e-5 * scale_w2
    bending_term = EI * fd2(lambda x: beam(x, q, tension=N, EI=EI, length=L, derivative=2))
    if kL < 100:  # (for huge kL, EI w'''' is a boundary layer too thin for this h)
        assert np.abs(bending_term - N * w2 - q).max() < 1e-4 * q
    # boundary conditions w = w'' = 0 at both ends; deflection along the load; symmetric
    ends = np.array([0.0, L])
    assert np.abs(beam(ends, q, tension=N, EI=EI, length=L)).max() < 1e-14 * scale_w
    assert np.abs(beam(ends, q, tension=N, EI=EI, length=L, derivative=2)).max() < 1e-12 * scale_w2
    assert np.all(w > 0) and np.allclose(w, w[::-1], rtol=1e-12, atol=0)
    mid = beam(L / 2, q, tension=N, EI=EI, length=L)
    assert mid == pytest.approx(custom_term.tensioned_beam_sag(q, tension=N, EI=EI, length=L), rel=1e-11)
    # between the beam without tension (5qL⁴/384EI) and the string without bending (qL²/8N)
    assert mid <= 5 * q * L**4 / (384 * EI) * (1 + 1e-14) and (N == 0 or mid < q * L**2 / (8 * N))
    if kL == 0:
        assert np.allclose(w, q * s * (L**3 - 2 * L * s**2 + s**3) / (24 * EI), rtol=1e-14, atol=0)
        assert np.allclose(w2, -q * s * (L - s) / (2 * EI), rtol=1e-14, atol=0)


def test_closed_form_limits_and_errors():
    s = np.linspace(0, 1, 11)
    assert np.allclose(beam(s, 2.0, tension=5.0, EI=0.0), 2.0 * s * (1 - s) / 10.0, rtol=1e-15, atol=0)
    assert np.all(beam(s, 2.0, tension=5.0, EI=0.0, derivative=2) == -0.4)
    # EI → 0: the string, outside thin boundary layers of w'' near the pins
    assert np.allclose(beam(s, 2.0, tension=5.0, EI=1e-12), 2.0 * s * (1 - s) / 10.0, rtol=1e-5, atol=0)
    with pytest.raises(ValueError, match="one of them > 0"):
        beam(s, 1.0, tension=0.0, EI=0.0)
    with pytest.raises(ValueError, match="EI ≥ 0"):
        beam(s, 1.0, tension=1.0, EI=-1.0)
    with pytest.raises(ValueError, match="derivative must be 0 or 2"):
        beam(s, 1.0, tension=1.0, EI=1.0, derivative=1)


#: measured relative errors (max along the fiber over 16 points per element, relative to the
#: largest |w|, |w''|), bending EI = 1.47 N m² (custom_term.EI_PHYSICAL), README form,
#: derived tangent, midpoint deflection 1e-5 m:
#:
#:   kL  elements   w error    rate   w'' error   rate
#:    2      8     6.03e-05           1.38e-02
#:    2     16     4.02e-06   3.91    3.57e-03    1.95
#:    2     32     2.60e-07   3.95    9.08e-04    1.97
#:    6      8     1.43e-04           3.94e-02
#:    6     16     1.13e-05   3.66    1.13e-02    1.81
#:    6     32     7.93e-07   3.83    3.02e-03    1.90
#:
#: cubic Hermite elements: O(h⁴) for the deflection, O(h²) for the curvature (bending moment
#: / EI), whose largest error sits at the pins, where w'' = 0 holds only as a natural condition.
#: For kL = 6 the boundary layer (width 1/k = L/6) still shows at 8 elements: the rates rise
#: towards 4 and 2.  Beyond 32 elements the deflection error reaches a floor of ≈ 3e-8 (kL = 2,
#: 64 elements: 3.8e-8, rate 2.8): the extra tension from stretching, which the linear closed
#: form leaves out (≈ 4e-8, see custom_term.beam_string_check), so finer meshes are not used.
@pytest.mark.parametrize("kL, final_w_error", [(2.0, 5e-7), (6.0, 1.5e-6)])
def test_bending_term_converges_to_the_tensioned_beam(kL, final_w_error):
    checks = [custom_term.beam_string_check(kL=kL, n_elements=n, automatic=True) for n in (8, 16, 32)]
    w_err = np.array([c.deflection_error for c in checks])
    w2_err = np.array([c.curvature_error for c in checks])
    w_rates, w2_rates = np.log2(w_err[:-1] / w_err[1:]), np.log2(w2_err[:-1] / w2_err[1:])
    info = dict(w_err=w_err, w_rates=w_rates, w2_err=w2_err, w2_rates=w2_rates)
    assert np.all(w_rates > 3.5) and 3.75 < w_rates[-1] < 4.3, info
    assert np.all(w2_rates > 1.7) and 1.85 < w2_rates[-1] < 2.2, info
    assert w_err[-1] < final_w_error, info
    # the rates rise towards the asymptotic ones (or sit there)
    assert w_rates[-1] >= w_rates[0] - 0.05 and w2_rates[-1] >= w2_rates[0] - 0.05, info
    # midpoint sag: the same closed form, much closer there than the curve's worst point
    assert all(c.error < c.deflection_error for c in checks)


def test_explicit_and_derived_tangent_give_the_same_static_solution():
    auto = custom_term.beam_string_check(kL=6.0, n_elements=16, automatic=True)
    explicit = custom_term.beam_string_check(kL=6.0, n_elements=16, automatic=False)
    assert auto.deflection_error == pytest.approx(explicit.deflection_error, rel=1e-6)
    assert auto.curvature_error == pytest.approx(explicit.curvature_error, rel=1e-6)
    assert math.isclose(auto.sag_fe, explicit.sag_fe, rel_tol=1e-9)
