"""Private solvers (private module): each returns a :class:`SolverResult`.

``SOLVERS`` maps the estimators' ``solver`` names to solver functions; ``SOLVER_OPTIONS``
lists the estimator parameters each solver takes beyond the shared ones.
"""

from ._dpsgd import solve_dpsgd
from ._output_perturbation import solve_output_perturbation
from ._result import SolverResult
from ._spider import solve_spider

SOLVERS = {"output_perturbation": solve_output_perturbation, "dpsgd": solve_dpsgd,
           "spider": solve_spider}
SOLVER_OPTIONS = {"output_perturbation": (), "dpsgd": ("batch_size", "n_steps"),
                  "spider": ("selection",)}

__all__ = ["SOLVERS", "SOLVER_OPTIONS", "SolverResult", "solve_dpsgd", "solve_output_perturbation",
           "solve_spider"]
