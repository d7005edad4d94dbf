"""Fiber ends tied to body points (paper eqs. 49a, 54c, 59): :class:`Attachment` and c(q, t).

:meth:`skfiber.Model.attach` makes the attachments; :func:`attachment_kinematics` gives
u_D = c(q, t) with its q-derivatives, which the coupled solver (:mod:`skfiber.coupling`)
eliminates.

Examples
--------
>>> import numpy as np
>>> from skfiber.attachments import AttachmentKinematics
>>> AttachmentKinematics(np.zeros(3), np.zeros((3, 1)), None).jacobian.shape
(3, 1)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rigid import GROUND, evaluate_points

__all__ = ["Attachment", "AttachmentKinematics", "attachment_kinematics", "new_attachment"]


@dataclass(frozen=True, eq=False)
class Attachment:
    """A fiber end tied to a body point (made by :meth:`skfiber.Model.attach`)."""

    name: str
    fiber: int
    end: str | int
    body: str
    dofs: np.ndarray  # the 3 position DOFs of the end
    point: object  # skfiber.rigid.BodyPoint

    def __repr__(self):
        return f"Attachment({self.name!r}: fiber {self.fiber} {self.end!r} → {self.body!r})"


def new_attachment(system, body, point, *, fiber: int, end, dofs, reference: np.ndarray, name: str,
                   taken: set) -> Attachment:
    """The :class:`Attachment` of fiber ``fiber``'s ``end`` (position DOFs ``dofs`` at ``reference``) to
    ``body`` of the rigid ``system`` at ``point`` (default: the fiber end), checked: a known body, a point
    that coincides with the fiber end, a new ``name`` (not in ``taken``)."""
    body = getattr(body, "name", body)
    known = [b.name for b in system.bodies]
    if not isinstance(body, str) or (body != GROUND and body not in known):
        raise ValueError(f"attach: unknown body {body!r}; the rigid system has {known} (or 'ground')")
    bp = system.point(body, reference if point is None else point)
    gap = float(np.linalg.norm(bp.reference - reference))
    scale = max(1.0, float(np.abs(reference).max()))
    if gap > 1e-9 * scale:
        raise ValueError(
            f"attach: the body point {bp.reference.tolist()} is {gap:.3g} m away from the reference position "
            f"{reference.tolist()} of fiber {fiber} end {end!r}; the fiber must start at its attachment "
            "(move the fiber end there, or omit point= to use the fiber end)")
    if name in taken:
        raise ValueError(f"an attachment named {name!r} exists already; give another name")
    return Attachment(name=name, fiber=fiber, end=end, body=body, dofs=np.asarray(dofs), point=bp)


@dataclass(frozen=True)
class AttachmentKinematics:
    """c(q, t) of all attachments stacked like ``Model.dependent_dofs``.

    displacement (3P,), jacobian C (3P, n), hessian ∂C/∂q (3P, n, n) or None.
    """

    displacement: np.ndarray
    jacobian: np.ndarray
    hessian: np.ndarray | None


def attachment_kinematics(model, q, t: float, *, hessian: bool = True) -> AttachmentKinematics:
    """u_D = c(q, t), C and ∂C/∂q of the model's attachments (paper eqs. 54c, 59)."""
    atts = model.attachments
    n = model.rigid.n
    if not atts:
        return AttachmentKinematics(np.zeros(0), np.zeros((0, n)), np.zeros((0, n, n)) if hessian else None)
    pk = evaluate_points(model.rigid, [a.body for a in atts], np.array([a.point.reference for a in atts]), q, t,
                         hessian=hessian)
    P = len(atts)
    H = None if pk.hessian is None else pk.hessian.reshape(3 * P, n, n)
    return AttachmentKinematics((pk.position - pk.reference).reshape(-1), pk.jacobian.reshape(3 * P, n), H)
