"""A model: fibers, boundary conditions, loads and extra terms.

Examples
--------
>>> from skfiber import Fiber, Model
>>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=8)
>>> model = Model([fiber])
>>> model.fix(fiber, "start")
>>> model.fix(fiber, "end")
>>> model.add_gravity()
"""
from __future__ import annotations

import contextlib
import functools
import math
import operator
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
import scipy.sparse as sps
from skfem.assembly.form.form import FormExtraParams

from . import forms
from .attachments import attachment_kinematics, new_attachment
from .compile.form_numbers import FormNumbers
from .compile.kernel import FormKernel
from .contact.base import Contact
from .core import Evaluation, ResidualMemo, State, check_state
from .core.warn import warn
from .discretization import Discretization
from .fiber import Fiber
from .fiber_part import fiber_part, vector_norm
from .law_kernels import FiberStress
from .loads import ExternalLoads, VectorField
from .materials import SYMBOLS
from .rigid import RigidSystem
from .terms import Term

__all__ = ["Model", "State", "Evaluation", "one_run"]

_ACTIVATION = operator.attrgetter("activation")
#: the model warns once when its forms were traced again this many times within a run, in at least one of
#: every RETRACE_SHARE evaluations (a form's parameter that changes while the model runs)
RETRACES_WARNED = 10
RETRACE_SHARE = 10


def one_run(function: Callable) -> Callable:
    """``function(model, …)`` (a run: :func:`skfiber.simulate`, …) within ``model.run_scope()``
    (:meth:`Model.run_scope`); anything else as the model is passed on for ``function`` to name."""
    @functools.wraps(function)
    def within_run_scope(model, *args, **kwargs):
        if not isinstance(model, Model):
            return function(model, *args, **kwargs)
        with model.run_scope():
            return function(model, *args, **kwargs)
    return within_run_scope


@dataclass(frozen=True)
class _Prescribed:
    dofs: np.ndarray
    displacement: Callable[[float], np.ndarray] | None  # None = fixed


