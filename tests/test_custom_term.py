"""The custom-term demo: bending and drag terms, explicit and automatic tangents, closed forms."""
import math

import numpy as np
import pytest

import skfiber as sf
from skfiber.demos import custom_term


@pytest.fixture(scope="module")
def result():
    return custom_term.run(small=True)


def _summary(text: str) -> dict[str, float]:
    lines = text.strip().splitlines()
    assert lines[-1].startswith("summary: ")
    assert sum(line.startswith("summary:") for line in lines) == 1
    return {k: float(v) for k, v in (item.split("=") for item in lines[-1].split()[1:])}


def test_tangents_match_finite_differences(result):
    t = result.tangents
    for error in (t.bending_explicit, t.bending_auto, t.drag_explicit, t.drag_auto):
        assert error < 1e-6
    assert t.mismatch < 1e-12  # complex step of a linear residual is exact


def test_closed_form_limits():
    beam = custom_term.tensioned_beam_sag
    assert beam(2.0, tension=0.0, EI=3.0) == pytest.approx(5 * 2.0 / (384 * 3.0), rel=1e-15)
    assert beam(2.0, tension=1e-12, EI=3.0) == pytest.approx(5 * 2.0 / (384 * 3.0), rel=1e-9)
    assert beam(2.0, tension=5.0, EI=0.0) == pytest.approx(2.0 / 40.0, rel=1e-15)
    assert beam(2.0, tension=5.0, EI=1e-9) == pytest.approx(2.0 / 40.0, rel=1e-3)
    # continuous where the series takes over (β = kL/2 = 0.1)
    T = 0.04 * 3.0
    below, above = beam(1.0, tension=T * (1 - 1e-9), EI=3.0), beam(1.0, tension=T * (1 + 1e-9), EI=3.0)
    assert abs(below - above) / below < 1e-10
    # direct formula with k = √(T/EI), L = 2
    k, L = math.sqrt(5.0 / 3.0), 2.0
    direct = 1.0 / (5.0 * k**2) * (1 / math.cosh(k * L / 2) - 1) + L**2 / 40.0
    assert beam(1.0, tension=5.0, EI=3.0, length=2.0) == pytest.approx(direct, rel=1e-12)
    with pytest.raises(ValueError, match="one of them > 0"):
        beam(1.0, tension=0.0, EI=0.0)


@pytest.mark.parametrize("automatic", [False, True])
def test_pinned_beam_is_nodally_exact(automatic):
    """Without tension, cubic Hermite elements give the exact 5 q L⁴/(384 EI) at a node."""
    check = custom_term.beam_string_check(kL=0.0, n_elements=4, automatic=automatic)
    assert check.error < 1e-6  # what is left is the tension from stretching, ≈ 4e-8


def test_tensioned_beam_converges_at_fourth_order():
    errors = [custom_term.beam_string_check(kL=6.0, n_elements=n).error for n in (4, 8, 16)]
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((rates > 3.8) & (rates < 4.3)), (errors, rates)


def test_beam_string_sweep(result):
    assert [b.kL for b in result.beam] == [0.0, 2.0, 6.0, 20.0]
    for b in result.beam:
        assert b.error < 5e-5
        assert b.sag_exact < b.sag_string  # bending only stiffens
    assert result.beam_auto.error == pytest.approx(result.beam[0].error, abs=1e-12)


def test_hanging_fiber_without_bending_is_the_elastic_cable(result):
    assert result.hanging[0].EI == 0
    assert result.cable_sag_error < 2e-5  # 8 elements
    assert result.hanging[0].max_force == pytest.approx(result.cable_force_exact, rel=1e-3)


def test_bending_reduces_sag_within_bounds(result):
    q = custom_term.DENSITY * custom_term.GRAVITY * custom_term.AREA
    sags = [h.sag for h in result.hanging]
    assert all(a > b for a, b in zip(sags, sags[1:]))  # more bending stiffness, less sag
    for h in result.hanging[1:]:
        # below both the cable (EI = 0) and the beam without tension (pinned, linear)
        assert h.sag < min(result.cable_sag_exact, 5 * q / (384 * h.EI))
    stiff = result.hanging[-1]
    assert stiff.sag > 0.5 * 5 * q / (384 * stiff.EI)  # EI = 14.7 N m²: beam-like


