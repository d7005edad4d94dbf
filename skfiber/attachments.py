"""Fiber ends tied to body points (paper eqs. 49a, 54c, 59): :class:`Attachment` and c(q, t).

:meth:`skfiber.Model.attach` makes the attachments; :func:`attachment_kinematics` gives
u_D = c(q, t) with its q-derivatives, which the coupled solver (:mod:`skfiber.coupling`)
eliminates.

Example
-------
>>> import numpy as np
>>> from skfiber.attachments import AttachmentKinematics
>>> AttachmentKinematics(np.zeros(3), np.zeros((3, 1)), None).jacobian.shape
(3, 1)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rigid import evaluate_points

__all__ = ["Attachment", "AttachmentKinematics", "attachment_kinematics"]


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
