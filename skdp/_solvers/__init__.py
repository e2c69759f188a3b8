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

from ._dpsgd import solve_dpsgd
from ._objective_perturbation import solve_objective_perturbation
from ._output_perturbation import solve_output_perturbation
from ._phased import solve_phased
from ._resque import solve_resque
from ._result import SolverResult
from ._rrpsgd import solve_rrpsgd
from ._warm_gd import solve_warm_gd
from ._spider import solve_spider
from ._zeroth_order import solve_zeroth_order, solve_zeroth_order_naive

SOLVERS = {
    "output_perturbation": solve_output_perturbation,
    "objective_perturbation": solve_objective_perturbation,
    "dpsgd": solve_dpsgd,
    "phased": solve_phased,
    "resque": solve_resque,
    "spider": solve_spider,
    "rrpsgd": solve_rrpsgd,
    "warm_gd": solve_warm_gd,
    "zeroth_order": solve_zeroth_order,
    "zeroth_order_naive": solve_zeroth_order_naive,
}
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

#: solvers of the convex models (``solver="auto"`` picks one: skdp.linear_model._auto)
CONVEX_SOLVERS = ("objective_perturbation", "output_perturbation", "resque", "phased",
                  "dpsgd")
#: solvers of DPNonconvexRegressor (``solver="auto"`` picks one: skdp.linear_model._auto)
NONCONVEX_SOLVERS = ("warm_gd", "spider", "zeroth_order", "rrpsgd", "dpsgd",
                     "zeroth_order_naive")

__all__ = ["CONVEX_SOLVERS", "NONCONVEX_SOLVERS", "SOLVERS", "SOLVER_OPTIONS", "SECURE_NOISE_SOLVERS",
           "SolverResult",
           "solve_dpsgd", "solve_objective_perturbation", "solve_output_perturbation", "solve_phased", "solve_resque",
           "solve_rrpsgd", "solve_spider", "solve_warm_gd", "solve_zeroth_order", "solve_zeroth_order_naive"]
