"""The form compiler: residual forms traced on symbolic jets, tangents derived, one numba kernel per model.

* :mod:`skfiber.compile.tracer` — evaluate an unchanged scikit-fem form on symbolic jets;
* :mod:`skfiber.compile.codegen` — residual coefficients, the consistent tangent, common subexpressions
  and the generated source;
* :mod:`skfiber.compile.kernel` — :class:`~skfiber.compile.kernel.FormKernel`, the kernel of a model's
  terms, cached on disk and keyed by its source.

``docs/theory.md`` ("From forms to kernels") describes the whole path.
"""
