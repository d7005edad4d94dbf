"""The hanging-bundle demo: the damped motion settles on the static equilibrium."""
import numpy as np

from skfiber.demos import hanging_bundle


def test_bundle_settles_on_static_equilibrium():
    res = hanging_bundle.run(level=1, t_end=1.5, progress=False)
    assert res.run.steps == 150 and res.times[-1] == 1.5
    np.testing.assert_allclose(res.final_sag, res.static_sag, rtol=5e-3)
    # activation tightens a fiber: less sag for larger α
    assert res.static_sag[0] > res.static_sag[1] > res.static_sag[2] > 0.03
    # it overshoots on the way down
    assert res.max_sag > 1.1 * res.static_sag[0]


def test_main_prints_summary(capsys):
    assert hanging_bundle.main(["--t-end", "0.03", "--no-progress"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("summary: max_sag_m=") and "steps=3" in lines[-1]
