"""Every bad input is a clear error: of the documented type, naming the parameter, raised in skfiber's own code.

One table of bad API inputs and one of bad command lines; none may be accepted silently.
"""
from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest

import skfiber as sf
from skfiber import cli
from skfiber import io as sio
from skfiber.contact import CylinderContact, FiberContact, PenaltyLaw
from skfiber.materials import StressResponse
from skfiber.postprocess import fiber_fields
from skfiber.rigid import simulate_rigid
from skfiber.run import checkpoint_path, run_simulation

from conftest import hanging_rod

PACKAGE = Path(sf.__file__).resolve().parent
DEMOS = Path(cli.__file__).resolve().parent.parent / "demos"
LAW = PenaltyLaw(stiffness=1e3, gamma=2.0)


def fiber(**kw):
    kw.setdefault("n_elements", 4)
    return sf.Fiber.straight((0, 0, 0), (1, 0, 0), **kw)


def model(*, fixed=True, n=1, **kw):
    fibers = [sf.Fiber.straight((0, 0.3 * k, 0), (1, 0.3 * k, 0), n_elements=4, **kw) for k in range(n)]
    m = sf.Model(fibers)
    if fixed:
        for f in fibers:
            m.fix(f, "start"); m.fix(f, "end")
    m.add_gravity()
    return m


def simulate(m, **kw):
    kw.setdefault("t_end", 0.02)
    kw.setdefault("dt", 0.01)
    return sf.simulate(m, progress=False, **kw)


def prescribed(value):
    f = fiber()
    m = sf.Model([f]); m.fix(f, "start"); m.prescribe(f, "end", value)
    return m


def with_load(kind, value):
    m = model()
    (m.add_line_load if kind == "line" else m.add_body_force)(value)
    return m


class TupleLaw:
    def __call__(self, p):
        return (p.stretch * 0, p.stretch * 0, p.stretch * 0)


class ScalarLaw:
    def __call__(self, p):
        return StressResponse(30.0, 0.0, 0.0)


class ShortLaw:
    def __call__(self, p):
        return StressResponse(np.zeros(3), np.zeros(3), np.zeros(3))


def inside_cylinder():
    m = model()
    m.add_contact(CylinderContact((0.5, 0, 0), (0, 1, 0), 0.2, law=LAW))
    return m


