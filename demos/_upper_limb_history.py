"""What the upper-limb demo (``demos/upper_limb.py``) records during a run, for its outputs and its checkpoints.

:class:`History` is the run's step callback.  Per step it keeps the time, the elbow angle, the
force magnitudes at the upper-arm attachments of biceps1 and triceps1 (paper Fig. 11) and the
Newton iterations; every step's strain-softening check (:class:`skfiber.softening.SofteningLog`: the
stretches and the force peaks, summed up per fiber); every ``sample_every``-th step the checks of the state
(:func:`check_sample`: contacts); the sampled states nearest to the
snapshot times (paper Fig. 13); and the axial-force profiles N(θ) of biceps1 and triceps1 at the
profile times (paper Fig. 12).  Memory: five numbers per step, one small check per sample and a
few states, so a long run stays small.

:meth:`History.arrays` gives all of it as arrays for the checkpoint
(``run_simulation(checkpoint_extra=history.arrays)``), and :meth:`History.restore` takes them back
when a run resumes, so the resumed run's outputs equal an uninterrupted run's bit for bit.

Examples
--------
>>> from demos import upper_limb                                        # doctest: +SKIP
>>> model = upper_limb.build_model(8)                                   # doctest: +SKIP
>>> history = History(model, sample_every=1, profile_times=(1.0,), snapshot_times=(0.0,), sample_dt=1 / 32)  # doctest: +SKIP
>>> history.record(model.initial_state())                               # doctest: +SKIP
>>> history.arrays()["angle"]                                           # doctest: +SKIP
array([0.])
"""
from __future__ import annotations

import time
from array import array

import numpy as np

import skfiber as sf
from skfiber.solver import StepInfo
from skfiber.softening import SofteningLog

if __package__:   # imported as demos._upper_limb_history / skfiber.demos._upper_limb_history
    from ._upper_limb_checks import CHECK_COLUMNS, SampleChecker
else:             # demos/ is on sys.path
    from _upper_limb_checks import CHECK_COLUMNS, SampleChecker

__all__ = ["History", "PROFILE_FIBERS", "FORCE_ATTACHMENTS"]

#: what a profile keeps per fiber: θ, N at the samples, N recovered (:func:`axial_force`)
_PROFILE_KEYS = ("theta", "force", "recovered")
#: the fibers whose axial-force profiles are kept (paper Fig. 12)
PROFILE_FIBERS = ("biceps1", "triceps1")
#: the attachments whose forces are kept per step (paper Fig. 11)
FORCE_ATTACHMENTS = ("biceps1.origin", "triceps1.origin")
#: the State fields a snapshot keeps (what the 3D pictures draw)
_SNAPSHOT_FIELDS = ("u", "v", "q", "p")


