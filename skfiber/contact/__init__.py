"""Contact between fibers and with rigid cylinders (paper §2.4, §3.3, §4.3–4.4).

A contact object follows the :class:`~skfiber.contact.base.Contact` protocol
and is added to a model with :meth:`skfiber.Model.add_contact`; its residual
and tangent blocks are added to the assembled system and its
:meth:`~skfiber.contact.base.Contact.max_step` feeds Newton's safeguard.
"""
from .base import Contact, ContactEvaluation, PenaltyLaw
from .cylinder import CylinderContact
from .fibers import FiberContact

__all__ = ["Contact", "ContactEvaluation", "PenaltyLaw", "CylinderContact", "FiberContact"]
