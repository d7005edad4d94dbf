"""Warnings of the library name the user's line (skfiber.core.warn), whatever the depth of the call."""
import warnings

import numpy as np
from skfem import LinearForm

import skfiber as sf
from skfiber.core.warn import PACKAGE_FOLDER, warn
from skfiber.softening import SofteningWarning, warn_if_past_force_peak


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    assert caught, "no warning"
    return caught[0]


def test_a_library_warning_names_the_callers_file_and_line():
    """Direct, one library frame deep (softening), and several deep (a term the form compiler cannot trace,
    found when a simulation builds its kernel): each warning points at this file."""
    law = sf.paper_law(s_max=1e6)
    point = sf.MaterialPoint(np.array([1.0, 3.0]), 0.0, theta=1.0, t=0.0, muscle_fraction=1.0, activation=1.0)
    first = _caught(lambda: warn("plain", RuntimeWarning))
    assert first.filename == __file__ and first.category is RuntimeWarning
    soft = _caught(lambda: warn_if_past_force_peak("biceps", law, point))
    assert soft.category is SofteningWarning and soft.filename == __file__

    @LinearForm
    def one_sided(v, w):
        return 1e3 * np.minimum(w.x, 0.0)[2] * v[2] * w.J  # (of a whole vector: not traced)

    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    model.add_term(one_sided, name="one_sided")
    deep = _caught(lambda: sf.simulate(model, t_end=0.01, dt=0.01, progress=False))
    assert "'one_sided' cannot be compiled" in str(deep.message)
    assert deep.filename == __file__, deep.filename
    assert not __file__.startswith(PACKAGE_FOLDER)