def axial_force(model: sf.Model, state: sf.State, fiber: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """θ, the axial force N (N) at the samples (:func:`skfiber.fiber_fields`) and N recovered by L2 projection
    (:func:`skfiber.recovered_axial_force`) along ``fiber``."""
    ff = sf.fiber_fields(model, state, fiber)
    return ff.theta, ff.force, sf.recovered_axial_force(model, state, fiber, theta=ff.theta)


class History:
    """The records of one run (see the module notes).

    ``check_time`` holds the seconds spent in the checks (the demo keeps them out of its wall time).
    """

    def __init__(self, model: sf.Model, *, sample_every: int, profile_times, snapshot_times, sample_dt: float):
        self.model = model
        #: the strain-softening check of every recorded state
        self.softening = SofteningLog(model)
        self.checker = SampleChecker(model)
        self.sample_every = int(sample_every)
        self.profile_times = tuple(float(t) for t in profile_times)
        self.snapshot_times = np.asarray(snapshot_times, dtype=float)
        self.sample_dt = float(sample_dt)
        self.t, self.angle = array("d"), array("d")
        self.forces = {name: array("d") for name in FORCE_ATTACHMENTS}
        self.newton = array("i")
        self.max_contacts = 0
        #: the sample checks by column (CHECK_COLUMNS)
        self.checks = self._empty_checks()
        self.snapshots: list[sf.State] = []
        self.profiles: dict = {}
        self.check_time = 0.0

    @staticmethod
    def _empty_checks() -> dict:
        return {key: array(code) for key, code in zip(CHECK_COLUMNS, "dqqdd")}

    def check_columns(self) -> dict[str, np.ndarray]:
        """The sample checks as arrays (see :func:`run_checks`)."""
        return {key: np.array(values) for key, values in self.checks.items()}

    def record(self, state: sf.State, info: StepInfo | None = None) -> None:
        """Record ``state``: the start (``info`` None) or the end of step ``info.step``."""
        forces = self.model.attachment_forces(state)
        self.t.append(float(state.t))
        self.angle.append(float(state.q[0]))
        for name, values in self.forces.items():
            values.append(float(np.linalg.norm(forces[name])))
        step = 0 if info is None else info.step
        if info is not None:
            self.newton.append(int(info.newton_iterations))
            self.max_contacts = max(self.max_contacts, int(info.active_contacts))
        sampled = step % self.sample_every == 0 or (info is not None and step == info.n_steps)
        tic = time.perf_counter()
        self.softening(state)
        if sampled:
            check = self.checker(state)
            for key, values in self.checks.items():
                values.append(getattr(check, key))
        self.check_time += time.perf_counter() - tic
        if sampled:
            if self.snapshot_times.size and np.abs(self.snapshot_times - state.t).min() <= 0.5 * self.sample_dt + 1e-9:
                self.snapshots.append(state)
        for tp in self.profile_times:
            if tp not in self.profiles and state.t >= tp - 1e-9:
                self.profiles[tp] = {name: axial_force(self.model, state, name) for name in PROFILE_FIBERS}

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything recorded, as arrays (names → arrays), for a checkpoint."""
        out = {"t": np.array(self.t), "angle": np.array(self.angle), "newton": np.array(self.newton, dtype=np.int32),
               "max_contacts": np.array(self.max_contacts)}
        out.update({f"force.{name}": np.array(values) for name, values in self.forces.items()})
        out.update({f"check.{key}": values for key, values in self.check_columns().items()})
        out.update({f"softening.{key}": values for key, values in self.softening.arrays().items()})
        out["snapshot.t"] = np.array([s.t for s in self.snapshots])
        for key in _SNAPSHOT_FIELDS:
            width = np.asarray(getattr(self.model.initial_state(), key)).size
            out[f"snapshot.{key}"] = np.array([getattr(s, key) for s in self.snapshots]).reshape(-1, width)
        times = sorted(self.profiles)
        out["profile.t"] = np.array(times)
        for name in PROFILE_FIBERS:
            for k, key in enumerate(_PROFILE_KEYS):
                out[f"profile.{name}.{key}"] = np.array([self.profiles[t][name][k] for t in times])
        return out

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Take back what :meth:`arrays` gave (a run resuming from its checkpoint)."""
        try:
            self.t, self.angle = array("d", arrays["t"]), array("d", arrays["angle"])
            self.forces = {name: array("d", arrays[f"force.{name}"]) for name in FORCE_ATTACHMENTS}
            self.newton = array("i", arrays["newton"].astype(int))
            self.max_contacts = int(arrays["max_contacts"])
            self.checks = self._empty_checks()
            for key, values in self.checks.items():
                values.extend(np.ravel(arrays[f"check.{key}"]).astype(values.typecode))
            self.softening.restore({key: arrays[f"softening.{key}"] for key in self.softening.arrays()})
            self.snapshots = [sf.State(float(t), *(arrays[f"snapshot.{key}"][i].copy() for key in ("u", "v")),
                                       q=arrays["snapshot.q"][i].copy(), p=arrays["snapshot.p"][i].copy())
                              for i, t in enumerate(arrays["snapshot.t"])]
            self.profiles = {float(t): {name: tuple(arrays[f"profile.{name}.{key}"][i].copy() for key in _PROFILE_KEYS)
                                        for name in PROFILE_FIBERS}
                             for i, t in enumerate(arrays["profile.t"])}
        except KeyError as err:
            raise ValueError(f"the checkpoint holds no upper-limb history (no {err.args[0]!r}); it was not written "
                             "by this version of the upper-limb demo: start afresh (without --resume)") from None
