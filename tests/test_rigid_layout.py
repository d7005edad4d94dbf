"""Layout of skfiber.rigid: the names of the split modules stay importable where they were, the old
private names kept for users outside the package are the public ones, modules stay small, and no
private name or function-local import crosses the package's modules."""
import ast
import pathlib

import numpy as np
import pytest

import skfiber.rigid as rigid
from skfiber.rigid import Body, PointForce, Revolute, RigidSystem

RIGID = pathlib.Path(rigid.__file__).parent
MODULES = sorted(RIGID.glob("*.py"))


@pytest.mark.parametrize("module, names", [
    ("skfiber.rigid.system", ["RigidSystem", "COMPLEX_STEP", "complex_jacobian"]),
    ("skfiber.rigid.kernels", ["tree_poses", "inertia_terms", "point_jets", "point_kinematics", "euler_terms",
                               "euler_step_terms", "body_point_jets"]),
    ("skfiber.rigid.integrate", ["RigidStep", "EulerStep", "rigid_step", "rigid_static", "rigid_residual",
                                 "rigid_tangent", "backward_euler_rigid", "simulate_rigid", "RigidResult",
                                 "RigidNewtonReport", "element_state_names", "initial_element_states", "STEP_TOL",
                                 "STATE_STEP"]),
])
def test_public_names_stay_importable_from_the_split_modules(module, names):
    mod = __import__(module, fromlist=names)
    for name in names:
        assert getattr(mod, name) is not None, name
    assert set(names) >= set(mod.__all__)
    for name in rigid.__all__:
        assert getattr(rigid, name) is not None


def test_public_members_used_outside_the_package():
    """What coupling_fast and hill use of a RigidSystem is public (plan, register_point, resolve_point,
    context), with no private aliases left."""
    for old in ("_plan", "_register_point", "_resolve_point", "_context"):
        assert not hasattr(RigidSystem, old)
    system = RigidSystem(gravity=(0, 0, -9.81))
    system.add_body(Body("arm", start=(0, 0, 0), axis=(1, 0, 0), radius=0.05, mass=1.0, points={"tip": (1, 0, 0)}),
                    joint=Revolute(axis=(0, 0, 1)))
    system.add(PointForce("arm", "tip", (0, 1, 0)))
    assert system.plan() is system.plan()  # made once per assembled system
    np.testing.assert_array_equal(system.resolve_point("arm", "tip", "me"), [1.0, 0.0, 0.0])
    assert system.body_index("arm") == 0 and system.body_index("ground") == 1
    ctx = system.context(np.array([[0.0]]), np.array([[0.0]]), 0.0)
    np.testing.assert_allclose(ctx.jacobian(0)[0], [[0.0], [1.0], [0.0]], atol=1e-15)
    bodies, X = system.registered_points()
    assert bodies.tolist() == [0] and X.tolist() == [[1.0, 0.0, 0.0]]


def test_revolute_cross_matrices():
    joint = Revolute(axis=(0, 0, 2))
    a = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(joint.cross_matrix @ a, np.cross([0, 0, 1.0], a))
    np.testing.assert_allclose(joint.cross_matrix_squared, joint.cross_matrix @ joint.cross_matrix)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_modules_are_small(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 600


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_private_name_imported_or_function_local_import(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            private = [a.name for a in node.names if a.name.startswith("_") and a.name != "__future__"]
            assert not private, f"{path.name}:{node.lineno} imports private {private}"
            assert not any((a.asname or "").startswith("_") for a in node.names), f"{path.name}:{node.lineno}"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
            assert not local, f"{path.name}: function {node.name} imports inside its body (line {local[0].lineno})"
