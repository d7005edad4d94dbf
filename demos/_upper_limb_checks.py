"""What the upper-limb demo checks in its runs (``demos/upper_limb.py``).

:func:`check_sample` looks at the contacts of one state sampled during a run and :func:`run_checks` sums
the samples up with the run's strain-softening record (:func:`check_states`: both, for a list of states): the
largest stretch per fiber, material past the force peak (or, shortened, the force minimum) of its law
(:class:`skfiber.softening.SofteningLog`: strain softening), the contacts in touch and the smallest 1 + γg of
the wrapping cylinder and of fiber–fiber contact.  :func:`angle_difference`, :func:`force_difference` and
:func:`oscillation` compare levels and measure wiggles of N(θ) (the demo's convergence study;
:func:`describe_wiggles` the line the demo prints on them).

Examples
--------
>>> oscillation([1.0, 1.0, 2.0, 2.0])   # sample 2 is 0.5 from its neighbours' mean, range 1
0.5
>>> oscillation([1.0, 1.0, 2.0, 2.0], relative_to="mean")   # … and the mean is 1.5
0.3333333333333333
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import skfiber as sf
from skfiber.contact import FiberContact
from skfiber.contact.cylinder import CylinderContact
from skfiber.softening import SofteningLog

__all__ = ["RunChecks", "SampleCheck", "SampleChecker", "CHECK_COLUMNS", "check_sample", "run_checks", "check_states", "describe_checks", "angle_difference", "force_difference", "oscillation",
           "profile_oscillation", "profile_wiggles", "describe_wiggles"]


@dataclass
class RunChecks:
    """What the run's states show: every recorded state for strain softening (the start and the end of every
    step; with error control the output times), the states sampled every ``SAMPLE_DT`` seconds of the demo
    (``times``) for the rest.

    ``max_stretch``: largest λ per fiber; ``past_peak``: per fiber the number of states with
    material past the force peak or minimum of its law (:mod:`skfiber.softening`) and the first such time
    (None: never), of the ``softening_states`` states checked (:class:`skfiber.softening.SofteningLog`);
    ``fiber_contacts`` / ``wrap_contacts``: contacts in touch per sample (contact point –
    partner pairs with g < 0: a point touching two fibers counts twice); ``fiber_margin`` /
    ``wrap_margin``: smallest 1 + γg per sample over the contact points with a partner in reach (inf:
    none).
    """

    times: np.ndarray
    max_stretch: dict
    past_peak: dict
    fiber_contacts: np.ndarray
    wrap_contacts: np.ndarray
    fiber_margin: np.ndarray
    wrap_margin: np.ndarray
    softening_states: int

    @property
    def softening(self) -> bool:
        """Whether any fiber went past its force peak (or, shortened, its force minimum)."""
        return any(n > 0 for n, _ in self.past_peak.values())


@dataclass
class SampleCheck:
    """What one sampled state shows of its contacts: the contacts in touch (point – partner pairs) and the
    smallest 1 + γg (inf: no partner in reach) of fiber–fiber contact and of the wrapping cylinder."""

    t: float
    fiber_contacts: int
    wrap_contacts: int
    fiber_margin: float
    wrap_margin: float


class SampleChecker:
    """:func:`check_sample` for many states of one model."""

    def __init__(self, model: sf.Model):
        self.model = model

    def __call__(self, state) -> SampleCheck:
        """The :class:`SampleCheck` of ``state``."""
        model = self.model
        model.set_coordinates(state.q)
        found = {}
        for kind, cls in (("fiber", FiberContact), ("wrap", CylinderContact)):
            evs = [c.evaluate(model, state.u, state.t, tangent=False) for c in model.contacts if isinstance(c, cls)]
            found[kind] = (sum(ev.n_active for ev in evs),
                           min([float(ev.admissibility.min()) for ev in evs if ev.admissibility.size],
                               default=math.inf))
        return SampleCheck(float(state.t), found["fiber"][0], found["wrap"][0], found["fiber"][1], found["wrap"][1])


def check_sample(model: sf.Model, state) -> SampleCheck:
    """:class:`SampleCheck` of one state (the model's rigid coordinates are set to ``state.q``); for many
    states of one model use a :class:`SampleChecker`."""
    return SampleChecker(model)(state)


#: the columns of a run's sample checks (:func:`run_checks`), named as in :class:`SampleCheck`
CHECK_COLUMNS = ("t", "fiber_contacts", "wrap_contacts", "fiber_margin", "wrap_margin")


def run_checks(fiber_names: list[str], columns: dict, *, softening: SofteningLog) -> RunChecks:
    """The :class:`RunChecks` of a run from the checks of its samples in time order (``columns`` maps
    :data:`CHECK_COLUMNS` to arrays over the samples) and from ``softening``, the run's strain-softening check
    of every state, which gives ``max_stretch`` and ``past_peak``."""
    times = np.asarray(columns["t"], dtype=float)
    max_stretch = {name: float(v) for name, v in zip(fiber_names, softening.max_stretch)}
    past_peak = {name: (int(n), float(t0) if n else None)
                 for name, n, t0 in zip(fiber_names, softening.past_states, softening.first_past)}
    return RunChecks(times, max_stretch, past_peak, np.asarray(columns["fiber_contacts"], dtype=int),
                     np.asarray(columns["wrap_contacts"], dtype=int), np.asarray(columns["fiber_margin"], dtype=float),
                     np.asarray(columns["wrap_margin"], dtype=float), softening.states)


def check_states(model: sf.Model, states: list) -> RunChecks:
    """Stretch, force peak and contact counts of ``states`` (see :class:`RunChecks`)."""
    log, checker = SofteningLog(model), SampleChecker(model)
    samples = []
    for state in states:
        log(state)
        samples.append(checker(state))
    columns = {key: [getattr(c, key) for c in samples] for key in CHECK_COLUMNS}
    return run_checks([f.name for f in model.fibers], columns, softening=log)


def _common_times(a, b):
    """(coarse, fine): the run with fewer samples, whose times are times of the other when the step halves."""
    return (a, b) if len(a.times) <= len(b.times) else (b, a)


def angle_difference(a, b) -> float:
    """Largest |elbow angle of a − of b| (deg) at the times of the coarser run (the finer interpolated there:
    exact at common times, e.g. every time of a level is one of the next level's)."""
    coarse, fine = _common_times(a, b)
    return float(np.abs(np.interp(coarse.times, fine.times, fine.angle_deg) - coarse.angle_deg).max())


def force_difference(a, b, *, since: float = 0.0) -> float:
    """Largest difference of the upper-attachment forces of biceps1 and triceps1 (paper Fig. 11) of a and b,
    relative to the largest force of that fiber, at the times ≥ ``since`` of the coarser run (the finer
    interpolated there, as :func:`angle_difference`)."""
    coarse, fine = _common_times(a, b)
    keep = np.asarray(coarse.times) >= since
    diffs = []
    for name in ("biceps_origin_force", "triceps_origin_force"):
        fc, ff = getattr(coarse, name), getattr(fine, name)
        diffs.append(np.abs(np.interp(coarse.times, fine.times, ff) - fc)[keep].max() / np.abs(ff).max())
    return float(max(diffs))


def oscillation(force: np.ndarray, *, relative_to: str = "range") -> float:
    """Largest |N_i − (N_{i−1} + N_{i+1})/2| along a fiber (the wiggle from sample to sample).

    Parameters
    ----------
    force
        N at the samples, in order along the fiber.
    relative_to
        ``"range"`` (default): relative to the fiber's force range max N − min N;
        ``"mean"``: relative to |mean N| of the samples.

    Returns
    -------
    float
        The ratio (0 for fewer than 3 samples or a zero denominator).

    Notes
    -----
    The range-relative value does not shrink with the wiggles on a nearly constant N: the range
    is then mostly the wiggle itself (a load-free fiber, whose exact N is constant, gives 0.52–0.67 at
    4–128 elements).  It falls only once the wiggles are below the true variation of N; the
    mean-relative value measures the wiggles themselves (``docs/theory.md``, upper limb).
    """
    force = np.asarray(force, dtype=float)
    if relative_to == "range":
        scale = force.max() - force.min() if force.size else 0.0
    elif relative_to == "mean":
        scale = abs(force.mean()) if force.size else 0.0
    else:
        raise ValueError(f"relative_to must be 'range' or 'mean', got {relative_to!r}")
    if force.size < 3 or scale == 0.0:
        return 0.0
    return float(np.abs(force[1:-1] - 0.5 * (force[:-2] + force[2:])).max() / scale)


def profile_oscillation(result, *, relative_to: str = "range", recovered: bool = False) -> float:
    """:func:`oscillation` of the axial-force profiles of the run (paper Fig. 12 times), the largest: of N at the
    samples, or with ``recovered`` of N recovered by L2 projection (:func:`skfiber.recovered_axial_force`)."""
    k = 2 if recovered else 1
    return max(oscillation(p[k], relative_to=relative_to) for prof in result.profiles.values() for p in prof.values())


def profile_wiggles(result) -> list[tuple[float, str, float, float, float]]:
    """Per axial-force profile of the run: (time, fiber, :func:`oscillation` of N at the samples relative to the
    range, relative to the mean, and of the recovered N relative to the range), in time order."""
    return [(float(t), name, oscillation(N), oscillation(N, relative_to="mean"), oscillation(N_rec))
            for t, prof in sorted(result.profiles.items()) for name, (_, N, N_rec) in prof.items()]


def describe_wiggles(result) -> list[str]:
    """Lines on the wiggles of the run's axial-force profiles: the largest deviation of a sample from its
    neighbours' mean, of N at the samples relative to the force range and to the mean force, and of the
    recovered N relative to the force range (the demo's check), each with its fiber and time, and what they
    are (the figures measured per level are in ``docs/theory.md``, upper limb)."""
    wiggles = profile_wiggles(result)
    t_r, name_r, by_range = max(wiggles, key=lambda w: w[2])[:3]
    t_m, name_m, _, by_mean = max(wiggles, key=lambda w: w[3])[:4]
    t_c, name_c, *_, recovered = max(wiggles, key=lambda w: w[4])
    times = ", ".join(f"{t:g}" for t in sorted(result.profiles))
    return [f"axial-force profiles (t = {times} s), largest deviation of a sample from its neighbours' mean: "
            f"recovered N {100 * recovered:.2f} % of the force range ({name_c}, t = {t_c:g} s); N at the samples "
            f"{100 * by_range:.2f} % of the force range ({name_r}, t = {t_r:g} s), {100 * by_mean:.2f} % of the mean "
            f"force ({name_m}, t = {t_m:g} s)",
            "  (N at a point comes from the stretch of the cubic Hermite field; its error falls like h³ with more "
            "elements per fiber, and it is large where the stretch varies along the fiber. The recovered N, the L2 "
            "projection onto the derivatives of the test functions, is what the weak form determines; "
            "docs/theory.md, upper limb)"]


def describe_checks(r) -> list[str]:
    """Lines on the largest stretch, the force peak and the contacts of a run."""
    c = r.checks
    lines = ["largest stretch λ per fiber: " + ", ".join(f"{k} {v:.3f}" for k, v in c.max_stretch.items())]
    past = {k: v for k, v in c.past_peak.items() if v[0]}
    lines.append("material past the force peak or minimum of its law: " + (
        ", ".join(f"{k} in {n} of {c.softening_states} states (first at t = {t0:.4g} s)" for k, (n, t0) in past.items())
        + " — WARNING: strain softening, the result depends on the mesh" if past else "none (every fiber on the "
        f"rising branch of N(λ) in all {c.softening_states} states checked)"))
    lines.append("contacts in touch (contact point – partner pairs with g < 0): wrapping cylinder "
                 f"{c.wrap_contacts.min()}–{c.wrap_contacts.max()}, "
                 + (f"fiber–fiber {c.fiber_contacts.min()}–{c.fiber_contacts.max()}" if r.fiber_contact
                    else "fiber–fiber contact off"))
    lines.append(f"smallest 1 + γg: wrapping cylinder {c.wrap_margin.min():.3g}"
                 + (f", fiber–fiber {c.fiber_margin.min():.3g}" if r.fiber_contact else "")
                 + f" (at t = 0: {c.wrap_margin[0]:.3g}" + (f", {c.fiber_margin[0]:.3g}" if r.fiber_contact else "")
                 + ")")
    return lines
