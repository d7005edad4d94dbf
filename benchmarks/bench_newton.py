"""Modified against full Newton, and the cost of a time step split into compiled kernels and the rest.

Two fiber-only transients:

* ``tendon``: the stiff-tendon fiber of ``bench_transient.py`` (Ne = 20, 126 DOFs), BDF2 at Δt = 1 ms for 1 s;
* ``bundle``: five fibers × 16 elements (510 DOFs) with the paper's law (Table 1), ends fixed, gravity,
  constant activations 0 … 0.1, backward Euler at Δt = 5 ms for 2.5 s.

Each case runs with full Newton (``NewtonOptions(jacobian_reuse=False)``: a tangent and a factorization per
iteration) and with modified Newton (the default), each step as one compiled call
(``NewtonOptions(compiled_step=True)``, :func:`skfiber.fiber_step.compiled_step`), alternating, ``--rounds`` times after a warm-up; the
figure is the smallest CPU time (``time.process_time``) per step.  The machine may be shared: CPU time is
what this process used, the minimum what it needs.  Both runs must give the same trajectory to Newton's
tolerance (checked: the largest difference of the stored displacements is printed).

With ``--split`` one more run of each is made with every compiled function timed at its call from Python
(the form kernel or the fused step evaluation, the tangent's assembly, the block LU's factorization and
solves, the sum of the residual rows): "kernel" time; the rest is Python ("non-kernel").  The two timer
calls per compiled call (≈ 0.3 µs each) count as kernel time.

``--python-step`` measures the Python step instead (``compiled_step=False``: Newton's iteration in Python
around the compiled evaluations, the tangent's assembly and the block LU), which a default run
(``NewtonOptions()``, ``compiled_step=None``) takes for forms whose step was never compiled on the machine,
unless the run is long (:func:`skfiber.fiber_step.decide_compiled_step`); after the warm-up the benchmark
prints which of the two a default run of each case takes.

Run: ``python benchmarks/bench_newton.py [--rounds R] [--split] [--quick] [--python-step]``.  Ends with
``summary: tendon_full_us=… tendon_reuse_us=… bundle_full_us=… bundle_reuse_us=… …`` (µs per step).
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

import skfiber as sf
from skfiber.cli import ArgumentParser, positive_int, run_script
from skfiber.fiber_step import decide_compiled_step

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demos"))
import bench_transient  # noqa: E402
import hanging_bundle  # noqa: E402

FULL = sf.NewtonOptions(jacobian_reuse=False, compiled_step=True)
REUSE = sf.NewtonOptions(compiled_step=True)


def cases(quick: bool) -> dict:
    """name → (model, simulate keywords)."""
    tendon = bench_transient.build_model(20)
    bundle = hanging_bundle.build_model(2, activations=(0.0, 0.025, 0.05, 0.075, 0.1))
    scale = 0.2 if quick else 1.0
    return {"tendon": (tendon, dict(t_end=1.0 * scale, dt=1e-3, method="bdf2")),
            "bundle": (bundle, dict(t_end=2.5 * scale, dt=5e-3, method="euler"))}


def run(model, kw, options):
    start = time.process_time()
    r = sf.simulate(model, progress=False, newton_options=options, store_every=10, on_interrupt="raise", **kw)
    return time.process_time() - start, r


class KernelClock:
    """Times every call of skfiber's compiled functions from Python (monkeypatched for one run)."""

    def __init__(self, model):
        import skfiber.block_tridiagonal as bt
        import skfiber.fiber_part as fp
        import skfiber.fiber_step as fs

        self.ns = 0
        self.patched = []
        self.wrapped = {}
        for module, name in [(bt, n) for n in ("factor_solve", "assemble_factor_solve", "solve_factored", "factor",
                                              "residual_ok", "scatter_add", "add_triplets")] + [(fp, "sum_rows")]:
            self._patch(module, name, self._wrap(getattr(module, name)))
        kernel = model.form_kernel
        kernel.function  # (loads the module)
        # FormKernel.__call__ calls the compiled function it keeps (a benchmark may look inside)
        self._patch(kernel, "_function", self._wrap(kernel._function))
        self._patch(kernel, "_assemble_function", self._wrap(kernel._assemble_function))
        init = fs.FiberStep.__init__
        clock = self

        def timed_init(step, *args, **kwargs):
            init(step, *args, **kwargs)
            step.function = clock._wrap(step.function)
        self._patch(fs.FiberStep, "__init__", timed_init)
        # the fiber-only step as one compiled call (skfiber.fiber_step.compiled_step)
        module = fs.step_module(kernel.function.py_func.__module__)
        self._patch(module, "step", self._wrap(module.step))

    def _wrap(self, f):
        if id(f) in self.wrapped:  # (FiberStep is made every step)
            return self.wrapped[id(f)]

        def timed(*args, **kwargs):
            t0 = time.process_time_ns()
            try:
                return f(*args, **kwargs)
            finally:
                self.ns += time.process_time_ns() - t0
        if hasattr(f, "py_func"):  # (the step evaluation is generated from the form kernel's module name)
            timed.py_func = f.py_func
        self.wrapped[id(f)] = timed
        return timed

    def _patch(self, owner, name, value):
        self.patched.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def restore(self):
        for owner, name, value in reversed(self.patched):
            setattr(owner, name, value)


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=3,
                        help="alternations of full and modified Newton (default 3)")
    parser.add_argument("--split", action="store_true", help="also split the time into kernels and the rest")
    parser.add_argument("--quick", action="store_true", help="a fifth of the simulated time")
    parser.add_argument("--python-step", action="store_true",
                        help="the Python step: Newton's iteration in Python around the compiled evaluations "
                             "(NewtonOptions(compiled_step=False)) instead of the step as one compiled call")
    args = parser.parse_args(argv)
    full, reuse = ((dataclasses.replace(FULL, compiled_step=False), dataclasses.replace(REUSE, compiled_step=False))
                   if args.python_step else (FULL, REUSE))
    print(f"each step {'through Python' if args.python_step else 'as one compiled call'}")
    summary = {}
    for name, (model, kw) in cases(args.quick).items():
        for options in (full, reuse):  # warm-up: compile the kernels
            sf.simulate(model, progress=False, newton_options=options, on_interrupt="raise",
                        **{**kw, "t_end": 5 * kw["dt"]})
        default = decide_compiled_step(model, sf.NewtonOptions(), n_steps=round(kw["t_end"] / kw["dt"]))
        print(f"{name}: a default run (NewtonOptions()) now takes "
              f"{'the compiled step' if default.compiled_step else 'the Python step'}")
        best, results = {"full": np.inf, "reuse": np.inf}, {}
        for _ in range(args.rounds):
            for label, options in (("full", full), ("reuse", reuse)):
                cpu, r = run(model, kw, options)
                best[label] = min(best[label], cpu)
                results[label] = r
        steps = len(results["full"].newton_iterations)
        dev = np.abs(results["full"].displacements - results["reuse"].displacements).max()
        print(f"{name}: {model.n_dofs} DOFs, {kw['method']}, dt = {kw['dt']:g} s, {steps} steps; "
              f"largest difference full/modified {dev:.1e} m")
        for label in ("full", "reuse"):
            c = results[label].step_counts
            us = 1e6 * best[label] / steps
            summary[f"{name}_{label}_us"] = us
            line = (f"  {label:>5}: {us:6.0f} us/step (min of {args.rounds}, CPU)  Newton {c.newton_iterations / steps:.2f}"
                    f"/step  tangents {c.tangent_builds / steps:.2f}/step  factorizations {c.factorizations / steps:.2f}/step")
            if args.split:
                clock = KernelClock(model)
                try:
                    cpu, _ = run(model, kw, full if label == "full" else reuse)
                finally:
                    clock.restore()
                kernel = 1e6 * clock.ns / 1e9 / steps
                rest = 1e6 * cpu / steps - kernel
                summary[f"{name}_{label}_nonkernel_us"] = rest
                line += f"  kernels {kernel:.0f} us, rest {rest:.0f} us (timed run: {1e6 * cpu / steps:.0f} us/step)"
            print(line, flush=True)
        summary[f"{name}_saving"] = 1.0 - best["reuse"] / best["full"]
    print("summary: " + " ".join(f"{k}={v:.2f}" if k.endswith("saving") else f"{k}={v:.0f}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    run_script(main)
