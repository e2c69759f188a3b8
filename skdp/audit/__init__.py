"""Black-box statistical privacy audits.

Empirical *lower* bounds on the ε of a mechanism or estimator, from many runs on
two neighbouring datasets: a threshold test chosen on held-out runs, exact
Clopper–Pearson upper bounds on its error rates, and the (ε, δ)-DP hypothesis
testing inequalities. An audit passes iff the lower bound does not exceed the
claimed ε; a failing audit proves a privacy bug (up to the stated confidence).
A passing audit proves nothing on its own, which is why every audit in the test
suite is paired with a deliberately under-noised variant that must be caught.
"""

from ._blackbox import (
    AuditResult,
    audit_estimator,
    clopper_pearson,
    epsilon_lower_bound,
    project_outputs,
)

__all__ = [
    "AuditResult",
    "audit_estimator",
    "clopper_pearson",
    "epsilon_lower_bound",
    "project_outputs",
]
