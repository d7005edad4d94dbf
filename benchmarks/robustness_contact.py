"""Randomized robustness of the contact solvers: no hang, no NaN, no accepted inadmissible state.

Seeded random cases of two kinds, each solved statically (:func:`skfiber.solve_static`) and
dynamically (:func:`skfiber.simulate`):

``cylinder``
    one or two fibers with fixed ends over a fixed cylinder (axis along y, below their middle) at a
    random clearance (some start overlapping it), pulled onto it by gravity or a line load;
``fibers``
    two crossing fibers with fixed ends at random heights, the upper one loaded towards the other.

Laws, prestress (0 … 100 Pa, slack cables included), penalty κ and γ, radii, loads, load steps and
elements are drawn at random.  Each run ends as

* ``converged`` — the state is checked: finite, and 1 + γg > 0 at every contact point of every
  accepted (stored) state, evaluated afresh;
* ``clear failure`` — :class:`skfiber.ConvergenceError` (the solver says where and why) or a
  ``ValueError`` (e.g. a start state that is already inadmissible);
* ``bad`` — anything else: another exception, a NaN, an accepted state with 1 + γg ≤ 0, or more
  work than the bound.

Work is bounded, not timed: the number of residual evaluations of every run is counted and checked
against the bound the solver's settings imply (:func:`work_bound`).

Run ``python benchmarks/robustness_contact.py [--cases N] [--seed S]`` (default 300 cases: 150 of
each kind, half static, half dynamic).  Ends with ``summary: cases=… converged=… clear_failures=…
bad=… nan=0 inadmissible=0 over_bound=0 max_evaluations=… wall_s=…``.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

import skfiber as sf
from skfiber.cli import ArgumentParser, nonnegative_int, positive_int, run_script
from skfiber.contact import CylinderContact, FiberContact, PenaltyLaw
from skfiber.core.interrupt import CTRL_C, caused_by_ctrl_c, reraise_as_interrupt
from skfiber.relaxation import MAX_PSEUDO_STEPS
from skfiber.statics import ATTEMPTS_PER_STEP

#: the solver settings of the suite (small, so that the full set runs in minutes)
MAX_BISECTIONS = 3
MAX_HALVINGS = 3
NEWTON = sf.NewtonOptions(max_iterations=25)
DT = 0.01
T_END = 0.1


@dataclass(frozen=True)
class Case:
    """One random case: ``kind`` "cylinder" or "fibers", ``mode`` "static" or "dynamic", its seed."""

    kind: str
    mode: str
    seed: int


@dataclass
class Outcome:
    case: Case
    status: str  # converged, clear failure, bad
    detail: str
    evaluations: int
    bound: int


def cases(n: int, *, seed: int = 0) -> list[Case]:
    """``n`` cases, the kinds and modes alternating, with seeds seed, seed + 1, …"""
    kinds = [("cylinder", "static"), ("cylinder", "dynamic"), ("fibers", "static"), ("fibers", "dynamic")]
    return [Case(*kinds[i % 4], seed + i) for i in range(n)]


def _law(rng) -> sf.SymbolicLaw:
    sigma0 = float(rng.choice([0.0, rng.uniform(1.0, 100.0)]))  # slack cables in half the cases
    mu = float(10 ** rng.uniform(2, 5))
    return sf.passive_kelvin_voigt(mu_muscle=mu, mu_tendon=mu, eta_muscle=float(rng.uniform(0, 100)),
                                   eta_tendon=0.0) + sf.prestress(sigma0)


def build(case: Case) -> tuple[sf.Model, int]:
    """The model of a case and its load steps."""
    rng = np.random.default_rng(case.seed)
    n_el = int(rng.choice([6, 8, 12]))
    law = _law(rng)
    r = float(rng.uniform(0.01, 0.06))
    kappa, gamma = float(10 ** rng.uniform(2, 4)), float(rng.uniform(1.0, 20.0))
    if case.kind == "cylinder":
        n_fib = int(rng.integers(1, 3))
        fibers = [sf.Fiber.straight((0.0, 0.2 * k + rng.normal(0, 0.01), rng.normal(0, 0.01)),
                                    (1.0, 0.2 * k + rng.normal(0, 0.01), rng.normal(0, 0.01)),
                                    n_elements=n_el, radius=r, law=law) for k in range(n_fib)]
        model = sf.Model(fibers)
        r_cyl = float(rng.uniform(0.03, 0.2))
        # < 0: the fibers start inside the cylinder's reach; dynamic runs start closer (they last 0.1 s)
        clearance = float(rng.uniform(-0.4, 1.0 if case.mode == "static" else 0.3)) * r
        z_c = -(r_cyl + r + clearance)
        model.add_contact(CylinderContact((float(rng.uniform(0.3, 0.7)), 0.0, z_c), (0.0, 1.0, 0.0), r_cyl,
                                          law=PenaltyLaw(stiffness=kappa, gamma=gamma)))
    else:
        z = float(rng.uniform(2.05, 3.0)) * r
        fibers = [
            sf.Fiber.straight((0.0, rng.uniform(-0.1, 0.1), z + rng.normal(0, 0.005)),
                              (1.0, rng.uniform(-0.1, 0.1), z + rng.normal(0, 0.005)), n_elements=n_el, radius=r,
                              law=law),
            sf.Fiber.straight((rng.uniform(0.3, 0.7), -0.5, rng.normal(0, 0.005)),
                              (rng.uniform(0.3, 0.7), 0.5, rng.normal(0, 0.005)), n_elements=n_el, radius=r, law=law),
        ]
        model = sf.Model(fibers)
        model.add_contact(FiberContact(PenaltyLaw(stiffness=kappa, gamma=gamma)))
    for f in fibers:
        model.fix(f, "start")
        model.fix(f, "end")
    load = -float(10 ** rng.uniform(-0.5, 1.5))  # N/m, downwards
    if rng.random() < 0.5:
        model.add_line_load((0.0, 0.0, load), fibers=[fibers[0]])
    else:
        model.add_gravity()
        model.add_line_load((0.0, 0.0, load), fibers=[fibers[0]])
    return model, int(rng.choice([1, 2, 5]))


def work_bound(case: Case, load_steps: int) -> int:
    """The most residual evaluations the solver's settings allow for a case.

    A Newton solve evaluates at most 1 + max_iterations (line_search + 2) times (start, full step
    and its halvings).  Statics: at most ATTEMPTS_PER_STEP · load_steps · (max_bisections + 1) Newton
    solves, plus one relaxation (MAX_PSEUDO_STEPS pseudo-steps with a Newton solve each and a plain
    Newton solve every few) that may overrun the count before it is checked.  Dynamics: per step at most
    2^(max_halvings + 1) − 1 attempts, each a Newton solve plus the predictor's evaluation.
    """
    per_solve = 1 + NEWTON.max_iterations * (NEWTON.line_search + 2)
    if case.mode == "static":
        solves = ATTEMPTS_PER_STEP * load_steps * (MAX_BISECTIONS + 1) + 2 * MAX_PSEUDO_STEPS
        return solves * per_solve + 2  # + the start checks
    steps = math.ceil(T_END / DT - 1e-9)
    return steps * (2 ** (MAX_HALVINGS + 1) - 1) * (per_solve + 1) + 2


def inadmissible_reason(model: sf.Model, u: np.ndarray, t: float) -> str:
    """'' when 1 + γg > 0 at every contact point of the state, else what is wrong."""
    for contact in model.contacts:
        try:
            ev = contact.evaluate(model, u, t, tangent=False)
        except FloatingPointError as err:
            return str(err)
        if ev.admissibility.size and not ev.admissibility.min() > 0:
            return f"min 1 + γg = {ev.admissibility.min():.3g}"
    return ""


def run_case(case: Case) -> Outcome:
    """Solve a case and classify the result (see the module notes)."""
    model, load_steps = build(case)
    bound = work_bound(case, load_steps)
    count = [0]
    evaluate = model.evaluate

    def counted(*args, **kwargs):
        count[0] += 1
        return evaluate(*args, **kwargs)

    model.evaluate = counted  # count the work (an instance attribute: the class stays as it is)
    try:
        if case.mode == "static":
            states = [sf.solve_static(model, load_steps=load_steps, max_bisections=MAX_BISECTIONS,
                                      newton_options=NEWTON).state]
        else:
            result = sf.simulate(model, t_end=T_END, dt=DT, max_halvings=MAX_HALVINGS, newton_options=NEWTON,
                                 progress=False, on_interrupt="raise")
            states = [result.state(i) for i in range(len(result.times))]
    except Exception as err:  # noqa: BLE001 - anything else is what this suite looks for
        if caused_by_ctrl_c(err):  # (numba's SystemError around a Ctrl-C): the suite stops, no case's outcome
            reraise_as_interrupt(err)
        if isinstance(err, sf.ConvergenceError):
            status, detail = "clear failure", f"ConvergenceError: {err.reason[:120]}"
        elif isinstance(err, ValueError):
            status, detail = "clear failure", f"ValueError: {str(err)[:120]}"
        else:
            status, detail = "bad", f"{type(err).__name__}: {str(err)[:160]}"
    else:
        status, detail = "converged", ""
        for st in states:
            if not (np.all(np.isfinite(st.u)) and np.all(np.isfinite(st.v))):
                status, detail = "bad", f"nan: a non-finite state at t = {st.t}"
                break
            why = inadmissible_reason(model, st.u, st.t)
            if why:
                status, detail = "bad", f"inadmissible: accepted state at t = {st.t} with {why}"
                break
    finally:
        model.evaluate = evaluate
    if count[0] > bound:
        status, detail = "bad", f"over bound: {count[0]} evaluations > {bound}"
    return Outcome(case, status, detail, count[0], bound)


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=positive_int, default=300, help="number of cases (default 300)")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the first case (default 0)")
    parser.add_argument("--verbose", action="store_true", help="one line per case")
    args = parser.parse_args(argv)
    tic = time.perf_counter()
    outcomes = []
    interrupted = False
    try:
        for case in cases(args.cases, seed=args.seed):
            t0 = time.perf_counter()
            out = run_case(case)
            outcomes.append(out)
            if args.verbose or out.status == "bad":
                print(f"{case.kind:8s} {case.mode:7s} seed {case.seed:4d}: {out.status:13s} {out.evaluations:6d} "
                      f"evaluations ({time.perf_counter() - t0:5.1f} s) {out.detail}", flush=True)
    except CTRL_C as err:  # Ctrl-C: the table and summary of the cases done, marked interrupted=1
        if not caused_by_ctrl_c(err):
            raise
        interrupted = True
        print(f"interrupted (Ctrl-C) after {len(outcomes)} of {args.cases} cases", flush=True)
    wall = time.perf_counter() - tic
    print(f"{'kind':8s} {'mode':7s} {'cases':>5s} {'converged':>9s} {'clear':>5s} {'bad':>3s} {'max evals':>9s}")
    for kind in ("cylinder", "fibers"):
        for mode in ("static", "dynamic"):
            group = [o for o in outcomes if o.case.kind == kind and o.case.mode == mode]
            if group:
                print(f"{kind:8s} {mode:7s} {len(group):5d} {sum(o.status == 'converged' for o in group):9d} "
                      f"{sum(o.status == 'clear failure' for o in group):5d} "
                      f"{sum(o.status == 'bad' for o in group):3d} {max(o.evaluations for o in group):9d}")
    reasons = {}
    for o in outcomes:
        if o.status == "clear failure":
            key = o.detail.split(":")[0] + (": start inadmissible" if "start state" in o.detail else "")
            reasons[key] = reasons.get(key, 0) + 1
    print("clear failures: " + (", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "none"))
    bad = [o for o in outcomes if o.status == "bad"]
    print(f"summary: cases={len(outcomes)} converged={sum(o.status == 'converged' for o in outcomes)} "
          f"clear_failures={sum(o.status == 'clear failure' for o in outcomes)} bad={len(bad)} "
          f"nan={sum(o.detail.startswith('nan') for o in bad)} "
          f"inadmissible={sum(o.detail.startswith('inadmissible') for o in bad)} "
          f"over_bound={sum(o.detail.startswith('over bound') for o in bad)} "
          f"max_evaluations={max((o.evaluations for o in outcomes), default=0)} wall_s={wall:.1f}"
          + (" interrupted=1" if interrupted else ""))
    return 130 if interrupted else 1 if bad else 0


if __name__ == "__main__":
    run_script(main)
