"""Bending stiffness as an option of the upper-limb demo (``--bending EI``), through the README's form."""
import contextlib
import io
import math

import numpy as np
import pytest

import skfiber as sf
from skfiber.demos import upper_limb

EI = 1e-4
#: two level-1 steps (Δt = 1/32 s): the shortest run whose elbow angle is past the first
#: step's 12°
T_END = 0.0625


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(result with --bending 1e-4 through main, its stdout, result of the same run without bending)."""
    out = tmp_path_factory.mktemp("bending")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        results = upper_limb.main(["--bending", "1e-4", "--t-end", str(T_END), "--quiet", "--output", str(out)])
    plain = upper_limb.run(1, t_end=T_END, progress=False)
    return results[0], buffer.getvalue(), plain


def test_bending_option_adds_the_term_and_changes_the_motion(runs):
    bent, stdout, plain = runs
    summary = stdout.strip().splitlines()[-1]
    assert summary.startswith("summary: level=1 dofs=542 steps=2 ")
    assert summary.endswith(" bending_EI=0.0001")
    assert "bending stiffness EI = 0.0001 N·m² on every fiber" in stdout
    assert bent.bending_EI == EI and plain.bending_EI == 0.0
    # the README's form, added once, without a tangent (derived by skfiber)
    (term,) = [t for t in bent.model.terms if t.name == "bending"]
    assert term.tangent is None
    assert not [t for t in plain.model.terms if t.name == "bending"]
    # the term acts: the same 2 steps give another motion.  Measured (level 1, default geometry with
    # fiber–fiber contact, the start in steps of 1/256 s): the elbow turns 3.2e-5° less after the first
    # step (12.716329° → 12.716298°) and 4.6e-6° less after the second; the fibers move by up to 8.3e-6 m.
    # A run is bit-reproducible, so any difference is the term's; bounds of 1e-3° say that EI = 1e-4 N·m²
    # is a small correction next to the kN fiber forces.
    assert bent.times.tolist() == plain.times.tolist() == [0.0, 0.03125, 0.0625]
    d_angle = plain.angle_deg - bent.angle_deg
    assert d_angle[0] == 0.0
    assert 3e-6 < d_angle[1] < 1e-3 and 3e-7 < d_angle[2] < 1e-4, d_angle
    du = np.abs(bent.final_state.u - plain.final_state.u).max()
    assert 1e-7 < du < 1e-4, du
    # the bending residual is not zero at the end state (the fibers are curved)
    ev = bent.model.evaluate(bent.final_state.u, bent.final_state.v, bent.final_state.a, bent.final_state.t,
                             c_v=0.0, c_a=0.0, parts=["bending"])
    assert np.abs(ev.residual).max() > 1e-6


def test_summary_without_bending_says_zero(tmp_path, capsys):
    upper_limb.main(["--t-end", "0.03125", "--quiet", "--output", str(tmp_path), "--bending", "0"])
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.endswith(" bending_EI=0")
    assert "bending" not in {t.name for t in upper_limb.build_model(4, bending=0.0).terms}


def test_cli_passes_bending_on_to_the_demo(runs, monkeypatch, tmp_path, capsys):
    """'skfiber run upper-limb --bending EI' reaches the demo's argparse and its run()."""
    from skfiber import cli

    seen = []
    monkeypatch.setattr(upper_limb, "run", lambda level, **kw: seen.append(kw) or runs[0])
    assert cli.main(["run", "upper-limb", "--bending", "1e-4", "--t-end", str(T_END), "--quiet",
                     "--out", str(tmp_path)]) == 0
    assert seen[0]["bending"] == EI
    assert capsys.readouterr().out.strip().splitlines()[-1].endswith(" bending_EI=0.0001")
    assert cli.main(["run", "upper-limb", "--bending=2.5e-3", "--quiet", "--out", str(tmp_path)]) == 0
    assert seen[1]["bending"] == 2.5e-3


@pytest.mark.parametrize("text, message", [
    ("-1", "must be a finite number ≥ 0, got -1"),
    ("-1e-9", "must be a finite number ≥ 0, got -1e-9"),
    ("nan", "must be a finite number ≥ 0, got nan"),
    ("inf", "must be a finite number ≥ 0, got inf"),
    ("stiff", "'stiff' is not a number"),
])
def test_bad_bending_values_are_usage_errors(text, message, capsys):
    from skfiber import cli

    # ('--bending -1e-9' with a space is argparse's "expected one argument": it takes
    # '-1e-9' for an option; '-1' and '--bending=-1e-9' reach the check)
    for argv in ([f"--bending={text}"], ["--bending", text]) if text != "-1e-9" else ([f"--bending={text}"],):
        with pytest.raises(SystemExit) as exc:
            upper_limb.main(argv + ["--quiet"])
        assert exc.value.code == 2
        assert f"argument --bending: {message}" in capsys.readouterr().err
    assert cli.main(["run", "upper-limb", f"--bending={text}", "--quiet"]) == 2
    assert f"argument --bending: {message}" in capsys.readouterr().err


def test_no_abbreviation_of_bending(capsys):
    with pytest.raises(SystemExit):
        upper_limb.main(["--bend", "1e-4"])
    assert "unrecognized arguments: --bend" in capsys.readouterr().err


@pytest.mark.parametrize("value", [-1.0, -1e-300, math.nan, math.inf, -math.inf, "1e-4", True, 1e-4j])
def test_bad_bending_values_in_the_api(value):
    with pytest.raises(ValueError, match=r"bending stiffness EI must be .*got"):
        upper_limb.run(1, t_end=T_END, progress=False, bending=value)
    with pytest.raises(ValueError, match=r"bending stiffness EI must be .*got"):
        upper_limb.build_model(2, bending=value)


def test_bending_form_tangent_is_derived_right():
    """The demo's form is custom_term's bending(EI) (the README form, whose convergence to the tensioned
    beam tests/test_bending_beam.py checks); the tangent skfiber derives for it in the upper-limb model
    agrees with finite differences."""
    model = upper_limb.build_model(4, bending=EI)
    assert sf.check_tangent(model, dt=1 / 32, parts=["bending"]) < 1e-6
