"""The custom stress-law demo: exact derivatives, closed forms, a hanging fiber."""
import math

import numpy as np
import pytest

import skfiber as sf
from skfiber.demos import custom_law


@pytest.fixture(scope="module")
def result():
    return custom_law.run(small=True)


def _summary(text: str) -> dict[str, float]:
    lines = text.strip().splitlines()
    assert lines[-1].startswith("summary: ")
    assert sum(line.startswith("summary:") for line in lines) == 1
    return {k: float(v) for k, v in (item.split("=") for item in lines[-1].split()[1:])}


def test_law_derivatives(result):
    assert result.law_derivative_error < 1e-6
    assert result.paper_derivative_error < 1e-6


def test_small_strain_stiffness_equals_paper_law():
    """∂S/∂λ(λ = 1) = 3 μ(γM) − 2 σ0 for both laws, at any θ (exact, symbolic derivative)."""
    custom, paper = custom_law.stiffening_law(), sf.paper_law()
    theta = np.array([0.0, 0.2, 0.5, 0.9])
    for gm in (0.0, 0.3, 1.0):
        point = sf.MaterialPoint(np.ones(4), np.zeros(4), theta=theta, t=0.0, muscle_fraction=gm, activation=0.0)
        expected = 3 * (gm * custom_law.MU_MUSCLE + (1 - gm) * custom_law.MU_TENDON) - 2 * custom_law.SIGMA0
        np.testing.assert_allclose(custom(point).d_stretch, expected, rtol=1e-12)
        np.testing.assert_allclose(paper(point).d_stretch, expected, rtol=1e-12)
        np.testing.assert_allclose(custom(point).d_stretch_rate, 3 * custom_law.ETA, rtol=1e-12)


def test_law_stiffens_and_depends_on_theta():
    law = custom_law.stiffening_law()
    lam = np.full(2, 1.2)
    ends_vs_middle = law(sf.MaterialPoint(lam, np.zeros(2), theta=np.array([0.0, 0.5]), t=0.0, muscle_fraction=1.0, activation=0.0)).stress
    assert ends_vs_middle[0] > 2 * ends_vs_middle[1]  # k(0) = 20 > k(½) = 5
    paper = sf.paper_law()(sf.MaterialPoint(lam, np.zeros(2), theta=0.5, t=0.0, muscle_fraction=1.0, activation=0.0)).stress
    assert ends_vs_middle[1] > paper[1]


def test_homogeneous_stretch_force_closed_form(result):
    assert [c.stretch for c in result.uniaxial] == [1.05, 1.1, 1.2]
    for check in result.uniaxial:
        assert check.error < 1e-10
        assert check.force_spread < 1e-10
    # exponential stiffening: N(1.2)/N(1.1) is far above the linear ratio 2
    assert result.uniaxial[2].force_fe / result.uniaxial[1].force_fe > 4


def test_graded_stretch_converges_to_closed_form():
    law = custom_law.stiffening_law()
    errors = [custom_law.uniaxial_stretch(law, stretch=1.1, n_elements=n, graded=True).error for n in (8, 16)]
    assert errors[1] < 1e-5
    rate = math.log2(errors[0] / errors[1])
    assert rate > 4.0, errors


def test_graded_closed_form_bounds():
    """The graded force lies between those of pure muscle and pure tendon (paper law, no FE)."""
    law = sf.paper_law()
    N = custom_law.graded_stretch_force(law, stretch=1.05)
    def homogeneous(gm):
        S = law(sf.MaterialPoint(np.array(1.05), np.array(0.0), theta=0.5, t=0.0, muscle_fraction=gm, activation=0.0)).stress
        return math.pi * custom_law.RADIUS**2 * 1.05 * float(S)
    assert homogeneous(1.0) < N < homogeneous(0.0)


def test_hanging_fiber(result):
    c, p = result.custom, result.paper
    # the stiffer law sags less and carries more force
    assert c.sag_static < p.sag_static
    assert c.max_force_static > p.max_force_static
    for h in (c, p):
        # vertical end forces carry the weight
        assert abs(h.weight_balance_error) < 5e-3
        # the independent cable solution (quadrature + root search)
        assert h.sag_static == pytest.approx(h.sag_exact, rel=1e-3)
        assert h.max_force_static == pytest.approx(h.end_force_exact, rel=5e-4)  # (recovered N; 1.2e-4 measured at 8 elements)
        # a suddenly applied load overshoots, but less than twice (damped)
        assert h.sag_static < h.sag_peak_dynamic < 2 * h.sag_static


def test_hanging_sag_converges_to_cable_solution():
    law = custom_law.stiffening_law()
    errors = []
    for n in (8, 16):
        h = custom_law.hanging_fiber(law, law_name="custom", n_elements=n, t_end=0.01)
        errors.append(abs(h.sag_static - h.sag_exact) / h.sag_exact)
    assert errors[1] < 2e-5
    assert math.log2(errors[0] / errors[1]) > 3.5, errors


def test_dynamics_settles_to_statics():
    h = custom_law.hanging_fiber(custom_law.stiffening_law(), law_name="custom", n_elements=8, t_end=1.0)
    assert h.sag_end_dynamic == pytest.approx(h.sag_static, rel=2e-3)  # 5.7e-4 measured


def test_main_prints_summary_and_plots(capsys, result, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "sag.png"
    custom_law.main(["--small", "--plot", str(png)])
    assert png.stat().st_size > 1000
    values = _summary(capsys.readouterr().out)
    assert set(values) >= {"law_derivative_error", "midpoint_sag_custom_m", "midpoint_sag_paper_m"}
    assert values["midpoint_sag_custom_m"] == pytest.approx(result.custom.sag_static, abs=1e-6)
    assert values["midpoint_sag_paper_m"] == pytest.approx(result.paper.sag_static, abs=1e-6)
    assert values["law_derivative_error"] < 1e-6
    assert values["uniaxial_force_error"] < 1e-10


@pytest.mark.parametrize("prestretch", ["0.55", "5"])
def test_a_prestretch_beyond_the_measured_range_is_refused(prestretch, capsys):
    with pytest.raises(SystemExit) as exc:
        custom_law.main(["--small", "--prestretch", prestretch])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"--prestretch: must be at most {custom_law.MAX_PRESTRETCH:g}" in err
