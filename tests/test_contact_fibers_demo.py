"""Demo of paper §5.3 (demos/contact_fibers.py): two crossing fibers pressed together."""
import numpy as np
import pytest

from skfiber.demos import contact_fibers as demo


@pytest.fixture(scope="module")
def small():
    return demo.run(small=True)  # 8, 16, 32 elements, ≈ 3 s


def test_small_study_numbers(small):
    assert small.levels == [8, 16, 32] and small.load == demo.STUDY_LOAD == -10.0
    # u_z(0.5) of the upper fiber (free sag would be 0.125 m): it rests on the lower one
    assert np.allclose(small.uz, [-0.0680289, -0.0924010, -0.0913163], atol=2e-6)
    # the lower fiber is pressed down by ≈ 2.5 cm, except with 8 elements, where none of its
    # own contact points lies in the contact zone (two half passes, 5 points per element)
    assert np.allclose(small.lower_uz, [0.0, -0.0256129, -0.0247083], atol=2e-6)
    assert np.allclose(small.errors[:2], [2.329e-2, 1.085e-3], rtol=2e-3) and small.errors[2] == 0.0
    assert 4.3 < small.rate < 4.5  # pre-asymptotic (see the module notes)
    assert all(a > 0 for a in small.active)
    assert all(0.99 < m < 1.0 for m in small.min_admissibility)  # in contact, small penetration


def test_main_prints_table_and_summary(capsys):
    demo.main(["--small"])
    out = capsys.readouterr().out.strip().splitlines()
    assert any("reference" in line for line in out)
    assert out[-1].startswith("summary: rate=") and 4.3 < float(out[-1].split("=")[1]) < 4.5


def test_build_model_rejects_bad_levels():
    with pytest.raises(ValueError, match="n_elements"):
        demo.build_model(0)
    with pytest.raises(ValueError, match="at least 3 levels"):
        demo.run(levels=[8, 16])