def npz(tmp, name, data: bytes | None = None, **arrays):
    path = tmp / name
    if data is not None:
        path.write_bytes(data)
    else:
        np.savez(path, **arrays)
    return path


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A finished run with its checkpoint (resume cases) and damaged copies of the checkpoint."""
    out = tmp_path_factory.mktemp("written")
    run_simulation(model(), t_end=0.02, dt=0.01, out_dir=out, checkpoint_every=1, progress=False)
    good = checkpoint_path(out).read_bytes()
    tmp = out / "damaged"; tmp.mkdir()
    ckpt = sio.load_checkpoint(checkpoint_path(out))
    sio.save_checkpoint(tmp / "old.npz", ckpt)
    with np.load(tmp / "old.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["version"] = np.array(1)
    np.savez(tmp / "old.npz", **arrays)
    return out, good, tmp


def _resume(out, m, **kw):
    kw.setdefault("dt", 0.01)
    return run_simulation(m, t_end=0.04, out_dir=out, resume=True, progress=False, **kw)


# (id, function taking the `written` fixture's value, exception type, regex the message must match)
V, T, F = ValueError, TypeError, FileNotFoundError
API = [
    # Fiber
    *[(f"radius={v!r}", lambda w, v=v: fiber(radius=v), V, "radius") for v in (0.0, -0.01, np.nan, np.inf)],
    ("radius=str", lambda w: fiber(radius="thick"), T, "radius"),
    ("radius=None", lambda w: fiber(radius=None), T, "radius"),
    ("radius callable <0", lambda w: fiber(radius=lambda th: 0.05 - 0.1 * th), V, "radius"),
    ("radius callable shape", lambda w: fiber(radius=lambda th: np.ones(2)), V, "radius"),
    *[(f"muscle_fraction={v!r}", lambda w, v=v: fiber(muscle_fraction=v), V, "muscle_fraction")
      for v in (1.5, -0.1, np.nan)],
    ("muscle_fraction callable", lambda w: fiber(muscle_fraction=lambda th: th - 0.5), V, "muscle_fraction"),
    ("muscle_fraction=str", lambda w: fiber(muscle_fraction="all"), T, "muscle_fraction"),
    *[(f"density={v!r}", lambda w, v=v: fiber(density=v), V, "density") for v in (0.0, -900.0, np.nan, np.inf)],
    ("density=str", lambda w: fiber(density="900"), V, "density"),
    ("density=None", lambda w: fiber(density=None), V, "density"),
    *[(f"n_elements={v!r}", lambda w, v=v: fiber(n_elements=v), V, "n_elements") for v in (0, -3)],
    *[(f"n_elements={v!r}", lambda w, v=v: fiber(n_elements=v), T, "n_elements") for v in (2.5, "4", True, None)],
    *[(f"activation={v!r}", lambda w, v=v: fiber(activation=v), V, "activation") for v in (1.5, -0.1, np.nan, np.inf)],
    *[(f"activation={v!r}", lambda w, v=v: fiber(activation=v), T, "activation")
      for v in ("half", None, [0.1, 0.2], True)],
    ("activation(t) = 2", lambda w: fiber(activation=lambda t: 2.0), V, "activation"),
    ("activation(t) = str", lambda w: fiber(activation=lambda t: "x"), T, "activation"),
    ("activation(t) = None", lambda w: fiber(activation=lambda t: None), T, "activation"),
    ("activation(t) = array", lambda w: fiber(activation=lambda t: np.array([0.1, 0.2])), T, "activation"),
    ("activation(t) NaN later", lambda w: simulate(model(activation=lambda t: np.nan if t > 0 else 0.0)), V,
     "activation.*not finite"),
    ("activation(t) < 0 later", lambda w: simulate(model(activation=lambda t: -t)), V, r"activation.*outside \[0, 1\]"),
    ("activation(t) inf later", lambda w: simulate(model(activation=lambda t: np.inf if t > 0 else 0.0)), V,
     "activation"),
    *[(f"law={v!r}", lambda w, v=v: fiber(law=v), T, "law") for v in ("neo-Hooke", 3.0, None)],
    ("law returns tuple", lambda w: simulate(model(law=TupleLaw())), T, "stress law.*StressResponse"),
    ("law returns scalars", lambda w: simulate(model(law=ScalarLaw())), T, "stress law.*shape"),
    ("law returns wrong shape", lambda w: simulate(model(law=ShortLaw())), T, "stress law.*shape"),
    ("curve not callable", lambda w: sf.Fiber(curve=[0, 1], n_elements=3), T, "curve"),
    ("curve shape", lambda w: sf.Fiber(curve=lambda th: np.vstack([th, th]), n_elements=2), V, "curve"),
    ("curve NaN", lambda w: sf.Fiber(curve=lambda th: np.full((3, np.size(th)), np.nan), n_elements=2), V, "curve"),
    ("curve zero", lambda w: sf.Fiber(curve=lambda th: np.zeros((3, np.size(th))), n_elements=2), V, "length"),
    ("curve a tuple", lambda w: sf.Fiber(curve=lambda th: (th, 0, 0), n_elements=2), T,
     r"curve\(θ\) must take an array θ .* np.vstack"),
    ("curve of math", lambda w: sf.Fiber(curve=lambda th: np.array([math.cos(th), 0.0, 0.0]), n_elements=2), T,
     "numpy functions, not math's"),
    ("tangent 5 times", lambda w: sf.Fiber(curve=lambda th: np.vstack([th, 0 * th, 0 * th]), n_elements=2,
                                           tangent=lambda th: np.vstack([0 * th + 5, 0 * th, 0 * th])), V,
     r"tangent\(θ\) is not dX/dθ of curve\(θ\): at θ = .* gives \[5.0, 0.0, 0.0\], differences of curve give "
     r"\[1.0, 0.0, 0.0\]"),
    ("tangent a unit vector", lambda w: sf.Fiber(curve=lambda th: np.vstack([2 * th, 0 * th, 0 * th]), n_elements=2,
                                                 tangent=lambda th: np.vstack([0 * th + 1, 0 * th, 0 * th])), V,
     "not dX/dθ"),
    ("tangent shape", lambda w: sf.Fiber(curve=lambda th: np.vstack([th, 0 * th, 0 * th]), n_elements=2,
                                         tangent=lambda th: np.vstack([0 * th + 1, 0 * th])), V,
     r"tangent\(θ\) must return an array of shape \(3, n\)"),
    ("fiber 1e-13 m", lambda w: sf.Fiber.straight((0, 0, 0), (1e-13, 0, 0), n_elements=2), V, "long.*metres"),
    ("name not str", lambda w: fiber(name=3), T, "name"),
    ("start 2D", lambda w: sf.Fiber.straight((0, 0), (1, 0, 0), n_elements=2), V, "start"),
    ("start str", lambda w: sf.Fiber.straight("origin", (1, 0, 0), n_elements=2), V, "start"),
    ("end inf", lambda w: sf.Fiber.straight((0, 0, 0), (np.inf, 0, 0), n_elements=2), V, "end"),
    ("start = end", lambda w: sf.Fiber.straight((1, 2, 3), (1, 2, 3), n_elements=2), V, "zero-length"),
    ("polyline 1 point", lambda w: sf.Fiber.polyline([(0, 0, 0)], n_elements=3), V, "points"),
    ("polyline 2D", lambda w: sf.Fiber.polyline([(0, 0), (1, 1)], n_elements=3), V, "points"),
    ("polyline duplicate", lambda w: sf.Fiber.polyline([(0, 0, 0), (0, 0, 0), (1, 0, 0)], n_elements=3), V,
     "points.*coincide"),
    ("polyline NaN", lambda w: sf.Fiber.polyline([(0, 0, 0), (np.nan, 0, 0)], n_elements=3), V, "points"),
    # Model and boundary conditions
    ("Model(str)", lambda w: sf.Model(["not a fiber"]), T, "Fiber"),
    ("Model same fiber twice", lambda w: (lambda f: sf.Model([f, f]))(fiber()), V, "same Fiber"),
    ("Model(compiled=str)", lambda w: sf.Model([fiber()], compiled="yes"), T, "compiled"),
    ("Model(rigid=str)", lambda w: sf.Model([fiber()], rigid="bones"), T, "rigid"),
    ("Model(quadrature_points=0)", lambda w: sf.Model([fiber()], quadrature_points=0), V, "quadrature_points"),
    ("Model(quadrature_points=2.5)", lambda w: sf.Model([fiber()], quadrature_points=2.5), V, "quadrature_points"),
    ("Model no fibers", lambda w: sf.Model([]), V, "fiber"),
    ("fix other fiber", lambda w: sf.Model([fiber()]).fix(fiber(), "start"), V, "not part of the model"),
    ("fix index 3", lambda w: sf.Model([fiber()]).fix(3, "start"), V, "fiber index 3"),
    ("fix unnamed", lambda w: sf.Model([fiber()]).fix("biceps", "start"), V, "biceps.*no names"),
    ("fix unknown name", lambda w: sf.Model([fiber(name="a")]).fix("biceps", "start"), V, r"biceps.*\['a'\]"),
    ("fix fiber=2.5", lambda w: sf.Model([fiber()]).fix(2.5, "start"), T, "fiber"),
    ("fix end middle", lambda w: sf.Model([fiber()]).fix(0, "middle"), V, "end"),
    ("fix end 2", lambda w: sf.Model([fiber()]).fix(0, 2), V, "end"),
    ("fix twice", lambda w: model().fix(0, "start"), V, "already"),
    ("prescribe constant", lambda w: sf.Model([fiber()]).prescribe(0, "end", (0, 0, 1)), T, "displacement"),
    ("prescribe 2 numbers", lambda w: sf.Model([fiber()]).prescribe(0, "end", lambda t: (0.0, 1.0)), V,
     "displacement"),
    ("prescribe NaN later", lambda w: simulate(prescribed(lambda t: (np.nan if t > 0 else 0.0, 0.0, 0.0))), V,
     "prescribed displacement"),
    ("prescribe inf later", lambda w: simulate(prescribed(lambda t: (0.0, np.inf if t > 0 else 0.0, 0.0))), V,
     "prescribed displacement"),
    # loads
    *[(f"{kind} load shape", lambda w, kind=kind: with_load(kind, (0.0, 1.0)), V, f"{kind} load")
      for kind in ("line", "body")],
    *[(f"{kind} load NaN", lambda w, kind=kind: with_load(kind, (0.0, np.nan, 1.0)), V, f"{kind} load")
      for kind in ("line", "body")],
    *[(f"{kind} load str", lambda w, kind=kind: with_load(kind, "down"), V, f"{kind} load")
      for kind in ("line", "body")],
    *[(f"{kind} load callable shape", lambda w, kind=kind: with_load(kind, lambda th, t: np.zeros(2)), V,
       f"{kind} load.*shape") for kind in ("line", "body")],
    *[(f"{kind} load callable str", lambda w, kind=kind: with_load(kind, lambda th, t: "x"), T, f"{kind} load")
      for kind in ("line", "body")],
    *[(f"{kind} load NaN later",
       lambda w, kind=kind: simulate(with_load(kind, lambda th, t: np.full((3,) + th.shape, np.nan if t > 0 else 0.0))),
       V, f"{kind} load.*not finite") for kind in ("line", "body")],
    ("gravity 2D", lambda w: model().add_gravity((0, -9.81)), V, "g must have 3"),
    ("gravity NaN", lambda w: model().add_gravity((0, 0, np.nan)), V, "g must be finite"),
    ("gravity str", lambda w: model().add_gravity("down"), T, "g must be 3 numbers"),
    # mistakes a new user makes (a law, a θ-function or a state of the wrong kind, a shared name)
    ("law plain function", lambda w: fiber(law=lambda lam, ld, th, t: 1e4 * (lam - 1)), T, "law_from_function"),
    ("density=True", lambda w: fiber(density=True), V, "density"),
    ("muscle_fraction with if", lambda w: fiber(muscle_fraction=lambda th: 1.0 if 0.1 < th < 0.9 else 0.0), V,
     "muscle_fraction.*vectorized"),
    ("radius with math.sin", lambda w: fiber(radius=lambda th: 0.01 + 0.001 * math.sin(th)), V, "radius.*vectorized"),
    ("PenaltyLaw(stiffness=True)", lambda w: PenaltyLaw(stiffness=True, gamma=2.0), V, "stiffness"),
    ("fiber name shared", lambda w: sf.Model([fiber(name="a"), sf.Fiber.straight((0, 1, 0), (1, 1, 0), n_elements=2,
                                                                                  name="a")]).fix("a", "start"), V,
     "'a' is shared by fibers"),
    ("check_tangent directions=0", lambda w: sf.check_tangent(model(), dt=0.01, directions=0), V, "directions"),
    ("check_tangent parts=str", lambda w: sf.check_tangent(model(), dt=0.01, parts="internal_force"), T,
     r"parts=\['internal_force'\]"),
    ("solve_static(None)", lambda w: sf.solve_static(None), T, "solve_static needs a skfiber.Model"),
    ("simulate state=0", lambda w: simulate(model(), state=0), T, "state must be a skfiber.State"),
    ("solve_static state=0", lambda w: sf.solve_static(model(), state=0), T, "state must be a skfiber.State"),
    ("attachment_forces(result)", lambda w: (lambda m: m.attachment_forces(simulate(m)))(model()), T,
     "result.final_state"),
    ("fiber_fields(result)", lambda w: (lambda m: fiber_fields(m, simulate(m), 0))(model()), T, "result.final_state"),
    *[(f"{name}=str", lambda w, name=name: simulate(model(), method="bdf2", **{"rtol": 1e-3, name: "a"}), T, name)
      for name in ("rtol", "atol", "h_min", "h_max")],
    ("callback=5", lambda w: simulate(model(), callback=5), T, "callback"),
    ("add_term(Term, name=)", lambda w: model().add_term(sf.Term(lambda v, w: 0.0 * v[0] * w.J, name="a"), name="b"),
     V, "Term"),
    ("check_tangent dt=-1", lambda w: sf.check_tangent(model(), dt=-1.0), V, "dt must be"),
    ("check_tangent dt=nan", lambda w: sf.check_tangent(model(), dt=np.nan), V, "dt must be"),
    ("Model(a fiber)", lambda w: sf.Model(fiber()), T, r"\[fiber\]"),
    ("run_simulation(out_dir=a file)", lambda w: run_simulation(model(), t_end=0.02, dt=0.01,
                                                                out_dir=w[0] / "result_checkpoint.npz",
                                                                progress=False), V, "is a file; give a folder"),
    # contacts
    ("add_contact(str)", lambda w: model().add_contact("contact"), T, "contact"),
    ("FiberContact one fiber", lambda w: model().add_contact(FiberContact(LAW)), V, "fiber–fiber contact.*2"),
    ("contact name taken", lambda w: (lambda m: [m.add_contact(FiberContact(LAW)) for _ in range(2)])(model(n=2)), V,
     "name"),
    *[(f"PenaltyLaw(stiffness={v!r})", lambda w, v=v: PenaltyLaw(stiffness=v, gamma=2.0), V, "stiffness")
      for v in (0.0, -1.0, np.nan, "stiff")],
    *[(f"PenaltyLaw(gamma={v!r})", lambda w, v=v: PenaltyLaw(stiffness=1e3, gamma=v), V, "gamma")
      for v in (0.0, np.inf, None)],
    *[(f"CylinderContact(radius={v!r})", lambda w, v=v: CylinderContact((0, 0, 0), (0, 1, 0), v, law=LAW), V,
       "radius") for v in (0.0, -1.0, None, np.nan)],
    ("CylinderContact(length=-1)", lambda w: CylinderContact((0, 0, 0), (0, 1, 0), 0.1, law=LAW, length=-1.0), V,
     "length"),
    *[(f"CylinderContact(quadrature_points={v!r})",
       lambda w, v=v: CylinderContact((0, 0, 0), (0, 1, 0), 0.1, law=LAW, quadrature_points=v), V, "quadrature_points")
      for v in (0, 100, 2.5)],
    ("CylinderContact(safeguard)", lambda w: CylinderContact((0, 0, 0), (0, 1, 0), 0.1, law=LAW, safeguard="x"), V,
     "safeguard"),
    ("CylinderContact(name='')", lambda w: CylinderContact((0, 0, 0), (0, 1, 0), 0.1, law=LAW, name=""), V, "name"),
    ("CylinderContact(law=str)", lambda w: CylinderContact((0, 0, 0), (0, 1, 0), 0.1, law="stiff"), T, "law"),
    ("CylinderContact no axis", lambda w: CylinderContact(radius=0.1, law=LAW), V, "axis"),
    ("CylinderContact zero axis", lambda w: CylinderContact((0, 0, 0), (0, 0, 0), 0.1, law=LAW), V, "axis"),
    ("CylinderContact pose not callable", lambda w: CylinderContact(radius=0.1, law=LAW, pose=(0, 0, 0)), T, "pose"),
    ("CylinderContact unknown fiber", lambda w: model().add_contact(
        CylinderContact((0, 0, 0), (0, 1, 0), 0.1, law=LAW, fibers=["biceps"])), V, "biceps"),
    ("FiberContact(law=str)", lambda w: FiberContact("stiff"), T, "law"),
    *[(f"FiberContact(quadrature_points={v!r})", lambda w, v=v: FiberContact(LAW, quadrature_points=v), V,
       "quadrature_points") for v in (0, 21, 2.5)],
    ("FiberContact(name='')", lambda w: FiberContact(LAW, name=""), V, "name"),
    ("FiberContact(fibers=[0])", lambda w: FiberContact(LAW, fibers=[0]), V, "2"),
    ("fiber inside cylinder: static", lambda w: sf.solve_static(inside_cylinder()), V, "start state is inadmissible"),
    ("fiber inside cylinder: dynamic", lambda w: simulate(inside_cylinder()), V, "start state is inadmissible"),
    # NewtonOptions
    *[(f"NewtonOptions(rtol={v!r})", lambda w, v=v: sf.NewtonOptions(rtol=v), V, "rtol") for v in (0.0, -1.0)],
    *[(f"NewtonOptions(rtol={v!r})", lambda w, v=v: sf.NewtonOptions(rtol=v), T, "rtol") for v in (np.nan, "tight")],
    ("NewtonOptions(atol=-1)", lambda w: sf.NewtonOptions(atol=-1.0), V, "atol"),
    ("NewtonOptions(max_iterations=0)", lambda w: sf.NewtonOptions(max_iterations=0), V, "max_iterations"),
    *[(f"NewtonOptions(max_iterations={v!r})", lambda w, v=v: sf.NewtonOptions(max_iterations=v), T, "max_iterations")
      for v in (2.5, "3", None)],
    *[(f"NewtonOptions(safeguard={v!r})", lambda w, v=v: sf.NewtonOptions(safeguard=v), V, "safeguard")
      for v in (0.0, 1.0)],
    ("NewtonOptions(min_step=0)", lambda w: sf.NewtonOptions(min_step=0.0), V, "min_step"),
    ("NewtonOptions(line_search=-1)", lambda w: sf.NewtonOptions(line_search=-1), V, "line_search"),
    ("NewtonOptions(line_search=1.5)", lambda w: sf.NewtonOptions(line_search=1.5), T, "line_search"),
    ("NewtonOptions(line_search_decrease=1)", lambda w: sf.NewtonOptions(line_search_decrease=1.0), V,
     "line_search_decrease"),
    *[(f"NewtonOptions(stagnation_window={v!r})", lambda w, v=v: sf.NewtonOptions(stagnation_window=v), V,
       "stagnation_window") for v in (-1, 2.5)],
    # simulate
    *[(f"simulate(dt={v!r})", lambda w, v=v: simulate(model(), dt=v), V, "dt") for v in (0.0, -0.1, np.nan, 1e-300,
                                                                                          "0.01")],
    *[(f"simulate(t_end={v!r})", lambda w, v=v: simulate(model(), t_end=v), V, "t_end") for v in (-1.0, np.nan, 0.0,
                                                                                                   None)],
    *[(f"simulate(store_every={v!r})", lambda w, v=v: simulate(model(), store_every=v), V, "store_every")
      for v in (0, 1.5, True)],
    *[(f"simulate(max_halvings={v!r})", lambda w, v=v: simulate(model(), max_halvings=v), V, "max_halvings")
      for v in (-1, 2.5, 100)],
    ("simulate(state shape)", lambda w: simulate(model(), state=sf.State(0.0, np.zeros(3), np.zeros(3))), V, "state"),
    ("simulate(newton_options=dict)", lambda w: simulate(model(), newton_options={"rtol": 1e-6}), T, "newton_options"),
    # solve_static
    *[(f"solve_static(load_steps={v!r})", lambda w, v=v: sf.solve_static(model(), load_steps=v), V, "load_steps")
      for v in (0, 2.5, True)],
    *[(f"solve_static(max_bisections={v!r})", lambda w, v=v: sf.solve_static(model(), max_bisections=v), V,
       "max_bisections") for v in (-3, 2.5)],
    ("solve_static(t=nan)", lambda w: sf.solve_static(model(), t=np.nan), V, "t must be"),
    ("solve_static(state shape)", lambda w: sf.solve_static(model(), state=sf.State(0.0, np.zeros(3), np.zeros(3))), V,
     "state"),
    ("solve_static(relaxation=str)", lambda w: sf.solve_static(model(), relaxation="yes"), T, "relaxation"),
    ("solve_static(newton_options=dict)", lambda w: sf.solve_static(model(), newton_options={}), T, "newton_options"),
    ("solve_static without boundary conditions", lambda w: sf.solve_static(model(fixed=False)), V,
     "no boundary condition.*fix"),
    # run_simulation and checkpoints
    *[(f"run_simulation(output_every={v!r})", lambda w, v=v: run_simulation(model(), t_end=0.02, dt=0.01,
                                                                             output_every=v, progress=False), V,
       "output_every") for v in (0, 1.5)],
    *[(f"run_simulation(checkpoint_every={v!r})", lambda w, v=v: run_simulation(model(), t_end=0.02, dt=0.01,
                                                                                 checkpoint_every=v, progress=False),
       V, "checkpoint_every") for v in (0, -1)],
    *[(f"run_simulation(dt={v!r})", lambda w, v=v: run_simulation(model(), t_end=0.02, dt=v, progress=False), V, "dt")
      for v in (0.0, np.nan)],
    *[(f"run_simulation(t_end={v!r})", lambda w, v=v: run_simulation(model(), t_end=v, dt=0.01, progress=False), V,
       "t_end") for v in (-1.0, np.inf)],
    ("run_simulation(points_per_element=0)", lambda w: run_simulation(model(), t_end=0.02, dt=0.01, out_dir=w[2] / "p",
                                                                       points_per_element=0, progress=False), V,
     "points_per_element"),
    ("run_simulation(name='a b')", lambda w: run_simulation(model(), t_end=0.02, dt=0.01, out_dir=w[2] / "n",
                                                             name="a b", progress=False), V, "name"),
    ("resume without out_dir", lambda w: run_simulation(model(), t_end=0.02, dt=0.01, resume=True, progress=False), V,
     "resume.*out_dir"),
    ("resume without checkpoint", lambda w: _resume(w[2] / "empty", model()), F, "no checkpoint"),
    ("resume with another law", lambda w: _resume(w[0], model(law=sf.paper_law(sigma0=31.0))), V, "another model"),
    ("resume with another activation", lambda w: _resume(w[0], model(activation=0.2)), V, "another model"),
    ("resume with other loads", lambda w: _resume(w[0], (lambda m: (m.add_line_load((0, 0, -1.0)), m)[1])(model())), V,
     "another model"),
    ("resume with another density", lambda w: _resume(w[0], model(density=1000.0)), V, "another model"),
    ("resume with another dt", lambda w: _resume(w[0], model(), dt=0.005), V, "dt"),
    ("checkpoint garbage", lambda w: sio.load_checkpoint(npz(w[2], "garbage.npz", b"garbage")), V,
     "garbage.npz is not a skfiber checkpoint"),
    ("checkpoint foreign npz", lambda w: sio.load_checkpoint(npz(w[2], "foreign.npz", x=np.zeros(3))), V,
     "foreign.npz is not a skfiber checkpoint"),
    ("checkpoint truncated", lambda w: sio.load_checkpoint(npz(w[2], "cut.npz", w[1][: len(w[1]) // 2])), V,
     "cut.npz is truncated"),
    ("checkpoint cut after its header", lambda w: sio.load_checkpoint(npz(w[2], "cut2.npz", w[1][:100])), V,
     "cut2.npz is truncated"),
    ("checkpoint empty", lambda w: sio.load_checkpoint(npz(w[2], "empty.npz", b"")), V, "empty.npz is not"),
    ("checkpoint old format", lambda w: sio.load_checkpoint(w[2] / "old.npz"), V, "old.npz has checkpoint format 1"),
    ("checkpoint missing", lambda w: sio.load_checkpoint(w[2] / "none.npz"), F, "none.npz"),
    # output and post-processing
    *[(f"fiber_fields(theta={v!r})", lambda w, v=v: (lambda m: fiber_fields(m, m.initial_state(), 0, theta=v))(model()),
       V, "theta") for v in ([np.nan], [1.5], [-0.1])],
    ("fiber_fields(points_per_element=0)", lambda w: (lambda m: fiber_fields(m, m.initial_state(), 0,
                                                                              points_per_element=0))(model()), V,
     "points_per_element"),
    ("fiber_fields(state=None)", lambda w: (lambda m: fiber_fields(m, None, 0))(model()), T, "state must be"),
    ("fiber_fields(fiber=5)", lambda w: (lambda m: fiber_fields(m, m.initial_state(), 5))(model()), V, "fiber index 5"),
    ("evaluate(parts)", lambda w: (lambda m, z: m.evaluate(z, z, z, 0.0, c_v=0, c_a=0, parts=["springs"]))(
        model(), np.zeros(model().n_dofs)), V, "parts"),
    ("VTKSeries(name='a/b')", lambda w: sio.VTKSeries(w[2] / "v", model(), name="a/b"), V, "name"),
    ("VTKSeries(points_per_element=0)", lambda w: sio.VTKSeries(w[2] / "v", model(), points_per_element=0), V,
     "points_per_element"),
    ("VTKSeries(directory=file)", lambda w: sio.VTKSeries(checkpoint_path(w[0]), model()), NotADirectoryError,
     "not a folder"),
    ("cylinder_mesh(resolution=2)", lambda w: sio.cylinder_mesh([((0, 0, 0), (0, 1, 0), 0.1)], resolution=2), V,
     "resolution"),
    ("cylinder_mesh([])", lambda w: sio.cylinder_mesh([]), V, "cylinders"),
    # laws and terms
    *[(f"paper_law({k}={v!r})", lambda w, k=k, v=v: sf.paper_law(**{k: v}), V, k)
      for k, v in (("sigma0", np.nan), ("mu_muscle", -1.0), ("mu_tendon", np.inf), ("eta_muscle", -1.0),
                   ("s_max", -1.0), ("lam_opt", 0.0), ("delta_w", 0.0), ("nu", -1.0), ("sigma0", "30"))],
    ("prestress(nan)", lambda w: sf.prestress(np.nan), V, "sigma0"),
    ("passive(mu_muscle=nan)", lambda w: sf.passive_kelvin_voigt(mu_muscle=np.nan, mu_tendon=1.0, eta_muscle=0.0,
                                                                 eta_tendon=0.0), V, "mu_muscle"),
    ("law_from_function(3)", lambda w: sf.law_from_function(3.0), T, "callable"),
    ("law_from_function(numpy)", lambda w: sf.law_from_function(lambda lam, lamdot, theta, t: np.exp(lam)), T,
     "sympy"),
    ("SymbolicLaw unknown symbol", lambda w: sf.SymbolicLaw(__import__("sympy").Symbol("x") * 2), V, "unknown symbols"),
    ("law_from_function(matrix)", lambda w: sf.law_from_function(
        lambda lam, lamdot, theta, t: __import__("sympy").Matrix([lam, lam])), T, "not one scalar expression"),
    ("law_from_function(string)", lambda w: sf.law_from_function(lambda lam, lamdot, theta, t: "lam"), T,
     "returned the string 'lam'"),
    ("SymbolicLaw twin symbol", lambda w: sf.SymbolicLaw(__import__("sympy").Symbol("lam") * 2), V,
     "share a name with skfiber's symbols but are other symbols"),
    ("Term(residual=3)", lambda w: sf.Term(residual=3.0), T, "residual"),
    ("replace_term unknown", lambda w: model().replace_term("springs", lambda v, w_: 0 * v), V, "springs"),
]


def _raised_in_skfiber(err: BaseException) -> str:
    """The file of the frame that raised ``err``, checked to be skfiber's (the package or its demos)."""
    frame = traceback.extract_tb(err.__traceback__)[-1]
    where = Path(frame.filename).resolve()
    assert PACKAGE in where.parents or DEMOS in where.parents, (
        f"raised in {frame.filename}:{frame.lineno}, not in skfiber: {type(err).__name__}: {err}")
    return str(where)


