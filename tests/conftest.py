import numpy as np
import pytest

import skfiber as sf


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def straight_model(n_elements=8, *, law=None, fibers=1, **fiber_kwargs):
    """A model with `fibers` parallel straight fibers of unit length."""
    law = law if law is not None else sf.paper_law()
    fs = [
        sf.Fiber.straight((0, 0.3 * k, 0), (1, 0.3 * k, 0), n_elements=n_elements, law=law, **fiber_kwargs)
        for k in range(fibers)
    ]
    return sf.Model(fs), fs
