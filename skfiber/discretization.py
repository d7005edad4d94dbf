"""All fibers of a model in one scikit-fem mesh and one basis.

Fiber k occupies the mesh interval [2k, 2k + 1] of a single ``MeshLine``
(the gaps keep fibers disconnected); its parameter is θ = x_mesh − 2k.  The
basis is ``ElementVector(ElementLineHermite(), 3)``: per node the DOFs are
(u1, u2, u3, u1′, u2′, u3′) with ′ = d/dθ, numbered node by node, so the
global matrices are banded (bandwidth 11).

Examples
--------
>>> from skfiber import Fiber
>>> from skfiber.discretization import Discretization
>>> d = Discretization([Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)])
>>> int(d.n_dofs)
30
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.sparse as sps
from skfem import Basis, ElementLineHermite, ElementVector, MeshLine

from .assembly import BatchedAssembler
from .fiber import Fiber

__all__ = ["Discretization", "hermite_shape"]

DOFS_PER_NODE = 6


def hermite_shape(xi: np.ndarray, derivative: int = 0) -> np.ndarray:
    """Cubic Hermite shape functions (paper eq. 53) on ξ ∈ [0, 1], shape (4, n).

    Order: value at 0, slope at 0, value at 1, slope at 1 (slopes per unit ξ).
    """
    xi = np.asarray(xi, dtype=float)
    if derivative == 0:
        return np.array([1 + xi**2 * (2 * xi - 3), xi * (xi * (xi - 2) + 1), -(xi**2) * (2 * xi - 3), xi**2 * (xi - 1)])
    if derivative == 1:
        return np.array([6 * xi**2 - 6 * xi, 3 * xi**2 - 4 * xi + 1, -6 * xi**2 + 6 * xi, 3 * xi**2 - 2 * xi])
    if derivative == 2:
        return np.array([12 * xi - 6, 6 * xi - 4, -12 * xi + 6, 6 * xi - 2])
    raise ValueError(f"derivative must be 0, 1 or 2, got {derivative}")


@dataclass(frozen=True)
class FiberDofs:
    """Where one fiber lives in the global numbering."""

    index: int
    first_node: int
    n_nodes: int
    elements: slice

    @property
    def nodes(self) -> np.ndarray:
        return np.arange(self.first_node, self.first_node + self.n_nodes)

    def position_dofs(self, node: int) -> np.ndarray:
        """The 3 value DOFs of a local node (0 … n_nodes − 1, or −1 for the end)."""
        local = node % self.n_nodes
        return DOFS_PER_NODE * (self.first_node + local) + np.arange(3)


class Discretization:
    """Mesh, basis, reference geometry and quadrature data of all fibers.

    Parameters
    ----------
    fibers
        The fibers; their order fixes the numbering.
    quadrature_points
        Gauss points per element (default 4: exact for the mass matrix).
    """

    def __init__(self, fibers: Sequence[Fiber], *, quadrature_points: int = 4):
        if len(fibers) == 0:
            raise ValueError("a model needs at least one fiber")
        if not isinstance(quadrature_points, (int, np.integer)) or not 1 <= quadrature_points <= 10:
            raise ValueError(f"quadrature_points must be an integer in 1 … 10, got {quadrature_points!r}")
        self.fibers = list(fibers)
        p_chunks, t_chunks, self.fiber_dofs = [], [], []
        node0 = elem0 = 0
        for k, fiber in enumerate(self.fibers):
            ne = int(fiber.n_elements)
            p_chunks.append(2.0 * k + np.linspace(0.0, 1.0, ne + 1))
            t_chunks.append(np.vstack([np.arange(ne), np.arange(1, ne + 1)]) + node0)
            self.fiber_dofs.append(FiberDofs(k, node0, ne + 1, slice(elem0, elem0 + ne)))
            node0 += ne + 1
            elem0 += ne
        self.mesh = MeshLine(np.concatenate(p_chunks)[None, :], np.hstack(t_chunks))
        self.basis = Basis(
            self.mesh, ElementVector(ElementLineHermite(), 3), intorder=2 * quadrature_points - 1
        )
        self.assembler = BatchedAssembler(self.basis)
        self.n_dofs = int(self.basis.N)  # (a Python int: skfem gives an np.int32)
        self.n_nodes = node0
        self.element_fiber = np.concatenate(
            [np.full(f.n_elements, k) for k, f in enumerate(self.fibers)]
        )
        self.node_fiber = np.concatenate([np.full(fd.n_nodes, fd.index) for fd in self.fiber_dofs])
        self.node_theta = self.mesh.p[0] - 2.0 * self.node_fiber

        # reference geometry X as Hermite DOFs: values and θ-derivatives at nodes
        X = np.zeros((self.n_nodes, DOFS_PER_NODE))
        for fiber, fd in zip(self.fibers, self.fiber_dofs):
            th = self.node_theta[fd.nodes]
            X[fd.nodes, :3] = fiber.reference_position(th).T
            X[fd.nodes, 3:] = fiber.reference_tangent(th).T
        self.reference_dofs = X.ravel()

        # quadrature data (elements × points)
        xq = self.basis.global_coordinates()[0]  # DiscreteField (e, q)
        self.theta = np.asarray(xq) - 2.0 * self.element_fiber[:, None]
        ref = self.assembler.interpolate(self.reference_dofs)
        self.reference_field = ref
        self.jacobian = np.linalg.norm(ref.grad[:, 0], axis=0)  # |A1| = |X′|
        self.radius = np.empty_like(self.theta)
        self.muscle_fraction = np.empty_like(self.theta)
        self.density = np.empty_like(self.theta)
        for fiber, fd in zip(self.fibers, self.fiber_dofs):
            th = self.theta[fd.elements]
            self.radius[fd.elements] = fiber.radius_at(th)
            self.muscle_fraction[fd.elements] = fiber.muscle_fraction_at(th)
            self.density[fd.elements] = fiber.density
        self.area = np.pi * self.radius**2

        # fibers grouped by stress law: one law call per distinct law
        groups: dict[int, list[int]] = {}
        for k, fiber in enumerate(self.fibers):
            groups.setdefault(id(fiber.law), []).append(k)
        self.law_groups = [
            (self.fibers[ks[0]].law, np.isin(self.element_fiber, ks)) for ks in groups.values()
        ]

    # --- lookup ---------------------------------------------------------
    def fiber_index(self, fiber: Fiber | int | str) -> int:
        """Index of a fiber given as object, index or name."""
        if isinstance(fiber, Fiber):
            for k, f in enumerate(self.fibers):
                if f is fiber:
                    return k
            raise ValueError("this fiber is not part of the model; pass one of the model's fibers")
        if isinstance(fiber, (int, np.integer)) and not isinstance(fiber, bool):
            if 0 <= fiber < len(self.fibers):
                return int(fiber)
            raise ValueError(f"fiber index {fiber} out of range; the model has {len(self.fibers)} fibers (0 … {len(self.fibers) - 1})")
        if isinstance(fiber, str):
            names = [f.name for f in self.fibers]
            holders = [k for k, name in enumerate(names) if name == fiber]
            if len(holders) == 1:
                return holders[0]
            if holders:
                raise ValueError(f"the fiber name {fiber!r} is shared by fibers {holders}: give the fiber by its index "
                                 "or object, or name the fibers apart (e.g. bundle(..., name=...) for each bundle)")
            known = [n for n in names if n]
            if not known:
                raise ValueError(f"unknown fiber name {fiber!r}: the fibers have no names; give the fiber by its "
                                 f"index (0 … {len(names) - 1}) or object, or name it with Fiber(..., name=...)")
            raise ValueError(f"unknown fiber name {fiber!r}; pick one of {known}")
        raise TypeError(f"a fiber is given by the Fiber object, its index or its name, got {fiber!r}")

    def end_dofs(self, fiber: Fiber | int | str, end: str | int) -> np.ndarray:
        """The 3 position DOFs of a fiber end (``"start"``/0 or ``"end"``/1)."""
        k = self.fiber_index(fiber)
        ends = {"start": 0, 0: 0, "end": -1, 1: -1}
        if isinstance(end, bool) or end not in ends:
            raise ValueError(f"unknown fiber end {end!r}; pick one of 'start' (θ = 0) or 'end' (θ = 1)")
        return self.fiber_dofs[k].position_dofs(ends[end])

    # --- evaluation -----------------------------------------------------
    def evaluate(self, dofs: np.ndarray, fiber: Fiber | int | str, theta: np.ndarray, derivative: int = 0) -> np.ndarray:
        """A Hermite field (DOF vector (N,)) on one fiber at parameters θ, shape (3, n)."""
        nodes, weights = self._hermite_weights(fiber, theta, derivative)
        nodal = np.asarray(dofs).reshape(-1, DOFS_PER_NODE)
        return (weights[0] * nodal[nodes, :3].T + weights[1] * nodal[nodes, 3:].T
                + weights[2] * nodal[nodes + 1, :3].T + weights[3] * nodal[nodes + 1, 3:].T)

    def evaluation_matrix(self, fiber: Fiber | int | str, theta: np.ndarray, derivative: int = 0) -> sps.csr_matrix:
        """The sparse matrix E (3n, N) with ``(E @ dofs).reshape(3, n) == evaluate(dofs, fiber, theta, derivative)``:
        for a field evaluated at the same θ many times (one sparse product instead of a gather per call).

        Examples
        --------
        >>> from skfiber import Fiber
        >>> d = Discretization([Fiber.straight((0, 0, 0), (2, 0, 0), n_elements=4)])
        >>> E = d.evaluation_matrix(0, [0.0, 0.3, 1.0], derivative=1)
        >>> (E @ d.reference_dofs).reshape(3, -1)[0].round(12).tolist()     # X′ = (2, 0, 0) at every θ
        [2.0, 2.0, 2.0]
        """
        nodes, weights = self._hermite_weights(fiber, theta, derivative)
        n = nodes.size
        columns = [(nodes + (j >= 2)) * DOFS_PER_NODE + 3 * (j % 2) for j in range(4)]  # (the first of 3 d.o.f.)
        rows = np.concatenate([np.tile(c * n + np.arange(n), 4) for c in range(3)])
        cols = np.concatenate([np.concatenate(columns) + c for c in range(3)])
        values = np.tile(np.concatenate(weights), 3)
        return sps.csr_matrix((values, (rows, cols)), shape=(3 * n, self.n_dofs))

    def _hermite_weights(self, fiber, theta, derivative: int) -> tuple[np.ndarray, np.ndarray]:
        """(the first node of each θ's element (global), the weights (4, n) of that node's value and slope and
        the next node's): the field's value or derivative at θ is their sum (slopes per unit θ)."""
        fd = self.fiber_dofs[self.fiber_index(fiber)]
        theta = np.atleast_1d(np.asarray(theta, dtype=float))
        if not np.all((theta >= 0) & (theta <= 1)):  # NaN too
            raise ValueError(f"theta (the fiber parameter θ) must lie in [0, 1], got values in "
                             f"[{np.min(theta):g}, {np.max(theta):g}]")
        ne = fd.n_nodes - 1
        h = 1.0 / ne
        e = np.minimum((theta / h).astype(int), ne - 1)
        weights = hermite_shape(theta / h - e, derivative) / h**derivative  # (4, n)
        weights[1::2] *= h  # the slopes d/dθ per unit ξ
        return fd.first_node + e, weights