def test_the_table_is_large():
    ids = [c[0] for c in API] + [c[0] for c in CLI]
    assert len(ids) >= 150 and len(ids) == len(set(ids))  # unique: no case shadows another


@pytest.mark.filterwarnings("ignore:the term .internal_force. cannot be compiled")
@pytest.mark.parametrize("case", API, ids=[c[0] for c in API])
def test_bad_api_input(case, written):
    _, call, kind, pattern = case
    with pytest.raises(kind, match=pattern) as info:
        call(written)
    _raised_in_skfiber(info.value)


# --------------------------------------------------------------------------- the command line
def _truncate(path: Path, size: int) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:size])


# (id, arguments (with {out}: a folder holding a level-1 run, {tmp}: an empty folder), regex naming the parameter)
CLI = [
    ("t-end -1", ["run", "hanging-bundle", "--t-end", "-1"], "--t-end"),
    ("t-end nan", ["run", "hanging-bundle", "--t-end", "nan"], "--t-end"),
    ("t-end 0", ["run", "hanging-bundle", "--t-end", "0"], "--t-end"),
    ("t-end inf", ["run", "hanging-bundle", "--t-end", "inf"], "--t-end"),
    ("t-end text", ["run", "hanging-bundle", "--t-end", "soon"], "--t-end"),
    ("checkpoint-every 0", ["run", "hanging-bundle", "--checkpoint-every", "0"], "--checkpoint-every"),
    ("checkpoint-every -2", ["run", "hanging-bundle", "--checkpoint-every", "-2"], "--checkpoint-every"),
    ("checkpoint-every 1.5", ["run", "hanging-bundle", "--checkpoint-every", "1.5"], "--checkpoint-every"),
    ("points-per-element 0", ["run", "hanging-bundle", "--points-per-element", "0"], "--points-per-element"),
    ("level 0", ["run", "hanging-bundle", "--level", "0"], "--level"),
    ("level text", ["run", "hanging-bundle", "--level", "two"], "--level"),
    ("unknown option", ["run", "hanging-bundle", "--no-such-option"], "--no-such-option"),
    ("unknown demo", ["run", "no-such-demo"], "no-such-demo"),
    ("resume without out", ["run", "hanging-bundle", "--resume"], "--resume"),
    ("--resume without checkpoint", ["run", "hanging-bundle", "--resume", "--out", "{tmp}"], "checkpoint"),
    ("--resume at another level", ["run", "hanging-bundle", "--level", "2", "--resume", "--out", "{out}"],
     "written with level=1; this run has level=2"),
    ("resume truncated checkpoint", ["run", "hanging-bundle", "--resume", "--out", "{cut}"], "truncated"),
    ("resume foreign checkpoint", ["run", "hanging-bundle", "--resume", "--out", "{foreign}"], "not a skfiber"),
    ("out under a file", ["run", "hanging-bundle", "--out", "{file}/sub"], "--out"),
    ("out is a file", ["run", "hanging-bundle", "--out", "{file}"], "--out"),
    ("out uncreatable", ["run", "hanging-bundle", "--out", "/proc/skfiber-nope/x"], "--out"),
    ("view missing file", ["view", "{tmp}/missing.pvd"], "no such file"),
    ("view not pvd", ["view", "{file}"], ".pvd"),
    ("view movie suffix", ["view", "{out}/hanging_bundle.pvd", "--movie", "a.avi"], "--movie"),
    ("view screenshot suffix", ["view", "{out}/hanging_bundle.pvd", "--screenshot", "a.bmp"], "--screenshot"),
    ("view screenshot folder", ["view", "{out}/hanging_bundle.pvd", "--screenshot", "{png_folder}"],
     "--screenshot .* is a folder"),
    ("view window size 0", ["view", "{out}/hanging_bundle.pvd", "--screenshot", "{tmp}/a.png", "--window-size", "0",
                            "0"], "--window-size"),
    ("out of a demo without --out", ["run", "custom-law", "--out", "{tmp}/never"], "takes no --out"),
    ("calibrate workers 0", ["run", "calibrate", "--", "--workers", "0"], "--workers"),
    ("sensitivity n 3", ["run", "sensitivity", "--n", "3"], "--n"),
    ("sensitivity seed -1", ["run", "sensitivity", "--seed", "-1"], "--seed"),
    ("hill-vs-fiber output uncreatable", ["run", "hill-vs-fiber", "--", "--output", "/proc/skfiber-nope/x"],
     "--output"),
    ("whiplash t-end nan", ["run", "whiplash", "--", "--t-end", "nan"], "--t-end"),
    ("whiplash out is a file", ["run", "whiplash", "--", "--out", "{file}"], "--out"),
    ("custom-law dt negative", ["run", "custom-law", "--", "--dt", "-0.01"], "--dt"),
    ("custom-law elements 0", ["run", "custom-law", "--", "--elements", "0"], "--elements"),
    ("custom-term elements -2", ["run", "custom-term", "--", "--elements", "-2"], "--elements"),
    ("upper-limb stretch gradient -1", ["run", "upper-limb", "--", "--stretch-gradient", "-1"], "--stretch-gradient"),
    ("elbow-bundle elements 0", ["run", "elbow-bundle", "--", "--elements", "0"], "--elements"),
    ("study seed -1", ["study", "upper-limb", "--seed", "-1", "--out", "{tmp}/study"], "--seed"),
    ("study n 0", ["study", "upper-limb", "--n", "0", "--out", "{tmp}/study"], "--n"),
    ("study grid n 1", ["study", "upper-limb", "--design", "grid", "--n", "1", "--out", "{tmp}/study"], "n must"),
    ("verify unknown study", ["verify", "--only", "nonsense"], "nonsense"),
    ("unknown command", ["bogus"], "bogus"),
    ("out empty", ["run", "hanging-bundle", "--out", ""], "--out is empty"),
    ("level beyond the finest", ["run", "hanging-bundle", "--level", "40"], "--level must be 1 … 8"),
    ("whiplash level beyond the finest", ["run", "whiplash", "--level", "40"], "--level must be 1 … 8"),
    ("view window too large", ["view", "{out}/hanging_bundle.pvd", "--screenshot", "{tmp}/a.png", "--window-size",
                               "100000", "100"], "--window-size: must be an integer from 1 to 4096"),
    ("view time nan", ["view", "{out}/hanging_bundle.pvd", "--info", "--time", "nan"], "--time: must be a finite"),
    ("view info and time", ["view", "{out}/hanging_bundle.pvd", "--info", "--time", "0.1", "--screenshot",
                            "{tmp}/a.png"], "--info prints the time points .* leave out --time, --screenshot"),
    ("view screenshot in a file", ["view", "{out}/hanging_bundle.pvd", "--screenshot", "{file}/s.png"],
     "--screenshot .*s.png: its folder .* is a file; pick another place"),
    ("view fps without movie", ["view", "{out}/hanging_bundle.pvd", "--screenshot", "{tmp}/a.png", "--fps", "5"],
     "--fps belongs to --movie"),
    ("view every without movie", ["view", "{out}/hanging_bundle.pvd", "--screenshot", "{tmp}/a.png", "--every",
                                  "2"], "--every belongs to --movie"),
    ("view time of one data set", ["view", "{out}/hanging_bundle_fibers_000000.vtu", "--screenshot", "{tmp}/a.png",
                                   "--time", "0.1"], "--time picks a time point of a .pvd series; "
                                                     "hanging_bundle_fibers_000000.vtu is one data set"),
    ("view time of a movie", ["view", "{out}/hanging_bundle.pvd", "--movie", "{tmp}/m.gif", "--time", "0.1"],
     "--time picks the time point of a screenshot or a window; a movie shows them all"),
    ("study serial and workers", ["study", "quadratic", "--serial", "--workers", "2", "--out", "{tmp}/study"],
     "--serial .* leave out --workers"),
    ("study serial and scheduler", ["study", "quadratic", "--serial", "--scheduler", "tcp://127.0.0.1:1", "--out",
                                    "{tmp}/study"], "--serial .* leave out --scheduler"),
    ("study summary with run options", ["study", "{tmp}", "--summary", "--n", "99", "--out", "{tmp}/zz"],
     "--summary .* leave out --n, --out"),
    ("sensitivity small and target", ["run", "sensitivity", "--", "--small", "--target", "upper-limb"],
     "--small is the Ishigami check .* leave out --target"),
    ("upper-limb no checkpoints but an interval", ["run", "upper-limb", "--", "--no-checkpoints",
                                                   "--checkpoint-every", "5"], "--no-checkpoints writes none"),
    ("upper-limb vtk uncreatable", ["run", "upper-limb", "--", "--vtk", "/proc/skfiber-nope/x", "--output",
                                    "{tmp}/ul"], "--vtk /proc/skfiber-nope/x: cannot create"),
    ("whiplash out empty", ["run", "whiplash", "--", "--out", ""], "--out: is empty"),
    ("upper-limb output empty", ["run", "upper-limb", "--", "--output", ""], "--output: is empty"),
    ("upper-limb vtk-every without vtk", ["run", "upper-limb", "--", "--vtk-every", "2"],
     "--vtk-every 2 thins the VTK series, which only --vtk DIR or --out DIR writes"),
    ("study summary with seed 0", ["study", "{tmp}", "--summary", "--seed", "0"], "leave out --seed"),
    ("sensitivity small and workers", ["run", "sensitivity", "--", "--small", "--workers", "2"],
     "--workers starts local dask workers"),
]