def test_hanging_fiber_with_bending_mesh_independent(result):
    fine = custom_term.hanging_fiber(EI=custom_term.EI_PHYSICAL, n_elements=16, automatic=True)
    coarse = next(h for h in result.hanging if h.EI == custom_term.EI_PHYSICAL)
    assert coarse.sag == pytest.approx(fine.sag, rel=1e-4)


@pytest.mark.parametrize("automatic", [False, True])
def test_drag_gives_the_backward_euler_velocity(automatic):
    fall = custom_term.falling_fiber(c=100.0, t_end=0.2, dt=0.02, automatic=automatic)
    assert fall.error < 1e-10
    assert fall.velocity_spread < 1e-12
    m = custom_term.DENSITY * custom_term.AREA
    assert fall.terminal_velocity == pytest.approx(-m * custom_term.GRAVITY / 100.0)


def test_falling_fiber_reaches_terminal_velocity(result):
    f = result.falling
    assert f.error < 1e-10
    assert f.velocity_fe == pytest.approx(f.terminal_velocity, rel=1e-3)


def test_term_name_clash_is_reported():
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
    model = sf.Model([fiber])
    model.add_term(custom_term.bending_term(1.0))
    with pytest.raises(ValueError, match="bending"):
        model.add_term(custom_term.bending_term(1.0, automatic=True))


def test_main_prints_summary_and_plots(capsys, result, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "sag.png"
    custom_term.main(["--small", "--plot", str(png)])
    assert png.stat().st_size > 1000
    values = _summary(capsys.readouterr().out)
    assert values["tangent_error_explicit"] < 1e-6
    assert values["tangent_error_auto"] < 1e-6
    assert values["sag_bending_m"] < values["sag_no_bending_m"]
    assert values["sag_no_bending_m"] == pytest.approx(result.hanging[0].sag, abs=1e-6)
    assert values["pinned_beam_sag_error"] < 1e-6
    assert values["drag_velocity_error"] < 1e-10


def test_bending_is_refused_on_fibers_it_is_not_written_for():
    """The bending form measures x″/|A1|², the curvature only on a straight, evenly parametrized reference:
    a bent fiber and a straight one parametrized unevenly (θ + θ² along x) are named; straight fibers pass, and
    the upper limb builds with bending."""
    straight = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, name="straight")
    custom_term.check_straight_fibers(sf.Model([straight]))
    bent = sf.Fiber.polyline([(0, 0, 0), (1, 0, 0), (1, 1, 0)], n_elements=8, name="bent")
    uneven = sf.Fiber(lambda th: np.stack([th + th**2, 0 * th, 0 * th]), n_elements=4, name="uneven")
    with pytest.raises(ValueError, match=r"and bent \(its curvature up to [0-9.]+ 1/m, .*\), uneven \(its curvature "
                                         r"up to 0 1/m, \|X′\| varies by .*\) are not: build such fibers"):
        custom_term.check_straight_fibers(sf.Model([straight, bent, uneven]))
    with pytest.raises(ValueError, match="the stretch-gradient term is written for straight"):
        custom_term.check_straight_fibers(sf.Model([uneven]), term="stretch-gradient")
    from skfiber.demos import upper_limb
    assert "bending" in [t.name for t in upper_limb.build_model(2, bending=1e-4).terms]


def test_a_long_straight_fiber_far_from_the_origin_passes_the_straightness_check():
    """Round-off in X″ grows with the elements squared and the distance from the origin: a straight fiber of
    2,048 elements 1 m away, and a 2 cm one of 1,024 elements 0.5 m away, are straight; bad options are named."""
    for start, end, n in (((1, 1, 0), (2, 1, 0), 2048), ((0.5, 0, 0), (0.52, 0, 0), 1024)):
        custom_term.check_straight_fibers(sf.Model([sf.Fiber.straight(start, end, n_elements=n)]))
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    with pytest.raises(ValueError, match="points_per_element must be an integer ≥ 1, got 0"):
        custom_term.check_straight_fibers(model, points_per_element=0)
    with pytest.raises(ValueError, match="tolerance must be a number > 0, got -1"):
        custom_term.check_straight_fibers(model, tolerance=-1)
