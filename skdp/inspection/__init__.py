r"""What a private pipeline learnt: its additive model's shape functions.

The model a private pipeline releases is additive in the raw columns,
:math:`f(x) = b + \sum_j g_j(x_j)` with :math:`g_j = w_j^\top B_j` (the model's
coefficients on column :math:`j`'s spline basis, one-hot block or scaled value), so each
column's effect can be shown exactly, as DP-EBM's ``explain_global`` does:

* :func:`shape_functions` -- every :math:`g_j` on public points (a grid over the released
  knots, the released categories, the missing bucket), and the intercept;
* :class:`ShapeFunctionDisplay` -- draws them (matplotlib);
* :func:`term_importances` -- one number per column, on the public grid or on rows you pass;
* :func:`contributions` -- every :math:`g_j(x_{ij})` of the rows you pass.

Reading the released model costs no privacy: shape functions and public-grid importances
are post-processing.  Anything computed on private rows (``term_importances(pipe, X)``,
``contributions(pipe, X)``) is a function of those rows and is *not* differentially
private.

>>> from skdp.inspection import ShapeFunctionDisplay, shape_functions, term_importances
"""

from ._additive import contributions
from ._plot import ShapeFunctionDisplay
from ._shape_functions import shape_functions, term_importances

__all__ = ["ShapeFunctionDisplay", "contributions", "shape_functions", "term_importances"]
