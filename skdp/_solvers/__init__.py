"""Private solvers (private module): each returns a :class:`SolverResult`.

``SOLVERS`` maps the estimators' ``solver`` names to solver functions; ``SOLVER_OPTIONS``
lists the estimator parameters each solver takes beyond the shared ones.  Which estimator
accepts which solver is declared by the estimator (its ``_parameter_constraints``):

* convex models (``DPLogisticRegression``, ``DPHuberRegressor``): ``objective_perturbation``
  (Chaudhuri et al. 2011 / Kifer et al. 2012 with the approximate-minimum certificate of
  Iyengar et al. 2019), ``output_perturbation`` (Zhang et al. 2017, Alg. 1), ``phased`` (Feldman, Koren & Talwar 2020 on the exactly
  smoothed loss), ``resque`` (localized DP-SGD with ReSQue blocks, Carmon et al. 2023),
  ``dpsgd`` (Bassily, Smith & Thakurta 2014);
* ``DPNonconvexRegressor``: ``warm_gd`` (a private Huber warm start by objective
  perturbation, then noisy gradient descent on the robust loss), ``spider`` (Liu & Talwar, v2), ``zeroth_order`` and
  ``zeroth_order_naive`` (Zhang, Tran & Cutkosky 2024), ``rrpsgd`` (Zhang et al. 2017,
  Alg. 2), ``dpsgd``.
"""

from collections.abc import MutableMapping
from importlib import import_module

#: solver name -> (module of this package, function); imported on first use, so that
#: importing an estimator does not import every solver's numba kernels
_SOLVER_FUNCTIONS = {
    "output_perturbation": ("_output_perturbation", "solve_output_perturbation"),
    "objective_perturbation": ("_objective_perturbation", "solve_objective_perturbation"),
    "dpsgd": ("_dpsgd", "solve_dpsgd"),
    "phased": ("_phased", "solve_phased"),
    "resque": ("_resque", "solve_resque"),
    "spider": ("_spider", "solve_spider"),
    "rrpsgd": ("_rrpsgd", "solve_rrpsgd"),
    "warm_gd": ("_warm_gd", "solve_warm_gd"),
    "zeroth_order": ("_zeroth_order", "solve_zeroth_order"),
    "zeroth_order_naive": ("_zeroth_order", "solve_zeroth_order_naive"),
}


class _SolverRegistry(MutableMapping):
    """``SOLVERS[name]``: the solver function, its module imported on first lookup.  An
    entry can be set to a function (a solver registered by a subclass, a test's wrapper)."""

    def __init__(self, entries):
        self._entries = dict(entries)

    def __getitem__(self, name):
        entry = self._entries[name]
        if callable(entry):
            return entry
        module, function = entry
        return getattr(import_module(f"{__name__}.{module}"), function)

    def __setitem__(self, name, solver):
        if not callable(solver):
            raise TypeError(f"a solver must be callable, got {solver!r}")
        self._entries[name] = solver

    def __delitem__(self, name):
        del self._entries[name]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)


SOLVERS = _SolverRegistry(_SOLVER_FUNCTIONS)


def __getattr__(name):
    """``solve_*`` and ``SolverResult``, imported on first use (module docstring)."""
    for module, function in _SOLVER_FUNCTIONS.values():
        if function == name:
            return getattr(import_module(f"{__name__}.{module}"), function)
    if name == "SolverResult":
        from ._result import SolverResult

        return SolverResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: solvers whose every release is floating-point safe when given a ``noise_source``
#: (exact discrete noise on a grid, skdp._mechanisms._exact): all of them now; the set stays
#: so that a new solver must opt in (doc/floating_point.rst)
SECURE_NOISE_SOLVERS = frozenset({"output_perturbation", "objective_perturbation", "phased",
                                  "dpsgd", "warm_gd", "rrpsgd", "resque", "zeroth_order",
                                  "zeroth_order_naive", "spider"})

SOLVER_OPTIONS = {
    "output_perturbation": (),
    "objective_perturbation": (),
    "dpsgd": ("batch_size", "n_steps"),
    "phased": ("smoothing", "step_scale"),
    "resque": ("batch_size", "n_epochs", "n_phases", "phase_shrink", "block_size",
               "smoothing", "step_scale", "n_jobs"),
    "spider": ("selection",),
    "rrpsgd": ("batch_size", "n_steps"),
    "warm_gd": ("n_steps",),
    "zeroth_order": ("smoothing_radius",),
    "zeroth_order_naive": ("smoothing_radius",),
}

#: solvers that fit a sparse design on its CSR arrays, without a dense copy (the others
#: densify it, refused above skdp._mechanisms._clipping.DENSE_COPY_MAX_BYTES)
SPARSE_SOLVERS = ("objective_perturbation", "output_perturbation", "dpsgd")

#: solvers of the convex models (``solver="auto"`` picks one: skdp.linear_model._auto)
CONVEX_SOLVERS = ("objective_perturbation", "output_perturbation", "resque", "phased",
                  "dpsgd")
#: solvers of DPNonconvexRegressor (``solver="auto"`` picks one: skdp.linear_model._auto)
NONCONVEX_SOLVERS = ("warm_gd", "spider", "zeroth_order", "rrpsgd", "dpsgd",
                     "zeroth_order_naive")

__all__ = ["CONVEX_SOLVERS", "NONCONVEX_SOLVERS", "SOLVERS", "SOLVER_OPTIONS", "SECURE_NOISE_SOLVERS",
           "SPARSE_SOLVERS",
           "SolverResult",
           "solve_dpsgd", "solve_objective_perturbation", "solve_output_perturbation", "solve_phased", "solve_resque",
           "solve_rrpsgd", "solve_spider", "solve_warm_gd", "solve_zeroth_order", "solve_zeroth_order_naive"]