class Model:
    """Fibers in one scikit-fem mesh, with boundary conditions, loads and terms.

    Parameters
    ----------
    fibers
        The fibers (at least one).
    quadrature_points
        Gauss points per element for the cable integrals (default 4).
    rigid
        Optional :class:`skfiber.rigid.RigidSystem` (bones): fiber ends are
        tied to its bodies with :meth:`attach`, and cylinders of its bodies
        take part in contact (:meth:`skfiber.contact.CylinderContact.on_body`).
        Time stepping then runs Newton on (u_I, q) (:mod:`skfiber.coupling`).
    compiled
        Evaluate the residual terms — the built-in ``"internal_force"`` and
        ``"inertia"`` forms of :mod:`skfiber.forms` and every :meth:`add_term`
        form — with the kernel the form compiler generates from them
        (:attr:`form_kernel`, default), or, with ``False``, by calling the same
        forms with numpy (:class:`~skfiber.assembly.BatchedAssembler`).  Both
        evaluate the same forms; a term the compiler cannot trace runs with
        numpy either way (with a warning naming the construct).

    Notes
    -----
    The residual terms have names: ``"internal_force"`` (alias ``"cable"``),
    ``"inertia"`` and those given to :meth:`add_term`.  :meth:`replace_term`
    swaps the form of any of them, e.g. a researcher's own internal force.

    Examples
    --------
    >>> import numpy as np
    >>> import skfiber as sf
    >>> fiber = sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4, law=sf.paper_law(sigma0=30.0))
    >>> model = sf.Model([fiber])
    >>> model.fix(fiber, "start"); model.fix(fiber, "end"); model.add_gravity()
    >>> model.n_dofs, model.term_names
    (30, ['internal_force', 'inertia'])
    >>> state = model.initial_state()                     # rest in the reference configuration
    >>> ev = model.evaluate(state.u, state.v, state.a, 0.0, c_v=0.0, c_a=0.0)   # statics
    >>> bool(np.abs(ev.residual).max() > 0)               # gravity is not balanced yet
    True
    """

    def __init__(self, fibers: Sequence[Fiber], *, quadrature_points: int = 4, rigid=None, compiled: bool = True):
        if isinstance(fibers, Fiber):
            raise TypeError("Model takes a list of Fiber objects; give [fiber] for a single fiber")
        if isinstance(fibers, (str, bytes)) or not hasattr(fibers, "__iter__"):
            raise TypeError(f"Model takes a list of Fiber objects, got {type(fibers).__name__}")
        fibers = list(fibers)
        for f in fibers:
            if not isinstance(f, Fiber):
                raise TypeError(f"Model takes Fiber objects, got {type(f).__name__}")
        if len({id(f) for f in fibers}) != len(fibers):
            raise ValueError("the same Fiber object is given twice; create one Fiber per fiber")
        if not isinstance(compiled, bool):
            raise TypeError(f"compiled must be True or False, got {compiled!r}")
        self.discretization = Discretization(fibers, quadrature_points=quadrature_points)
        self.compiled = compiled
        self._form_kernel = None  # skfiber.compile.kernel.FormKernel of the terms, made on first use
        self._form_numbers = None  # FormNumbers of the terms' forms, made on first use (_check_form_numbers)
        self._warned_untraced: set = set()
        self._warned_retraces = False  # (_check_form_numbers)
        self._retraces = self._retrace_checks = 0  # forms traced again, and checks, within the current run
        self._in_run = self._run_begins = False  # (run_scope)
        self._all_parts = None  # (key, the names of all parts) (_part_names)
        self._builtin_terms = {  # the cable's forms; their tangents are derived (replace_term swaps them)
            "internal_force": Term(forms.internal_force, None, "internal_force"),
            "inertia": Term(forms.inertia, None, "inertia"),
        }
        self._fiber_stress = None  # skfiber.law_kernels.FiberStress (the numpy path), made on first use
        self._activation_cache = None  # ((t, activations), α (e, 1)) of the last activations(t)
        self.fibers = self.discretization.fibers
        self.terms: list[Term] = []
        self.contacts: list = []
        #: the external loads (body forces, line loads, gravity), assembled from their forms
        self.loads = ExternalLoads(self.discretization)
        self._prescribed: dict[tuple[int, int], _Prescribed] = {}
        self._constrained = None  # constrained_dofs, made on first use after a change of the end conditions
        d = self.discretization
        self.mass_matrix = d.assembler.to_csr(
            d.assembler.bilinear(forms.mass, d.assembler.parameters(area=d.area, rho=d.density, J=d.jacobian)))
        if rigid is not None:
            if not isinstance(rigid, RigidSystem):
                raise TypeError(f"rigid must be a skfiber.rigid.RigidSystem, got {type(rigid).__name__}")
            rigid.finalize()
        self.rigid = rigid
        self._coordinates = None  # q last set with set_coordinates (contacts with body cylinders)
        #: the residual of the last full evaluation, kept while `simulate` runs (attachment_forces in its
        #: callbacks reuses it); any change of the model through its methods clears it
        self.memo = ResidualMemo()
        self.attachments: list = []

    @property
    def n_dofs(self) -> int:
        """The number of DOFs of the fibers: 6 per node (displacement u and slope u′ of the Hermite elements).

        Examples
        --------
        >>> from skfiber import Fiber, Model
        >>> model = Model([Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
        >>> model.n_dofs                         # 3 nodes × 6
        18
        """
        return self.discretization.n_dofs

    # --- boundary conditions ------------------------------------------
    def fix(self, fiber: Fiber | int | str, end: str | int) -> None:
        """Fix the position of a fiber end (its slope stays free).

        Parameters
        ----------
        fiber
            The fiber: the object, its index or its name.
        end
            ``"start"`` (θ = 0) or ``"end"`` (θ = 1), or 0 / −1.

        Examples
        --------
        >>> from skfiber import Fiber, Model
        >>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
        >>> model = Model([fiber]); model.fix(fiber, "start"); model.fix(fiber, "end")
        >>> model.constrained_dofs.size
        6
        """
        self._add_prescribed(fiber, end, None)

    def prescribe(self, fiber: Fiber | int | str, end: str | int, displacement: Callable[[float], Sequence[float]]) -> None:
        """Prescribe the displacement û(t) (m) of a fiber end.

        ``displacement(t)`` returns 3 numbers; the slope DOFs stay free.

        Parameters
        ----------
        fiber
            The fiber: the object, its index or its name.
        end
            ``"start"`` (θ = 0) or ``"end"`` (θ = 1), or 0 / −1.
        displacement
            û(t): a function of the time t (s) returning the end's displacement from its reference
            position (3 numbers, m).

        Examples
        --------
        >>> from skfiber import Fiber, Model
        >>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
        >>> model = Model([fiber]); model.fix(fiber, "start")
        >>> model.prescribe(fiber, "end", lambda t: (0.01 * t, 0.0, 0.0))
        >>> model.prescribed_displacement(2.0).reshape(2, 3)[1].tolist()
        [0.02, 0.0, 0.0]
        """
        if not callable(displacement):
            raise TypeError("displacement must be a callable û(t) returning 3 numbers; use fix() for a fixed end")
        value = np.asarray(displacement(0.0), dtype=float)
        if value.shape != (3,):
            raise ValueError(f"displacement(t) must return 3 numbers, got shape {value.shape}")
        self._add_prescribed(fiber, end, displacement)

    def _add_prescribed(self, fiber, end, displacement) -> None:
        self.memo.clear()
        d = self.discretization
        dofs = d.end_dofs(fiber, end)
        key = (d.fiber_index(fiber), int(dofs[0]))
        self._check_end_free(key[0], end, dofs)
        self._prescribed[key] = _Prescribed(dofs, displacement)
        self._constrained = None

    def _check_end_free(self, k: int, end, dofs) -> None:
        if (k, int(dofs[0])) in self._prescribed:
            raise ValueError(f"fiber {k} end {end!r} already has a boundary condition (fix/prescribe); "
                             "an end is fixed, prescribed or attached to a body, only one of them")
        for att in self.attachments:
            if att.dofs[0] == dofs[0]:
                raise ValueError(f"fiber {k} end {end!r} is already attached to body {att.body!r}; "
                                 "an end is fixed, prescribed or attached to a body, only one of them")

    def attach(self, fiber: Fiber | int | str, end: str | int, body: str, *, point=None, name: str | None = None):
        """Tie a fiber end to a body-fixed point (paper eq. 49a: x(end) = ĉ(q)).

        The end's 3 position DOFs become dependent, u_D = c(q) = ĉ(q) − X
        (eq. 54c); its slope stays free.  The force the fiber exerts on the
        body there (eq. 62) is :meth:`attachment_forces`.

        Parameters
        ----------
        fiber, end
            The fiber and ``"start"`` or ``"end"``.
        body
            Name of a body of the model's rigid system (or ``"ground"``).
        point
            The body point in the reference configuration (q = 0), or the
            name of one of the body's ``points``.  Default: the fiber end's
            reference position.  It must coincide with the fiber end.
        name
            Label of the attachment (default ``"<fiber>.<end>"``).

        Returns
        -------
        skfiber.coupling.Attachment

        Examples
        --------
        >>> from skfiber import Fiber, Model
        >>> from skfiber.rigid import Body, Revolute, RigidSystem
        >>> system = RigidSystem()
        >>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0.5, 0, 0), radius=0.01, mass=1.0),
        ...                 joint=Revolute(axis=(0, 1, 0))) and None
        >>> fiber = Fiber.straight((0.5, 0, 0.4), (0.5, 0, 0), n_elements=2)   # hangs from above onto the rod's tip
        >>> model = Model([fiber], rigid=system); model.fix(fiber, "start")
        >>> tip = model.attach(fiber, "end", "rod", name="tip")
        >>> tip.name, tip.body, model.dependent_dofs.tolist()
        ('tip', 'rod', [12, 13, 14])
        """
        self.memo.clear()
        if self.rigid is None:
            raise ValueError("attach() needs a rigid system: create the model as Model(fibers, rigid=system)")
        d = self.discretization
        k = d.fiber_index(fiber)
        dofs = d.end_dofs(k, end)
        self._check_end_free(k, end, dofs)
        label = name or f"{self.fibers[k].name or k}.{end}"
        att = new_attachment(self.rigid, body, point, fiber=k, end=end, dofs=dofs, reference=d.reference_dofs[dofs],
                             name=label, taken={a.name for a in self.attachments})
        self.attachments.append(att)
        return att

    @property
    def dependent_dofs(self) -> np.ndarray:
        """Position DOFs of attached fiber ends (u_D = c(q)), attachment by attachment."""
        if not self.attachments:
            return np.zeros(0, dtype=int)
        return np.concatenate([a.dofs for a in self.attachments])

    def attachment_forces(self, state: "State") -> dict[str, np.ndarray]:
        """Force (N) each attached fiber exerts on its body at ``state`` (paper eq. 62).

        It is −G_D, the negative fiber residual (inertia + internal + contact −
        external) at the attached end, evaluated with the state's velocity and
        (backward-Euler) acceleration: the force at the insertion point.
        Called from a ``simulate`` callback it reuses the residual of the
        step's last Newton evaluation (same state, bit-identical result).

        Examples
        --------
        >>> import skfiber as sf
        >>> from skfiber.rigid import Body, Revolute, RigidSystem
        >>> system = RigidSystem()
        >>> system.add_body(Body("rod", start=(0, 0, 0), axis=(0.5, 0, 0), radius=0.01, mass=1.0),
        ...                 joint=Revolute(axis=(0, 1, 0))) and None
        >>> fiber = sf.Fiber.straight((0.5, 0, 0.4), (0.5, 0, 0), n_elements=2, radius=0.05, law=sf.prestress(1e4))
        >>> model = sf.Model([fiber], rigid=system); model.fix(fiber, "start")
        >>> _ = model.attach(fiber, "end", "rod", name="tip")
        >>> force = model.attachment_forces(model.initial_state())["tip"]   # the prestress pulls the tip up: π r0² σ0
        >>> round(float(force[2]), 2), float(abs(force[:2]).max())
        (78.54, 0.0)
        """
        check_state(state)
        if not self.attachments:
            return {}
        if self.rigid is not None:
            self.set_coordinates(state.q)
        self._check_form_numbers()
        residual = self.memo.lookup(state.u, state.v, state.a, state.t, self._coordinates)
        if residual is None:  # not the state of the step's last Newton evaluation
            residual = self.evaluate(state.u, state.v, state.a, state.t, c_v=0.0, c_a=0.0).residual
        return {a.name: -residual[a.dofs] for a in self.attachments}

    def set_coordinates(self, q) -> None:
        """Set the rigid coordinates q seen by contacts with body cylinders."""
        self._coordinates = np.array(q, dtype=float)
        for contact in self.contacts:
            setter = getattr(contact, "set_coordinates", None)
            if setter is not None:
                setter(q)

    def held_fibers(self) -> set[int]:
        """Indices of the fibers with at least one end fixed, prescribed or attached to a body."""
        return {k for k, _ in self._prescribed} | {int(a.fiber) for a in self.attachments}

    @property
    def constrained_dofs(self) -> np.ndarray:
        """The DOFs of fixed and prescribed ends (read-only; attached ends: :attr:`dependent_dofs`)."""
        if self._constrained is None:
            dofs = [p.dofs for p in self._prescribed.values()]
            self._constrained = np.concatenate(dofs) if dofs else np.zeros(0, dtype=int)
            self._constrained.flags.writeable = False
        return self._constrained

    def prescribed_displacement(self, t: float, load_factor: float = 1.0) -> np.ndarray:
        """Values of the constrained DOFs at time t (same order as ``constrained_dofs``)."""
        if all(p.displacement is None for p in self._prescribed.values()):  # fixed ends only
            return np.zeros(self.constrained_dofs.size)
        out = []
        for (k, _), p in self._prescribed.items():
            if p.displacement is None:
                out.append(np.zeros(3))
                continue
            value = np.asarray(p.displacement(t), dtype=float)
            if value.shape != (3,) or not np.all(np.isfinite(value)):
                raise ValueError(f"the prescribed displacement of fiber {k} (model.prescribe) returned "
                                 f"{value.tolist()} at t = {t:g} s; displacement(t) must return 3 finite numbers (m)")
            out.append(load_factor * value)
        return np.concatenate(out) if out else np.zeros(0)

    # --- loads ----------------------------------------------------------
    def _add_load(self, kind: str, value: VectorField, fibers) -> None:
        d = self.discretization
        elements = None if fibers is None else np.isin(d.element_fiber, [d.fiber_index(f) for f in fibers])
        self.loads.add(kind, value, elements)
        self.memo.clear()

    def add_body_force(self, b0: VectorField, *, fibers: Iterable | None = None) -> None:
        """Body force b0 per reference volume (N/m³): 3 numbers or f(θ, t) → (3, …).

        ``fibers``: the fibers it acts on (objects, indices or names); default all.

        Examples
        --------
        >>> from skfiber import Fiber, Model
        >>> model = Model([Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, radius=0.05)])
        >>> model.add_body_force((0.0, 0.0, -1000.0))
        >>> round(float(model.external_force(0.0)[2::6].sum()), 4)   # the z forces on the nodes: b0 π r0² L
        -7.854
        """
        self._add_load("body", b0, fibers)

    def add_line_load(self, q: VectorField, *, fibers: Iterable | None = None) -> None:
        """Line load q per metre of reference length (N/m): 3 numbers or f(θ, t) → (3, …).

        ``fibers``: the fibers it acts on (objects, indices or names); default all.

        Examples
        --------
        >>> import numpy as np
        >>> from skfiber import Fiber, Model
        >>> model = Model([Fiber.straight((0, 0, 0), (2, 0, 0), n_elements=2)])
        >>> model.add_line_load(lambda theta, t: np.stack([0 * theta, 0 * theta, -5.0 * t + 0 * theta]))  # grows in t
        >>> round(float(model.external_force(0.5)[2::6].sum()), 6)   # the z forces on the nodes: q(t) L
        -5.0
        """
        self._add_load("line", q, fibers)

    def add_gravity(self, g: Sequence[float] = (0.0, 0.0, -9.81), *, fibers: Iterable | None = None) -> None:
        """Gravity: body force ρ0 g (g in m/s²) on the fibers.

        Parameters
        ----------
        g
            The gravitational acceleration (m/s²), 3 numbers; default (0, 0, −9.81): z up.
        fibers
            The fibers it acts on (objects, indices or names); default all.

        Examples
        --------
        >>> from skfiber import Fiber, Model
        >>> model = Model([Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
        >>> model.add_gravity()
        """
        try:
            g = np.asarray(g, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"g must be 3 numbers (m/s²), e.g. (0, 0, -9.81); got {g!r}") from None
        if g.shape != (3,):
            raise ValueError(f"g must have 3 components, got shape {g.shape}")
        if not np.all(np.isfinite(g)):
            raise ValueError(f"g must be finite (m/s²), got {g.tolist()}")
        # constant in time: stored as a field (N/m³) and assembled once
        self._add_load("body", g[:, None, None] * self.discretization.density, fibers)

    def add_contact(self, contact):
        """Add a contact (fiber–fiber or fiber–cylinder, :mod:`skfiber.contact`).

        Its residual and tangent blocks join the assembled system and its
        ``max_step`` joins Newton's safeguard (paper eqs. 69–73).

        Examples
        --------
        >>> from skfiber import Fiber, Model
        >>> from skfiber.contact import CylinderContact, PenaltyLaw
        >>> model = Model([Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2, radius=0.01)])
        >>> bone = CylinderContact((0.5, 0, -0.1), (0, 1, 0), 0.05, law=PenaltyLaw(stiffness=1000.0, gamma=2.0),
        ...                        name="bone")                  # a fixed cylinder below the fiber, along y
        >>> model.add_contact(bone).name, len(model.contacts)
        ('bone', 1)
        """
        self.memo.clear()
        if not isinstance(contact, Contact):
            raise TypeError(
                f"{contact!r} is not a contact: it needs a `name`, `evaluate(model, u, t, tangent=...)` "
                "and `max_step(model, u, du, t, delta_bar=...)` (see skfiber.contact.base.Contact)"
            )
        if contact.name in self._taken_names():
            raise ValueError(f"the name {contact.name!r} is taken; give the contact another name")
        system = getattr(contact, "system", None)
        if system is not None and system is not self.rigid:
            raise ValueError(f"contact {contact.name!r} belongs to a body of another rigid system; "
                             "create the model with Model(fibers, rigid=<that system>)")
        check = getattr(contact, "check_model", None)
        if check is not None:  # e.g. fiber–fiber contact needs two fibers
            check(self)
        self.contacts.append(contact)
        return contact

    def max_step(self, u: np.ndarray, du: np.ndarray, t: float, *, delta_bar: float) -> float:
        """Largest admissible fraction δ ∈ (0, 1] of a Newton step (all contacts)."""
        delta = 1.0
        for contact in self.contacts:
            delta = min(delta, float(contact.max_step(self, u, du, t, delta_bar=delta_bar)))
        return delta

    def _taken_names(self) -> set:
        return ({"cable", "loads"} | set(self._builtin_terms) | {t.name for t in self.terms}
                | {c.name for c in self.contacts})

    def add_term(self, residual, tangent=None, *, name: str | None = None) -> Term:
        """Add a term to the weak form (see :mod:`skfiber.terms`).

        Parameters
        ----------
        residual
            A ``LinearForm`` (or function ``(v, w)``): the term's residual, on
            the left of "= 0" (internal minus external).
        tangent
            Its ∂/∂u as a ``BilinearForm`` (or function ``(u, v, w)``), or
            ``None`` (default): derived.  The form compiler differentiates the
            traced residual symbolically (∂/∂x + c_v ∂/∂ẋ + c_a ∂/∂ẍ); a form it
            cannot trace gets the complex-step tangent on the numpy path.  An
            explicit tangent is compiled with the residual (and used as written
            on the numpy path, ``Model(compiled=False)``); check it with
            :func:`skfiber.check_tangent`.
        name
            The term's name (default ``term<k>``), for ``parts`` and reports.

        Examples
        --------
        >>> from skfem import LinearForm
        >>> from skfem.helpers import dot
        >>> from skfiber import Fiber, Model
        >>> from skfiber.terms import d2
        >>> model = Model([Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)])
        >>> @LinearForm
        ... def bending(v, w):                   # EI ∫ x_ss · ξ_ss dS
        ...     return 1e-4 * dot(d2(w.x), d2(v)) / w.J**3
        >>> model.add_term(bending, name="bending").name
        'bending'
        """
        if isinstance(residual, Term) and (tangent is not None or (name is not None and name != residual.name)):
            raise ValueError(f"add_term got a Term ({residual.name!r}) with its own name and tangent: give "
                             "tangent= and name= to Term(...), or give add_term the residual form instead")
        self.memo.clear()
        term = (residual if isinstance(residual, Term)
                else Term(residual, tangent, f"term{len(self.terms)}" if name is None else name))  # (Term checks it)
        if term.name in self._taken_names():
            raise ValueError(f"the name {term.name!r} is taken (names in use: {sorted(self._taken_names())}); give "
                             "another name, or use replace_term to change an existing term")
        self.terms.append(term)
        self._form_kernel = self._form_numbers = None
        return term

    @property
    def term_names(self) -> list[str]:
        """The names of the residual terms, built-in first: ``internal_force``, ``inertia``, then added ones."""
        return [t.name for t in self.all_terms]

    @property
    def all_terms(self) -> list[Term]:
        """Every residual term: the built-in ones (internal force, inertia), then :attr:`terms`."""
        return list(self._builtin_terms.values()) + list(self.terms)

    def replace_term(self, name: str, residual, tangent=None) -> Term:
        """Replace the form of a term, built-in (``"internal_force"``, ``"inertia"``) or added.

        Parameters
        ----------
        name
            The term's name (:attr:`term_names`; ``"cable"`` means ``"internal_force"``).
        residual, tangent
            As in :meth:`add_term`: the new residual form, and optionally its
            tangent (default: derived).

        Examples
        --------
        >>> from skfem import LinearForm
        >>> from skfem.helpers import dot
        >>> from skfiber import Fiber, Model, forms
        >>> model = Model([Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=4)])
        >>> @LinearForm
        ... def stiffer(v, w):                   # twice the paper's internal force
        ...     return 2 * w.area * w.S * dot(w.x_s, forms.ds(v, w)) * w.J
        >>> model.replace_term("internal_force", stiffer).name
        'internal_force'
        """
        name = "internal_force" if name == "cable" else name
        term = Term(residual, tangent, name)
        self.memo.clear()
        self._form_kernel = self._form_numbers = None
        if name in self._builtin_terms:
            self._builtin_terms[name] = term
            return term
        for k, old in enumerate(self.terms):
            if old.name == name:
                self.terms[k] = term
                return term
        raise ValueError(f"no term named {name!r}; the model has {self.term_names}")

    @property
    def form_kernel(self) -> FormKernel:
        """The compiled kernel of the residual terms (:mod:`skfiber.compile`), made on first use, and made again
        when a number the forms read through a name has changed (:mod:`skfiber.compile.form_numbers`)."""
        self._check_form_numbers()
        if self._form_kernel is None:
            terms = [(t.name, t.residual, t.tangent) for t in self.all_terms]
            self._form_kernel = FormKernel(terms, self.discretization, kinematics=forms.cable_kinematics,
                                           law_symbols=SYMBOLS)
        kernel = self._form_kernel
        for name, construct in kernel.untraced.items():
            if name not in self._warned_untraced:
                self._warned_untraced.add(name)
                warn(f"the term {name!r} cannot be compiled ({construct}); it runs with numpy, "
                     "several times slower", RuntimeWarning)
        return kernel

    def _check_form_numbers(self) -> None:
        """Forget the traced forms and the residual kept when a number the terms' forms read through a name
        (a global, a closed-over variable, an attribute) differs from the one they were traced with; warn once
        when, within one run (:meth:`run_scope`), that happens ten times and in at least one of every
        :data:`RETRACE_SHARE` evaluations (not counting a change found at the run's first evaluation: a
        sweep's)."""
        if self._form_numbers is None:
            self._form_numbers = FormNumbers(f for term in self.all_terms for f in (term.residual, term.tangent))
        numbers = self._form_numbers
        first, self._run_begins = self._run_begins, False
        counted = self._in_run and not first
        self._retrace_checks += counted
        if not numbers.changed():
            return
        self._form_kernel = None
        self.memo.clear()
        if not counted:
            return
        self._retraces += 1
        if (not self._warned_retraces and self._retraces >= RETRACES_WARNED
                and self._retraces * RETRACE_SHARE >= self._retrace_checks):
            self._warned_retraces = True
            names = ", ".join(numbers.changed_names)
            warn(f"the forms were traced again {self._retraces} times in {self._retrace_checks} evaluations of "
                 f"this run (a trace costs milliseconds); the last time {names}, which a form reads, had "
                 "changed.  A value that varies during a run (set by a callback or by the form itself) belongs "
                 "in the form, as a function of w.t or of the state", RuntimeWarning)

    def __getstate__(self):
        """The model's attributes for a copy or a pickle, outside any run (a copy made during a run, by a
        callback, is not in it)."""
        state = dict(self.__dict__)
        state.update(_in_run=False, _run_begins=False, _retraces=0, _retrace_checks=0)
        return state

    @contextlib.contextmanager
    def run_scope(self):
        """The span of one run, for the check of the forms' numbers (:func:`one_run` puts
        :func:`skfiber.simulate`, :func:`skfiber.solve_static` and the other run functions in one): a parameter
        changed before it (a sweep) is found at its first evaluation and is not counted; one that keeps changing
        within it is warned once.  A run inside a run (the steps of :func:`skfiber.run.run_simulation`) is
        part of the outer one.

        Examples
        --------
        >>> import skfiber as sf
        >>> model = sf.Model([sf.Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)])
        >>> with model.run_scope():
        ...     pass
        """
        outer = self._in_run
        if not outer:
            self._in_run, self._run_begins = True, True
            self._retraces = self._retrace_checks = 0
        try:
            yield self
        finally:
            if not outer:
                self._in_run = self._run_begins = False

    def external_force(self, t: float) -> np.ndarray:
        """Assembled external load vector at time t (:meth:`skfiber.loads.ExternalLoads.force`); shared between
        calls: read it, do not change it."""
        return self.loads.force(t)

    # --- evaluation -----------------------------------------------------
    def activations(self, t: float) -> np.ndarray:
        """α(t) at the quadrature points, shape (e, 1) (cached per t and per the fibers' ``activation``)."""
        key = (float(t), tuple(map(_ACTIVATION, self.fibers)))  # the same activations at the same t
        if self._activation_cache is None or self._activation_cache[0] != key:
            alpha = np.array([f.activation_at(t) for f in self.fibers])
            self._activation_cache = (key, alpha[self.discretization.element_fiber][:, None])
        return self._activation_cache[1]

    def coefficients(self, u: np.ndarray, v: np.ndarray, t: float, *, c_v: float, a: np.ndarray | None = None,
                     c_a: float = 0.0) -> FormExtraParams:
        """``w`` for the forms at a state, evaluated with numpy (what the form compiler traces symbolically):
        the fields ``x``, ``xdot``, ``xddot`` (zero without ``a``) and ``X``, the coefficients and the
        kinematics and stress of :mod:`skfiber.forms`, and the time scheme's ``c_v`` and ``c_a``."""
        d = self.discretization
        asm = d.assembler
        a = np.zeros(self.n_dofs) if a is None else a
        x, xdot, xddot = asm.interpolate_many(np.stack([d.reference_dofs + u, v, a]))
        kin = forms.cable_kinematics(x, xdot, d.jacobian)
        S, dS, dSr = self._stress(kin.lam, kin.lamdot, t)
        w = asm.parameters(
            x=x, xdot=xdot, xddot=xddot, X=d.reference_field, theta=d.theta, t=t, J=d.jacobian, area=d.area,
            rho=d.density, gamma_m=d.muscle_fraction, alpha=self.activations(t), c_v=c_v, c_a=c_a,
            x_s=kin.x_s, xdot_s=kin.xdot_s, lam=kin.lam, lamdot=kin.lamdot,
            S=S, dS_dlam=dS, dS_dlamdot=dSr,
        )
        return w

    def _stress(self, lam: np.ndarray, lamdot: np.ndarray, t: float):
        """S, ∂S/∂λ, ∂S/∂λ̇ (e, q) of the fibers' laws (:class:`skfiber.law_kernels.FiberStress`)."""
        if self._fiber_stress is None:
            self._fiber_stress = FiberStress(self.discretization, compiled=self.compiled)
        return self._fiber_stress(lam, lamdot, t, self.activations(t))

    def evaluate(
        self,
        u: np.ndarray,
        v: np.ndarray,
        a: np.ndarray,
        t: float,
        *,
        c_v: float,
        c_a: float,
        load_factor: float = 1.0,
        parts: Iterable[str] | None = None,
        tangent: bool = True,
    ) -> Evaluation:
        """Residual (and tangent) of the semi-discrete equations.

        Parameters
        ----------
        u, v, a
            Displacement, velocity and acceleration DOF vectors.
        t
            The time (s): of the activations, loads and prescribed displacements.
        c_v, c_a
            ∂v/∂u and ∂a/∂u of the time scheme (statics: 0, 0).
        load_factor
            Scales the external loads (load stepping).
        parts
            Restrict to some contributions: ``"cable"``, ``"inertia"``,
            ``"loads"`` and term names (for checks); default all.
        tangent
            Prepare the tangent in the same pass (the compiled kernel's pointwise tangent);
            False when it will probably not be asked for (modified Newton): it is then
            computed when first asked for, by a second pass.
        """
        names = self._part_names(None)
        parts = names if parts is None else self._part_names(parts)
        fp = fiber_part(self, u, v, a, t, c_v=c_v, c_a=c_a, load_factor=load_factor, parts=parts, every=parts is names,
                        tangent=tangent)
        R, ref = fp.residual, fp.reference_force
        if not fp.finite:
            bad_state = [name for name, x in (("u", u), ("v", v), ("a", a)) if not np.isfinite(x).all()]
            if bad_state:
                raise FloatingPointError(f"non-finite residual at t = {t:.6g} s: the state ({', '.join(bad_state)}) "
                                         "holds a NaN or an infinity")
            d = self.discretization
            with np.errstate(all="ignore"):
                w = self.coefficients(u, v, t, c_v=c_v, a=a, c_a=c_a)
            bad = np.flatnonzero(~np.isfinite(w["S"]).all(axis=1))
            where = ""
            if bad.size:
                k = int(d.element_fiber[bad[0]])
                lam = w["lam"][bad[0]]
                where = (f": the stress of fiber {k} ({d.fibers[k].law!r}) is not finite at "
                         f"λ ∈ [{np.min(lam):.4g}, {np.max(lam):.4g}]")
            else:
                where = self._non_finite_terms(u, v, a, t, c_v=c_v, c_a=c_a, parts=parts)
            raise FloatingPointError(f"non-finite residual at t = {t:.6g} s{where}")
        n_active = 0
        active_contacts = []
        margins = {} if self.contacts and parts == names else None
        for contact in self.contacts:
            if contact.name not in parts:
                continue
            ce = contact.evaluate(self, u, t, tangent=False)
            if margins is not None:
                m = getattr(ce, "margins", None)
                margins = None if m is None else {**margins, contact.name: m}
            if not (ce.admissibility.size == 0 or ce.admissibility.min() > 0) or not math.isfinite(vector_norm(ce.residual)):
                worst = float(np.min(ce.admissibility)) if ce.admissibility.size else float("nan")
                raise FloatingPointError(
                    f"inadmissible contact state at t = {t:.6g} s in {contact.name!r}: "
                    f"min 1 + γg = {worst:.3g} (penetration beyond the penalty law's limit)"
                )
            R += ce.residual
            ref = max(ref, vector_norm(ce.residual))
            active_contacts.append(contact)
            n_active += int(ce.n_active)
        extra = []
        if active_contacts:
            u_frozen = u.copy()
            q_frozen = None if self._coordinates is None else self._coordinates.copy()

            def contact_tangents():
                if q_frozen is not None:  # body cylinders at the pose of this evaluation
                    self.set_coordinates(q_frozen)
                out = []
                for contact in active_contacts:
                    ce = contact.evaluate(self, u_frozen, t, tangent=True)
                    out.append((ce.rows, ce.cols, ce.values))
                return out
            extra = contact_tangents
        if self.memo.enabled and parts == names and load_factor == 1.0:  # R does not depend on c_v, c_a
            q = None if self._coordinates is None else self._coordinates.copy()
            self.memo.store(np.array(u, dtype=float), np.array(v, dtype=float), np.array(a, dtype=float), t, q,
                            R.copy())
        return Evaluation(
            R, fp.tangent_fn, reference_force=ref, min_stretch=fp.min_stretch, roundoff=fp.roundoff,
            extra=extra, n_active_contacts=n_active, margins=margins,
        )

    def _non_finite_terms(self, u, v, a, t, *, c_v, c_a, parts) -> str:
        """The words naming the terms among ``parts`` whose residual is not finite (with the stress finite:
        a nan or infinite parameter of a form, or a value outside its domain), or ""."""
        bad = []
        for term in self.all_terms:
            if term.name in parts:
                with np.errstate(all="ignore"):
                    part = fiber_part(self, u, v, a, t, c_v=c_v, c_a=c_a, load_factor=0.0, parts={term.name},
                                      every=False, tangent=False)
                if not part.finite:
                    bad.append(repr(term.name))
        if not bad:
            return ""
        return (f": the term{'s' if len(bad) > 1 else ''} {', '.join(bad)} give{'' if len(bad) > 1 else 's'} a "
                "non-finite value (a nan or infinite parameter of the form, or a value outside its domain: a square "
                "root or logarithm of a negative number, a division by 0)")

    def _part_names(self, parts) -> set:
        """``parts`` checked against the model's names (``"cable"`` = ``"internal_force"``); None: all (the
        same set object while the model's terms and contacts stay)."""
        key = (tuple(map(id, self.all_terms)), tuple(map(id, self.contacts)))
        if self._all_parts is None or self._all_parts[0] != key:
            self._all_parts = (key, frozenset({"loads"} | set(self.term_names) | {c.name for c in self.contacts}))
        names = self._all_parts[1]
        if parts is None:
            return names
        if isinstance(parts, str):
            raise TypeError(f"parts must be a list of names, got the string {parts!r}; e.g. parts=[{parts!r}]")
        chosen = {"internal_force" if p == "cable" else p for p in parts}
        unknown = chosen - names
        if unknown:
            raise ValueError(f"unknown parts {sorted(unknown)}; pick from {sorted(names | {'cable'})}")
        return chosen

    def tangent_matrix(self, evaluation: Evaluation) -> sps.csr_matrix:
        """The global tangent as a CSR matrix."""
        K = self.discretization.assembler.to_csr(evaluation.element_matrices)
        for rows, cols, vals in evaluation.extra:
            K = K + sps.csr_matrix((vals, (rows, cols)), shape=K.shape)
        return K

    def initial_state(self, t: float = 0.0, *, q=None) -> State:
        """The reference configuration at rest (prescribed ends set at t).

        With a rigid system: coordinates ``q`` (default 0) at rest, attached
        fiber ends moved with their bodies.

        Examples
        --------
        >>> from skfiber import Fiber, Model
        >>> fiber = Fiber.straight((0, 0, 0), (1, 0, 0), n_elements=2)
        >>> model = Model([fiber]); model.fix(fiber, "start")
        >>> model.prescribe(fiber, "end", lambda t: (0.01 * t, 0.0, 0.0))
        >>> state = model.initial_state(t=2.0)           # at rest, the end at its displacement at t = 2 s
        >>> state.t, state.u[model.constrained_dofs].tolist(), float(abs(state.v).max())
        (2.0, [0.0, 0.0, 0.0, 0.02, 0.0, 0.0], 0.0)
        """
        u = np.zeros(self.n_dofs)
        u[self.constrained_dofs] = self.prescribed_displacement(t)
        if self.rigid is None:
            if q is not None and np.size(q):
                raise ValueError("q is given but the model has no rigid system")
            return State(t, u, np.zeros(self.n_dofs))
        q = np.zeros(self.rigid.n) if q is None else np.asarray(q, dtype=float)
        if q.shape != (self.rigid.n,):
            raise ValueError(f"q must have {self.rigid.n} entries {list(self.rigid.coordinate_names)}, got shape {q.shape}")
        if self.attachments:
            u[self.dependent_dofs] = attachment_kinematics(self, q, t, hessian=False).displacement
        return State(t, u, np.zeros(self.n_dofs), q=q)