@pytest.fixture(scope="module")
def cli_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_bad")
    out = root / "out"
    assert cli.main(["run", "hanging-bundle", "--out", str(out), "--t-end", "0.02", "--no-progress"]) == 0
    folders = {"out": out, "tmp": root / "empty", "file": root / "a_file.txt"}
    folders["tmp"].mkdir()
    folders["png_folder"] = root / "shot.png"
    folders["png_folder"].mkdir()
    folders["file"].write_text("not a folder")
    for key in ("cut", "foreign"):
        folders[key] = root / key
        folders[key].mkdir()
    ckpt = (out / "hanging_bundle_checkpoint.npz").read_bytes()
    (folders["cut"] / "hanging_bundle_checkpoint.npz").write_bytes(ckpt[: len(ckpt) // 3])
    np.savez(folders["foreign"] / "hanging_bundle_checkpoint.npz", x=np.zeros(2))
    return folders


@pytest.mark.parametrize("case", CLI, ids=[c[0] for c in CLI])
def test_bad_command_line(case, cli_folders, capsys):
    _, args, pattern = case
    args = [a.format(**cli_folders) for a in args]
    try:
        code = cli.main(args)
    except SystemExit as exc:  # argparse of the skfiber command itself
        code = exc.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1 and "error:" in lines[0], err
    assert re.search(pattern, lines[0]), lines[0]


def test_debug_shows_the_traceback(cli_folders, capsys):
    code = cli.main(["--debug", "run", "hanging-bundle", "--resume", "--out", str(cli_folders["cut"])])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" in err and "truncated" in err.splitlines()[-1]


def test_bad_input_makes_no_folder(cli_folders, capsys):
    """A study or a demo refused before it runs leaves no output folder behind."""
    tmp = cli_folders["tmp"]
    assert cli.main(["study", "upper-limb", "--design", "grid", "--n", "1", "--out", str(tmp / "s")]) == 2
    assert cli.main(["run", "custom-law", "--out", str(tmp / "c")]) == 2
    capsys.readouterr()
    assert not (tmp / "s").exists() and not (tmp / "c").exists()


@pytest.mark.parametrize("argv", [["run", "hanging-bundle", "--out", "{new}", "--checkpoint-every", "0"],
                                  ["run", "hanging-bundle", "--out", "{new}", "--resume"],
                                  ["run", "upper-limb", "--out", "{new}", "--output", "{tmp}/other"],
                                  ["run", "elbow-bundle", "--out", "{new}", "--", "--elements", "0"],
                                  ["run", "elbow-bundle", "--out", "{new}", "--", "--angles", "200"],
                                  ["run", "upper-limb", "--", "--vtk", "{new}", "--output", "/proc/skfiber-nope/x"],
                                  ["run", "upper-limb", "--", "--vtk", "{new}/a/b", "--output", "{file}/x"],
                                  ["run", "elbow-bundle", "--out", "{new}", "--", "--fibers", "1"],
                                  ["run", "elbow-bundle", "--out", "{new}", "--", "--angles", "30", "30"],
                                  ["run", "whiplash", "--out", "{new}", "--", "--t-end", "nan"]])
def test_skfiber_run_leaves_no_out_folder_when_the_demo_refuses_its_options(argv, tmp_path, capsys):
    """'skfiber run DEMO --out DIR' with an option the demo refuses: one error line, and no DIR (the demo makes
    it once its options are checked, as when it runs as a script)."""
    new = tmp_path / "new"
    (tmp_path / "a_file").write_text("not a folder")
    code = cli.main([a.format(new=new, tmp=tmp_path, file=tmp_path / "a_file") for a in argv])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and "error:" in err[0]
    assert not new.exists() and not (tmp_path / "other").exists()


@pytest.mark.parametrize("argv", [["list"], ["verify", "--list"]])
def test_a_closed_pipe_ends_the_command_quietly(argv):
    """'skfiber list | head -1': the reader of the output has gone; the command exits with the shell's code of a
    SIGPIPE (141) and prints nothing (a closed pipe is no bad input)."""
    exe = shutil.which("skfiber") or str(Path(sys.executable).with_name("skfiber"))
    proc = subprocess.Popen([exe, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # (before the command writes: it starts in a fraction of a second)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == cli.EXIT_BROKEN_PIPE == 141 and err == ""


BROKEN_ELSEWHERE = """
from skfiber.cli import run_script

def main(argv):
    print("started", flush=True)
    raise BrokenPipeError(32, "Broken pipe")

run_script(main)
"""


@pytest.mark.parametrize("stdout", ["file", "pipe"])
def test_a_broken_pipe_elsewhere_is_a_failure(stdout, tmp_path):
    """A BrokenPipeError that is not stdout's (a socket, a pipe to another process) is a failure: one line,
    exit code 1, whether stdout is a file or a pipe that is still read."""
    script = tmp_path / "demo.py"
    script.write_text(BROKEN_ELSEWHERE)
    target = open(tmp_path / "out.txt", "w") if stdout == "file" else subprocess.PIPE
    try:
        proc = subprocess.run([sys.executable, str(script)], stdout=target, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        if stdout == "file":
            target.close()
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == cli.EXIT_FAILED and len(err) == 1
    assert err[0].startswith("demo.py: failed: BrokenPipeError")


def test_custom_term_small_keeps_an_explicit_element_count(monkeypatch, capsys):
    """custom_term --small --elements 4 runs 4 elements (--small sets what the command line leaves open)."""
    from skfiber.demos import custom_term

    seen = []

    def run(*, n_elements):
        seen.append(n_elements)
        raise KeyboardInterrupt  # (stops the demo here: only the element count is looked at)

    monkeypatch.setattr(custom_term, "run", run)
    for argv, elements in ((["--small", "--elements", "4"], 4), (["--small"], 8), ([], 16)):
        with pytest.raises(KeyboardInterrupt):
            custom_term.main(argv)
        assert seen[-1] == elements


def test_a_demo_error_under_skfiber_run_points_to_its_help(capsys):
    """Under 'skfiber run DEMO' a demo's options are shown by 'skfiber run DEMO --help'."""
    code = cli.main(["run", "custom-law", "--", "--elements", "0"])
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert code == 2 and len(err) == 1
    assert err[0].startswith("skfiber run custom-law: error:") and err[0].endswith("see skfiber run custom-law --help")


@pytest.mark.parametrize("argv", [["run", "custom-law", "--help"], ["run", "custom-law", "--small", "-h"],
                                  ["run", "custom-law", "--", "--help"], ["run", "custom-law", "--hel"],
                                  ["run", "--out", "unused", "custom-law", "--help"]])
def test_skfiber_run_demo_help_is_the_demos_help(argv, capsys):
    """'skfiber run DEMO --help' shows the demo's options (wherever the flag stands after the demo's name),
    and nothing after them; 'skfiber run --help' stays the command's own."""
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 0
    assert "usage: skfiber run custom-law" in out and "--elements" in out and "finished" not in err
    for own in (["run", "--help"], ["run", "--level", "2", "--help"]):  # no demo named
        with pytest.raises(SystemExit):
            cli.main(own)
        out = capsys.readouterr().out
        assert out.startswith("usage: skfiber run [-h] [--level N] [--out DIR] DEMO")


def test_asking_a_demo_for_its_help_does_nothing_else(tmp_path, capsys):
    """'skfiber run DEMO --out DIR --help' shows the help and makes no folder; an option the demo would
    refuse (--out for a demo that writes no files) does not stand in the way of its help."""
    assert cli.main(["run", "hanging-bundle", "--out", str(tmp_path / "new"), "--help"]) == 0
    assert "usage: skfiber run hanging-bundle" in capsys.readouterr().out and not (tmp_path / "new").exists()
    assert cli.main(["run", "custom-law", "--out", str(tmp_path / "x"), "-h"]) == 0
    assert "usage: skfiber run custom-law" in capsys.readouterr().out and not (tmp_path / "x").exists()


def test_a_demo_is_named_without_sys_argv(monkeypatch, capsys):
    """'skfiber run DEMO' names the demo in its errors whatever ``sys.argv`` holds (argparse's own default
    program name comes from it, or from ``__main__``)."""
    monkeypatch.setattr(sys, "argv", [])
    code = cli.main(["run", "custom-law", "--", "--elements", "0"])
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert code == 2 and err[0].startswith("skfiber run custom-law: error: argument --elements")


def test_a_plot_file_is_checked_before_the_run(cli_folders, capsys):
    """A --plot FILE.png that cannot be written stops the demo before it runs (its folder is a file)."""
    code = cli.main(["run", "custom-law", "--", "--plot", str(cli_folders["file"] / "sag.png")])
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert code == 2 and len(err) == 1 and "--plot" in err[0]
    assert f"sag.png: its folder {cli_folders['file']} is a file; pick another place" in err[0]


def test_a_plot_file_that_cannot_be_made_is_refused_before_the_run(tmp_path, capsys):
    """The file is tried, not only its folder's permissions (which pass for root): a name longer than the file
    system takes is refused before the demo runs, naming --plot; an existing file is left as it was."""
    code = cli.main(["run", "custom-law", "--", "--plot", str(tmp_path / ("s" * 300 + ".png"))])
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert code == 2 and len(err) == 1 and "--plot" in err[0] and "cannot write the file" in err[0]
    assert list(tmp_path.iterdir()) == []
    kept = tmp_path / "kept.png"
    kept.write_bytes(b"old figure")
    parser = cli.ArgumentParser(prog="demo")
    assert cli.output_file(parser, "--plot", kept, figure=True) == kept and kept.read_bytes() == b"old figure"
    fresh = tmp_path / "fresh.png"
    assert cli.output_file(parser, "--plot", fresh, figure=True) == fresh and not fresh.exists()


@pytest.mark.parametrize("demo", ["custom-law", "manufactured-solution", "contact-fibers"])
@pytest.mark.parametrize("name, says", [("sag.txt", "no .txt files"), ("sag", "no extension-less files")])
def test_a_plot_format_is_checked_before_the_run(demo, name, says, tmp_path, capsys):
    """A --plot file in a format matplotlib does not write is refused before the demo computes anything."""
    code = cli.main(["run", demo, "--small", "--plot", str(tmp_path / name)])
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert code == 2 and len(err) == 1
    assert f"--plot {tmp_path / name}: matplotlib writes {says}; end the name in one of" in err[0] and ".png" in err[0]


@pytest.mark.parametrize("residual, tangent, says", [
    (lambda v: v, None, "residual must be a LinearForm or a function (v, w), got <lambda>(v)"),
    (lambda u, v, w: 0.0, None, "residual must be a LinearForm or a function (v, w), got <lambda>(u, v, w)"),
    (3.0, None, "residual must be a LinearForm or a function (v, w), got a float"),
    (lambda v, w: 0.0, lambda v, w: 0.0, "tangent must be a BilinearForm, a function (u, v, w) or None, got <lambda>(v, w)"),
])
def test_a_term_that_is_not_a_form_is_refused_when_added(residual, tangent, says):
    """add_term checks that the residual takes (v, w) and the tangent (u, v, w) at once, not at the first
    evaluation of a run."""
    model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
    with pytest.raises(TypeError, match=re.escape(f"Term 'push': {says}")):
        model.add_term(residual, tangent, name="push")
    assert model.term_names == ["internal_force", "inertia"]
    model.add_term(lambda v, w, scale=1.0: scale * v[0], name="push")  # (more arguments with defaults: fine)


def test_api_calls_with_the_wrong_kind_of_argument_say_so():
    """The wrong object where a model, a list of fibers or a flag belongs: a TypeError naming it."""
    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    with pytest.raises(TypeError, match="simulate needs a skfiber.Model as its first argument, got NoneType"):
        sf.simulate(None, t_end=0.1, dt=0.01)
    with pytest.raises(TypeError, match="progress must be True, False or a skfiber.progress.Progress, got .no."):
        sf.simulate(model, t_end=0.1, dt=0.01, progress="no")
    from skfiber.run import run_simulation

    with pytest.raises(TypeError, match=r"progress must be True, False or a skfiber.progress.Progress, got 0"):
        run_simulation(model, t_end=0.1, dt=0.01, progress=0)
    for fibers in (None, 3, "fiber"):
        with pytest.raises(TypeError, match=f"Model takes a list of Fiber objects, got {type(fibers).__name__}"):
            sf.Model(fibers)
    for law in (lambda: sf.paper_law(sigma0=-30.0), lambda: sf.prestress(-1.0)):
        with pytest.raises(ValueError, match="sigma0 must be ≥ 0, got -"):
            law()


def test_a_run_of_more_steps_than_the_solver_takes_is_refused_before_it_starts(tmp_path):
    """run_simulation, which calls the solver once per step, refuses a run of more than MAX_STEPS steps as
    simulate does (the upper-limb demo as well), before it writes anything."""
    from skfiber.run import run_simulation
    from skfiber.core.numbers import MAX_STEPS

    fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
    model = sf.Model([fiber])
    model.fix(fiber, "start")
    with pytest.raises(ValueError, match=r"steps, at most 1e\+09"):
        run_simulation(model, t_end=2.0 * MAX_STEPS * 1e-3, dt=1e-3, out_dir=tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
    from skfiber.demos import upper_limb

    with pytest.raises(ValueError, match="would take 3.2e\\+10 steps .* give a shorter t_end"):
        upper_limb.run_options(1, t_end=1e9)


def test_a_run_too_long_for_the_solver_is_refused_by_the_demo_before_it_makes_its_folder(tmp_path, capsys):
    """The upper limb's --t-end that needs more than 10⁹ steps: one line naming the demo, no folder made."""
    code = cli.main(["run", "upper-limb", "--", "--t-end", "1e9", "--output", str(tmp_path / "out")])
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert code == 2 and len(err) == 1
    assert err[0].startswith("skfiber run upper-limb: error: t_end = 1e+09 s would take 3.2e+10 steps"), err
    assert not (tmp_path / "out").exists()


def test_simulate_rigid_names_bad_arguments():
    """simulate_rigid checks its arguments as simulate does, before any step."""
    system = hanging_rod()
    cases = [
        (dict(max_bisections=-1), ValueError, "max_bisections must be an integer in 0 … 60"),
        (dict(max_bisections=1.5), ValueError, "max_bisections must be an integer"),
        (dict(t_end=float("inf")), ValueError, "t_end must be a finite number"),
        (dict(t_end="1"), ValueError, "t_end must be a finite number, got '1'"),
        (dict(t_end=100.0, dt=1e-12), ValueError, "dt = 1e-12 s is too small"),
        (dict(callback=5), TypeError, "callback must be a function"),
        (dict(q0=[float("nan")]), ValueError, r"q0 must be finite, got \[nan\]"),
        (dict(p0="a"), ValueError, r"p0 must hold 1 number, one per coordinate \['rod.angle'\], got 'a'"),
        (dict(p0=[0.0, 0.0]), ValueError, "p0 must hold 1 number"),
    ]
    for change, error, message in cases:
        arguments = dict(q0=[0.0], p0=[0.0], t_end=0.05, dt=0.01) | change
        with pytest.raises(error, match=message):
            simulate_rigid(system, arguments.pop("q0"), arguments.pop("p0"), **arguments)
