"""Private solvers (private module): each returns a :class:`SolverResult`."""

from ._output_perturbation import solve_output_perturbation
from ._result import SolverResult

SOLVERS = {"output_perturbation": solve_output_perturbation}

__all__ = ["SOLVERS", "SolverResult", "solve_output_perturbation"]
