"""The kinematic tree: order, coordinates and ancestor masks (built once).

Every joint with a coordinate (revolute, prismatic) and every prescribed
joint is a *moving joint* k with a world twist (ω_k, o_k, v_k): moving the
joint's variable ζ_k moves a point x downstream of it with velocity
s_k(x) = ω_k × (x − o_k) + v_k.  The variables ζ are the coordinates q
and, for each prescribed joint, a copy τ_b of the time t.  Moving joints
are numbered in tree order (parents first).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bodies import Body
from .joints import Fixed, Prescribed, Prismatic, Revolute

__all__ = ["Tree", "build_tree", "GROUND"]

GROUND = "ground"

REVOLUTE, PRISMATIC, PRESCRIBED = 0, 1, 2


@dataclass(frozen=True)
class Rotations:
    """Constant data of the revolute joints: Rot(a, q) = I + sin q K + (1 − cos q) K²."""

    coordinates: np.ndarray  # (r,) coordinate index of each revolute joint
    K: np.ndarray            # (r, 3, 3) [a]×
    K2: np.ndarray           # (r, 3, 3) [a]×²
    slot: np.ndarray         # (nz,) moving joint → revolute slot (−1 if not revolute)


@dataclass(frozen=True)
class JointTables:
    """Constant joint data as flat arrays (the compiled kinematics, :mod:`.kernels`)."""

    axis: np.ndarray         # (nz, 3) axis of each revolute / prismatic joint (0 for prescribed)
    point: np.ndarray        # (nz, 3) point of each revolute joint (0 otherwise)
    tau_slot: np.ndarray     # (nz,) moving joint → index among the prescribed joints (−1 otherwise)
    center: np.ndarray       # (m, 3) center O of each prescribed joint
    prescribed: np.ndarray   # (nz,) bool: the joint is prescribed
    parent: np.ndarray       # (nb,) int64 parent index, −1 = ground
    joint_of_body: np.ndarray  # (nb,) int64
    kind: np.ndarray         # (nz,) int64
    coordinate: np.ndarray   # (nz,) int64
    q_joints: np.ndarray     # (n,) int64
    tau_joints: np.ndarray   # (m,) int64


@dataclass(frozen=True)
class Tree:
    """Topology and constant data of a rigid system (see module docstring).

    ``bodies`` in tree order; index ``len(bodies)`` denotes the ground.
    """

    bodies: tuple[Body, ...]
    joints: tuple
    parent: np.ndarray          # (nb,) parent index, −1 = ground
    joint_of_body: np.ndarray   # (nb,) moving-joint index of the body's own joint, −1 if Fixed
    body_of_joint: np.ndarray   # (nz,)
    kind: np.ndarray            # (nz,) REVOLUTE / PRISMATIC / PRESCRIBED
    coordinate: np.ndarray      # (nz,) index into q, −1 for prescribed joints
    q_joints: np.ndarray        # (n,) moving joint of each coordinate
    tau_joints: np.ndarray      # (m,) moving joints that are prescribed
    path: np.ndarray            # (nb + 1, nz) bool: joint k moves body b (last row: ground)
    upstream: np.ndarray        # (nz, nz) bool: joint j is strictly upstream of joint k
    mass: np.ndarray            # (nb,)
    com: np.ndarray             # (nb, 3) reference centers of mass
    inertia: np.ndarray         # (nb, 3, 3) reference inertia about the center of mass
    index: dict                 # body name → index (ground → nb)
    coordinate_names: tuple[str, ...]
    rotations: Rotations
    tables: JointTables

    @property
    def mass_depends_on_time(self) -> bool:
        """M depends on t only through prescribed joints below a coordinate (a prescribed
        motion of the whole subtree above all coordinates is a rigid motion, under which M is invariant)."""
        return bool(np.any(self.upstream[np.ix_(self.q_joints, self.tau_joints)]))

    @property
    def n(self) -> int:
        return len(self.q_joints)

    @property
    def n_bodies(self) -> int:
        return len(self.bodies)


def build_tree(entries: list[tuple[Body, str, object]]) -> Tree:
    """Order bodies parents-first; check names, parents, cycles, masses."""
    names = [b.name for b, _, _ in entries]
    by_name = {}
    for body, parent, joint in entries:
        if body.name in by_name:
            raise ValueError(f"two bodies are named {body.name!r}; body names must be unique")
        by_name[body.name] = (body, parent, joint)
    for body, parent, _ in entries:
        if parent != GROUND and parent not in by_name:
            raise ValueError(
                f"the parent {parent!r} of body {body.name!r} is not a body of the system; "
                f"known bodies: {names}, or {GROUND!r}"
            )
        if parent == body.name:
            raise ValueError(f"body {body.name!r} is its own parent")
    # parents first (depth-first from the ground); bodies never reached form a cycle
    children: dict[str, list[str]] = {}
    for body, parent, _ in entries:
        children.setdefault(parent, []).append(body.name)
    order: list[str] = []
    stack = list(reversed(children.get(GROUND, [])))
    while stack:
        name = stack.pop()
        order.append(name)
        stack.extend(reversed(children.get(name, [])))
    if len(order) != len(entries):
        cycle = _find_cycle({b.name: p for b, p, _ in entries}, set(names) - set(order))
        raise ValueError(
            "the bodies " + " → ".join(repr(c) for c in cycle) + " form a cycle of parents; "
            "a kinematic tree needs every body to lead to the ground through its parents"
        )
    index = {name: i for i, name in enumerate(order)}
    nb = len(order)
    index[GROUND] = nb
    bodies = tuple(by_name[n][0] for n in order)
    joints = tuple(by_name[n][2] for n in order)
    parent = np.array([index[by_name[n][1]] if by_name[n][1] != GROUND else -1 for n in order], dtype=int)

    # coordinates are numbered in the order the bodies were added
    coordinate_of_name, coordinate_names = {}, []
    for body, _, joint in entries:
        if isinstance(joint, (Revolute, Prismatic)):
            coordinate_of_name[body.name] = len(coordinate_names)
            coordinate_names.append(f"{body.name}.{'angle' if isinstance(joint, Revolute) else 'distance'}")
    joint_of_body = -np.ones(nb, dtype=int)
    body_of_joint, kind, coordinate = [], [], []
    for b, joint in enumerate(joints):
        if isinstance(joint, Fixed):
            continue
        if isinstance(joint, Revolute):
            k_kind = REVOLUTE
        elif isinstance(joint, Prismatic):
            k_kind = PRISMATIC
        elif isinstance(joint, Prescribed):
            k_kind = PRESCRIBED
        else:  # pragma: no cover - checked in add_body
            raise TypeError(f"unknown joint {joint!r}")
        joint_of_body[b] = len(kind)
        body_of_joint.append(b)
        kind.append(k_kind)
        coordinate.append(coordinate_of_name.get(bodies[b].name, -1))
    nz = len(kind)
    kind = np.array(kind, dtype=int)
    coordinate = np.array(coordinate, dtype=int)
    path = np.zeros((nb + 1, nz), dtype=bool)
    for b in range(nb):
        if parent[b] >= 0:
            path[b] = path[parent[b]]
        if joint_of_body[b] >= 0:
            path[b, joint_of_body[b]] = True
    body_of_joint = np.array(body_of_joint, dtype=int)
    upstream = np.zeros((nz, nz), dtype=bool)
    for k in range(nz):
        upstream[:, k] = path[body_of_joint[k]]
        upstream[k, k] = False

    # bodies that move with their own coordinate need mass and inertia
    for b, body in enumerate(bodies):
        if joint_of_body[b] >= 0 and kind[joint_of_body[b]] != PRESCRIBED:
            if not body.mass > 0:
                raise ValueError(
                    f"body {body.name!r} moves with its own coordinate ({type(joints[b]).__name__} joint) "
                    f"but has mass {body.mass:g}; give it a mass > 0"
                )
            smallest = np.linalg.eigvalsh(body.inertia_matrix)[0]
            if isinstance(joints[b], Revolute) and not smallest > 0:
                raise ValueError(
                    f"body {body.name!r} rotates about a revolute joint but its inertia tensor is not positive "
                    f"definite (smallest principal moment {smallest:.3g} kg m²); give positive moments of inertia"
                )
    rev = np.flatnonzero(kind == REVOLUTE)
    slot = -np.ones(nz, dtype=int)
    slot[rev] = np.arange(len(rev))
    rotations = Rotations(
        coordinates=coordinate[rev],
        K=np.array([joints[b].cross_matrix for b in body_of_joint[rev]]).reshape(len(rev), 3, 3),
        K2=np.array([joints[b].cross_matrix_squared for b in body_of_joint[rev]]).reshape(len(rev), 3, 3),
        slot=slot,
    )
    q_joints = np.argsort(np.where(coordinate >= 0, coordinate, nz + 1))[: len(coordinate_names)].astype(int)
    tau_joints = np.flatnonzero(kind == PRESCRIBED)
    axis = np.zeros((nz, 3))
    point = np.zeros((nz, 3))
    for k in range(nz):
        joint = joints[body_of_joint[k]]
        if isinstance(joint, (Revolute, Prismatic)):
            axis[k] = joint.axis
        if isinstance(joint, Revolute):
            point[k] = joint.point
    tau_slot = -np.ones(nz, dtype=np.int64)
    tau_slot[tau_joints] = np.arange(len(tau_joints))
    int64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
    tables = JointTables(
        axis=axis, point=point, tau_slot=tau_slot,
        center=np.array([joints[body_of_joint[k]].center for k in tau_joints], dtype=float).reshape(-1, 3),
        prescribed=kind == PRESCRIBED, parent=int64(parent), joint_of_body=int64(joint_of_body), kind=int64(kind),
        coordinate=int64(coordinate), q_joints=int64(q_joints), tau_joints=int64(tau_joints),
    )
    return Tree(
        rotations=rotations, tables=tables,
        bodies=bodies, joints=joints, parent=parent, joint_of_body=joint_of_body,
        body_of_joint=body_of_joint, kind=kind, coordinate=coordinate,
        q_joints=q_joints, tau_joints=tau_joints,
        path=path, upstream=upstream,
        mass=np.array([b.mass for b in bodies]), com=np.array([b.center_of_mass for b in bodies]).reshape(nb, 3),
        inertia=np.array([b.inertia_matrix for b in bodies]).reshape(nb, 3, 3),
        index=index, coordinate_names=tuple(coordinate_names),
    )


def _find_cycle(parent_of: dict[str, str], unreached: set[str]) -> list[str]:
    start = sorted(unreached)[0]
    seen: list[str] = []
    name = start
    while name not in seen:
        seen.append(name)
        name = parent_of[name]
    return seen[seen.index(name):] + [name]
