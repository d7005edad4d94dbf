"""The whiplash demo: pulse, equilibrium, S-then-C, energy–work balance, methods against the Radau reference."""
import math
import re

import numpy as np
import pytest

from skfiber.demos import whiplash as demo


@pytest.fixture(scope="module")
def small():
    return demo.run(small=True)


def test_pulse_is_the_triangle_and_its_integrals():
    t = np.linspace(0.0, 0.2, 4001)
    x, v, a = demo.pulse(t)
    g = demo.GRAVITY
    assert a.max() == pytest.approx(8.5 * g) and t[np.argmax(a)] == pytest.approx(0.0525)
    assert np.all(a[t > 0.105] == 0.0) and a[0] == 0.0
    # the triangle's area is T1's final velocity; x and v are the running integrals (trapezoid rule, O(h²))
    assert v[-1] == pytest.approx(8.5 * g * 0.105 / 2, rel=1e-12)
    h = t[1] - t[0]
    np.testing.assert_allclose(np.concatenate([[0], np.cumsum(h * (a[1:] + a[:-1]) / 2)]), v, atol=1e-5)
    np.testing.assert_allclose(np.concatenate([[0], np.cumsum(h * (v[1:] + v[:-1]) / 2)]), x, atol=1e-7)
    # a scalar time gives scalars (what Prescribed calls)
    assert np.ndim(demo.pulse(0.03)[0]) == 0


def test_initial_posture_is_in_equilibrium_and_the_chain_is_the_papers():
    neck = demo.build_neck()
    system = neck.system
    assert system.n == 8 and neck.bodies == ("C7", "C6", "C5", "C4", "C3", "C2", "C1", "head")
    assert len(neck.anterior) == len(neck.posterior) == 8
    acc = system.accelerations(np.zeros(8), np.zeros(8), 0.0)
    assert np.max(np.abs(acc)) < 1e-8
    # without the preload the weight makes the chain move at once
    loose = demo.build_neck(preload=False).system
    assert np.max(np.abs(loose.accelerations(np.zeros(8), np.zeros(8), 0.0))) > 1.0


def test_small_run_s_then_c_energy_work_and_methods(small):
    # S-shape (upper joints flexed, lower extended) first, then C-shape: the paper's transition is at 50–75 ms
    ph = small.phases
    assert ph.s_then_c
    s0, s1 = ph.s_interval
    assert s0 < 0.03 and 0.05 < s1 <= ph.c_start < 0.08
    # in extension the anterior ligament at the bottom is stretched, the posterior one pushed together,
    # and during the S phase the upper anterior ligament is compressed (flexion there)
    F = small.ligaments
    assert F["ALL C7–T1"].max() > 20 and F["ISL C7–T1"].min() < -20
    s_phase = small.phases.s_shape
    assert F["ALL C1–C2"][s_phase].min() < 0 < F["ISL C1–C2"][s_phase].max()
    # the head moves back and down relative to T1
    k = int(np.argmax(np.linalg.norm(small.head.displacement, axis=1)))
    assert small.head.displacement[k, 0] < -0.05 and small.head.displacement[k, 2] < 0
    # kinetic-energy–work balance with the transport terms: first order in Δt for backward Euler
    (h0, e0, q0), (h1, e1, q1), (h2, e2, q2) = small.residual_study
    assert h0 > h1 > h2 and e0 > e1 > e2 and q0 > q1 > q2
    assert 0.9 < small.residual_rate < 1.1 and e2 < 0.02
    # and the trajectory converges to the Radau reference at first order
    assert 0.9 < small.error_rate < 1.1
    assert small.work_parts["transport"] > 0 and small.work_parts["joints"] < 0
    # the methods against the tight Radau reference
    euler, radau = small.method("euler"), small.method("radau")
    assert 1e-4 < euler.error < 5e-3            # first order at Δt = 4e-4 s
    assert radau.error < 1e-4 and radau.energy_work < 1e-3
    bdf2, controlled = small.method("bdf2"), small.method("bdf2-ec")
    assert bdf2.error < euler.error / 3          # order 2 at the same step beats backward Euler
    assert bdf2.energy_work < euler.energy_work / 3
    assert controlled.error < 5e-4 and controlled.setting == "rtol = 0.0001"  # at Radau's tolerances: global error ≈ rtol
    assert re.fullmatch(r"summary: max_head_disp_m=0\.\d{4} energy_work_residual=\d\.\d\de-\d\d "
                        r"bdf2_vs_radau_err=\d\.\d\de-\d\d wall_s=\d+\.\d", small.summary)
    assert f"bdf2_vs_radau_err={bdf2.error:.2e}" in small.summary


def test_main_writes_the_files(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert demo.main(["--small", "--t-end", "0.03", "--methods", "euler", "radau", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("summary: max_head_disp_m=") and "bdf2_vs_radau_err=nan" in out[-1]
    for name in ("head.csv", "ligaments.csv", "angles.csv", "head_motion.png", "ligament_forces.png", "spine_shape.png"):
        assert (tmp_path / name).stat().st_size > 500
    header = (tmp_path / "ligaments.csv").read_text().splitlines()[0].split(",")
    assert len(header) == 17 and header[1] == "ALL C7–T1_N"
    with pytest.raises(SystemExit):
        demo.main(["--level", "0"])
    with pytest.raises(ValueError, match="unknown method"):
        demo.run(small=True, methods=("rk4",))


def test_listed_by_the_command():
    from skfiber import cli

    assert "whiplash" in cli.demo_names()


def test_bdf2_converges_at_second_order_to_the_reference():
    """BDF2 at Δt and Δt/2 on the same equations: its error against the tight Radau reference drops by 4."""
    coarse = demo.run(small=True, t_end=0.03, methods=("bdf2",), residual_levels=1)
    fine = demo.run(small=True, t_end=0.03, dt=demo.SMALL_DT / 2, methods=("bdf2",), residual_levels=1)
    rate = math.log2(coarse.method("bdf2").error / fine.method("bdf2").error)
    assert 1.8 < rate < 2.2, rate
