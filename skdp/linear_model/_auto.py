r"""The ``auto`` rules: what a fit will do, decided from public quantities only.

Every default that is not a plain constant lives here -- the solver, the L2 strength
``alpha``, dpsgd's batch size and step count -- so that one page says what a fit will
do.  The estimators call :func:`resolve_fit_plan` right before the solver runs, and the
ledger planner (:func:`skdp.linear_model._base.planned_dp_event`) calls the same function,
so the planned event is the fitted one.  The rules read only ``n``, the number of
coefficients ``p``, ``epsilon``, ``delta``, the loss (binary / multinomial / Huber /
absolute), the public bounds and the user's explicit parameters -- never ``X`` or ``y``:
replacing one row cannot change a decision.

Solver (convex models)
----------------------
* Binary logistic and Huber (``huber_threshold > 0``): ``objective_perturbation``.  Its
  noise enters through the objective, so it is damped by the data's own curvature
  (``w - w* ~ -(n H)^{-1} b``, ``H`` the Hessian): directions the data determine well get
  little noise whatever ``alpha``.  Output perturbation adds ``2L/(n alpha mu)`` to *every*
  coordinate, which forces a large ``alpha`` at small ``n``; gradient methods pay for
  their many noisy steps.  (Measured in ``benchmarks/bench_defaults.py``.)  Two cells
  of that benchmark favour dpsgd (wine at epsilon = 0.5, bike at 0.1, by 0.02-0.04 R^2);
  no public quantity separates them from the many where objective perturbation wins
  (``benchmarks/results/calibrate_switch.md``), and a private choice between the two
  cannot pay: a two-candidate selection at the same total budget fits its models at
  under half of it (0.224 at epsilon = 0.5), and even a perfect selector at that budget
  scores 0.045-0.19 R^2 below this rule in every wine and bike cell from epsilon = 0.1 to
  2 (``benchmarks/results/solver_selection.md``).
* Multinomial (three or more classes): ``dpsgd`` with the practical schedule below
  (objective perturbation's multinomial analysis is not done; output perturbation's
  noise scales as ``1/(n alpha)``).
* Absolute loss (``huber_threshold = 0``): ``phased`` (one pass on the exactly smoothed
  loss; the only smooth-free convex solver with a closed-form step).
* ``delta = 0``: the pure-DP variant of the rule's solver when it has one
  (``objective_perturbation``), else ``output_perturbation``.
* ``calibration="paper"``: ``output_perturbation`` (the solver with the paper mode the
  benchmarks reproduce).

alpha
-----
The rule balances the regulariser's bias against the noise, with the GDP parameter
``mu`` of the budget (``(epsilon, delta)``-DP of a ``mu``-GDP release; for ``delta = 0``,
``epsilon/sqrt(p + 1)``, the per-coordinate equivalent of norm-Laplace noise).  With a
comparator of norm ``W`` the excess risk of a release whose noise in ``w`` is ``s`` per
coordinate, in directions of no curvature, is about ``p s^2 lambda/2 + lambda W^2/2``:

* **objective perturbation / gradient methods**: the noise on the mean gradient is
  ``sigma/n`` with ``sigma = 2L/mu``, so ``s = sigma/(n lambda)`` and the bound
  ``p sigma^2/(2 n^2 lambda) + lambda W^2/2`` is minimal at
  ``lambda = sigma sqrt(p)/(n W)`` (Kifer, Smith & Thakurta 2012, Thm 4 has the same
  scaling);
* **objective perturbation** first pays the Jacobian term ``eps_J = log(1 + beta/(n
  lambda))`` out of its budget, so its noise ``sigma(lambda) = 2L/mu(lambda)`` grows as
  ``lambda`` falls, and its output step adds ``sigma_out(lambda)`` per coordinate, which
  grows as ``1/lambda`` once the certificate's rounding floor binds (millions of rows);
  its rule (:func:`objective_perturbation_alpha`) minimises ``p sigma(lambda)^2/(2 n^2
  lambda) + sigma_out(lambda)^2 (beta + p lambda)/2 + lambda W^2/2`` over ``lambda`` at or
  above its privacy floor -- the closed form where neither effect matters, more shrinkage
  where one does;
* **output perturbation**: ``s = 2L/(n lambda mu)`` on every coordinate, weighted by the
  average curvature ``c R^2/p`` (trace of the Hessian over ``p``): minimising
  ``c R^2 s^2/2 + lambda W^2/2`` gives ``lambda = (c R^2 (2L/(n mu))^2/W^2)^{1/3}``.

``W``, the comparator's norm, is where the worst case above is too pessimistic: it puts
all ``p`` directions at the critical curvature ``h = lambda``, the only curvature at which
the noise costs ``sigma^2/(8 n^2 lambda)`` per direction (in general
``sigma^2 h/(2 n^2 (h + lambda)^2)``).  Real designs have a spread-out spectrum, and the
more the privacy sample size ``t = n mu/sqrt(p)`` grows, the fewer directions sit near the
(shrinking) critical curvature, so less shrinkage is needed than the flat rule says.  The
rule therefore takes, for the gradient-noise solvers,

    ``W = (M_0/R) (t/t_0)^gamma``, with ``t = n mu/sqrt(p)``, ``t_0 = 1000``:

a model whose margins ``x.w`` reach ``M_0 (t/t_0)^gamma`` on rows of norm ``R`` -- up to
``t = SIZE_MAX = 2e4``, the largest privacy sample size of the calibration cells (16,717),
beyond which the fitted power law is not extrapolated and ``W`` stays constant (``alpha``
still falls as ``1/n``).  Extrapolated, it asked for margins of ~1,500 at ``n = 10^8``
(``t ~ 5e6``), and objective perturbation's ``alpha`` fell until the certificate's rounding
floor set the output noise.
``M_0`` (``MARGIN``: 54 for the classifiers, whose margins are logits; 29 for the
regressors, in target units; ``OP_MARGIN`` = 83 and 49 in objective perturbation's rule)
and ``gamma = 1/3`` (``SIZE_EXPONENT``) are the calibrated constants, defined with the
formula in :mod:`skdp._solvers._objective_perturbation`
(which ``warm_gd``'s warm start also uses).  They were fitted jointly on synthetic logistic
and Huber problems (strong and weak signal) -- dense decaying and one-hot designs, ``n``
from 500 to 3e4, ``p`` from 10 to 100, ``epsilon`` from 0.5 to 10, public bounds tight
(rows of norm up to the bound) and loose (99 % of the rows within 0.5 and 0.3 of it, what
min-max scaling divided by ``sqrt(p)`` gives) -- never on the benchmark datasets
(``benchmarks/calibrate_auto.py``, ``results/calibrate_auto.md``): the best ``gamma`` of
each loss is 0.30-0.35, and against the best margin of each cell the rule loses 0.6
accuracy points on average for the classifiers (the flat rule with its best constant: 0.7,
the previous constant 16: 1.0) and 0.015 R^2 for Huber (flat: 0.026).  What the fit cannot
remove is what only the data know, the looseness of the bound and the strength of the
signal: at ``n = 500`` a tight bound wants a smaller ``W`` and a loose one a larger ``W``
than the rule gives (worst cells: -0.07 accuracy, -0.19 R^2).
**dpsgd on the multinomial loss** (the multinomial default) has its own comparator,
``DPSGD_MULTINOMIAL_MARGIN`` ``M_0 = 1024`` with ``DPSGD_MULTINOMIAL_EXPONENT``
``gamma = 1``, where ``P = (p_features + 1) K`` counts every class's coefficients: then
``W ~ t`` and ``alpha = sigma sqrt(P)/(n W) = (2 L R t_0/M_0) P/(n mu)^2`` -- the L2
strength is proportional to the DP noise energy ``P (sigma/n)^2`` of the mean gradient.  The
binary constants, which it used before, were calibrated on objective perturbation, never
on dpsgd or on several classes.  Calibrated on synthetic multinomial problems only
(``benchmarks/calibrate_auto.py --multinomial``, ``results/calibrate_multinomial.md``: 3, 5
and 10 imbalanced classes, weak and strong signal, dense and one-hot designs, tight and
loose bounds, ``n`` from 500 to 3e4, ``epsilon`` from 0.5 to 10; 768 cells): against the
best margin of each cell the rule loses 0.7 accuracy points on average, worst 8.7 (the
binary constants: 1.3, worst 14.1).  The best fit wants ``gamma`` larger still, toward a
step (shrink to the class priors at small ``t``, almost no ``alpha`` beyond), partly an
artefact of scoring outside the margin grid at its edges; ``gamma = 1`` keeps a closed form.
**The regressors' small-sample knee.**  Below the privacy sample size ``t_s =
SMALL_SIZE_KNEE = 70`` objective perturbation's Huber comparator shrinks further,
``W <- W (t/t_s)^1.5`` (``SMALL_SIZE_EXPONENT``; ``small_size_factor`` in
:mod:`skdp._solvers._objective_perturbation`), so that ``alpha`` grows toward the constant
predictor where a private fit cannot learn: at ``n = 309`` rows (``t`` 13 / 24 / 46 at
``epsilon`` 0.5 / 1 / 2 for 9 coefficients) the rule without it gave mean test R^2 down
to -0.22 on real sets with standardised targets (the constant predictor: 0).  Chosen on
concrete and airfoil subsamples of 442 rows, checked on wine and bike
(``benchmarks/bench_small_regression.py``, ``results/small_regression.md``).  The synthetic
calibration cells disagree at ``t < 70`` (strong signal, tight bounds: they would rather
have less shrinkage; their mean shortfall to the best margin rises from 0.012 to 0.018
R^2, worst cell 0.16 -> 0.29): the knee trades peak accuracy on such problems for the
floor on real data.  The classifiers have the base-rate check instead (below).
**With the base-rate check** (the default, ``base_rate_fallback="auto"``) the multinomial
dpsgd fit uses a flat, nearly unregularised comparator instead, ``M_0 =
DPSGD_CHECKED_MARGIN = 65536``, ``gamma = 0``.  The calibration cells are bimodal: either
shrink to the class priors (weak signal, imbalanced classes) or barely regularise (strong
signal, balanced classes -- digits: the rule above gave ``alpha`` 0.15 / 0.041 at
``epsilon`` 0.5 / 1 and accuracy 0.113 / 0.165 where the best ``alpha`` of skdp's grid
reaches 0.162 / 0.291 (before dpsgd's half-bound clip; with it and the flat comparator
below, the default gives 0.240 / 0.453 against 0.240 / 0.428 for the grid's best ``alpha``
refitted on the default's seeds, ``benchmarks/results/multiclass.md``).  The check takes the first mode (it falls back to
the priors when the majority class does better), so the rule only has to serve the second:
on the saved multinomial cells, scoring each at ``max(score(M), score(M=16))`` (M = 16:
shrinkage to the priors), the flat comparator's mean / worst shortfall is 0.0005 / 0.048
against 0.0050 / 0.087 for ``(1024, 1)`` (``benchmarks/bench_multiclass.py`` measures the
real thing).  The flat comparator applies wherever the check is on
(``base_rate_fallback="auto"``) and ``n mu >= DPSGD_FLAT_MIN_SIZE = 100``, including
``100 <= n mu < CHECK_MIN_SIZE = 200``, where the check itself is too noisy to run: there
the unregularised model already beats the majority rate on every calibration cell, and the
shrinking rule only cost accuracy (digits at epsilon = 0.5, ``n mu`` = 156: ``alpha_`` 0.15
and 0.136 accuracy against 0.247 for the grid's best; with the flat comparator 0.240).
Below ``n mu = 100`` the shrinking rule ``(1024, 1)`` stays (evidence at
``DPSGD_FLAT_MIN_SIZE``).
Output perturbation keeps the flat comparator ``W = M/R`` with the margins of the flat
rule (``OUTPUT_MARGIN``: 16 and 8): its noise is not damped by curvature, so the spectrum
argument does not apply.
``objective_perturbation`` then applies its own privacy floor ``beta/(n expm1(eps/2))``
(reported as ``alpha_``).

Base-rate check (logistic by objective perturbation or dpsgd, ``delta > 0``, intercept)
-------------------------------------------------------------------------------------
``base_rate_fallback="auto"`` adds ``follow_up_ratio = FALLBACK_RATIO`` (0.2) to the plan.
Objective perturbation calibrates its noise with a Gaussian follow-up of GDP parameter
``0.2 mu`` inside its profile; dpsgd gives the follow-up ``0.2 mu(epsilon, delta)`` and
calibrates its steps so that the PLD composition meets the target.  The fit ends with that
release of the class counts and of the rows the model classifies right; the model falls
back to the class priors when the majority class classifies more rows
(:mod:`skdp.linear_model._base_rate`).  0.2 keeps ~98 % of the model's ``mu`` and a count
noise of ``2/mu_f`` rows on the comparison (``benchmarks/bench_majority.py``,
``bench_multiclass.py``).

dpsgd schedule
--------------
Expected batch size ``b = min(n, max(64, round(4 sqrt(n))))`` and a fixed compute budget:
``E = clip(EPOCH_BUDGET/(n p), 2, MAX_EPOCHS)`` epochs, ``T_0 = ceil(E n/b)`` steps.  The
``n^2/b^2`` schedule of Bassily, Smith & Thakurta (2014) is ``n_steps="bst14"``.
**Multinomial loss: steps while they are cheap.**  The step is capped at ``1.9/beta``
(:mod:`skdp._solvers._dpsgd`), ``beta = R^2/2`` the curvature of the worst row, so a
direction of the design with curvature ``lambda`` closes a fraction ``1 - exp(-eta lambda
T)`` of its distance to the minimiser.  Columns scaled as the loaders do (min-max, divided by
``sqrt d``) that are concentrated, heavy-tailed or nearly constant carry the class signal in
directions with ``lambda`` orders of magnitude below ``beta``: at ``T_0 = 737`` (``n =
21,700``, 20 epochs at ``b = 589``) such fits stay near the class priors
(``benchmarks/results/dpsgd_stall.md``, 6 classes on 5 features: 0.280, the majority rate,
at epsilon = 1..10 on nearly constant columns where scikit-learn reaches 0.376; 0.350 on
imbalanced min-max columns, scikit-learn 0.434).  More steps cost noise: in the many-step
regime the calibrated multiplier grows like ``z ~ 2 q sqrt(T)/mu``, so a flat direction's
noise after ``T`` steps, ``eta T 2L/(n mu)``, grows like its drift ``eta T`` (their ratio
does not depend on ``T``), but a stiff one (the intercept, the column means) averages only
its last ``1/(eta lambda)`` steps and its noise grows like ``sqrt(T)``.  Extra steps are
therefore cheap while ``z`` is small, and ``T`` grows to where the planned multiplier
reaches ``STEPS_NOISE_MULTIPLIER = Z = 5``, by the central limit theorem for the
``T``-fold Poisson-subsampled Gaussian (Dong, Roth & Su 2022, Sec. 5; Bu, Dong, Long & Su
2020): with noise ``z L`` on replace-one sensitivity ``2L`` it is about ``q sqrt(T (exp(4/z^2)
- 1))``-GDP, so with ``mu = mu(epsilon, delta)`` of the budget

    T_z = mu^2 / (q^2 (exp(4/Z^2) - 1)),    T = max(T_0, min(T_z, M T_0, E_c n/b)),

``M = MAX_STEPS_FACTOR = 8``, ``E_c = max(E, EPOCH_BUDGET/(n p))`` (the compute budget).
The approximation only *chooses* ``T`` (it overstates ``z`` at small ``z``, e.g. 1.6x at
epsilon = 10, which only makes ``T_z`` smaller); the fit calibrates ``z`` for that ``T``
with the exact accountant, so the event keeps its form (``PoissonSampledDpEvent(q,
GaussianDpEvent(z))`` composed ``T`` times, then the base-rate check) and the plan, a
function of ``n, p, K, epsilon, delta``, still equals the fit's.  ``T/T_0`` at epsilon =
0.5, 1, 2, 5, 10: 1, 1, 2.1, 8, 8 for ``n = 21,700`` and ``P = 36`` coefficients; 1, 1, 1,
2.6, 8 for digits (``n = 1,257``, ``P = 650``).  Chosen on synthetic cells
(``results/dpsgd_stall_calibration.md``, 10 cells x 5 epsilons, 5 seeds): ``Z = 5``
gains +2.8 / +3.4 accuracy points on average at epsilon = 5 / 10 and +0.8 at 2, worst
cell -0.9 (within its noise); ``Z = 7`` gains as much but costs well-conditioned cells
up to 2.2 points at epsilon = 2 to 5 (6 classes, 3 weak classes), ``Z = 10`` up to 4.7;
``M = 16`` (at ``Z = 7``) adds +0.6 at epsilon = 10 but costs up to 3.7 points.  Checked on
real-derived cells (``results/dpsgd_stall.md``).
dpsgd releases its last iterate: averaging the last iterates (the solver's
``tail_average``) lagged behind the stalled directions above by up to 0.035 accuracy
and gained at most 0.002 once the clip below is in place (solver docstring, step 5).
"""

import math
import numbers
import types
from dataclasses import dataclass, field

from .._losses import HUBER, LOGISTIC, MULTINOMIAL
from .._losses._ids import SMOOTHED_ABSOLUTE as ABSOLUTE
from .._solvers._objective_perturbation import (
    MARGIN,
    OP_MARGIN,
    SIZE_EXPONENT,
    budget_mu,
    noise_balanced_alpha,
    objective_perturbation_alpha,
)
from ._target_range import effective_huber_threshold, effective_y_bound, range_model_params

__all__ = ["FitPlan", "resolve_fit_plan", "choose_convex_solver", "auto_alpha",
           "dpsgd_schedule"]

#: output perturbation's flat comparator margins (the flat rule's calibration)
OUTPUT_MARGIN = {"classification": 16.0, "regression": 8.0}
#: dpsgd's comparator ``W = (M_0/R) (t/t_0)^gamma`` for the multinomial loss: ``M_0`` and
#: ``gamma``, calibrated on synthetic multinomial problems (module docstring;
#: ``benchmarks/calibrate_auto.py --multinomial``, ``results/calibrate_multinomial.md``)
DPSGD_MULTINOMIAL_MARGIN = 1024.0
DPSGD_MULTINOMIAL_EXPONENT = 1.0
#: dpsgd's flat comparator ``M_0`` (``gamma = 0``) for a multinomial fit whose base-rate
#: check is on, from ``n mu >= DPSGD_FLAT_MIN_SIZE`` (module docstring)
DPSGD_CHECKED_MARGIN = 65536.0


def _family(loss):
    from .._losses import MULTINOMIAL

    return "classification" if loss.loss_id in (LOGISTIC, MULTINOMIAL) else "regression"


def margin_for(loss):
    """``MARGIN`` (``M_0``) of the loss's family."""
    return MARGIN[_family(loss)]


def comparator_constants(solver, loss, checked=False):
    """``(M_0, gamma)`` of the gradient-noise solvers' comparator ``W`` (module docstring):
    dpsgd's own for the multinomial loss (``checked``: the flat, nearly unregularised
    comparator of a fit whose base-rate check is on, :func:`uses_flat_comparator`), else
    the family's ``MARGIN`` with ``SIZE_EXPONENT``."""
    if solver == "dpsgd" and loss.loss_id == MULTINOMIAL:
        if checked:
            return DPSGD_CHECKED_MARGIN, 0.0
        return DPSGD_MULTINOMIAL_MARGIN, DPSGD_MULTINOMIAL_EXPONENT
    return margin_for(loss), SIZE_EXPONENT
#: dpsgd: per-example-gradient x coordinate budget of the default schedule
EPOCH_BUDGET = 5e8
MAX_EPOCHS = 20.0
MIN_EPOCHS = 2.0
MIN_BATCH = 64
#: multinomial dpsgd: more steps while the planned noise multiplier stays at most
#: ``STEPS_NOISE_MULTIPLIER``, up to ``MAX_STEPS_FACTOR`` times the epoch rule's steps
#: (module docstring, "dpsgd schedule"; ``benchmarks/bench_dpsgd_stall.py``)
STEPS_NOISE_MULTIPLIER = 5.0
MAX_STEPS_FACTOR = 8.0


@dataclass(frozen=True)
class FitPlan:
    """What a fit will do, resolved from public quantities.

    Attributes
    ----------
    solver : str
        The solver that runs.
    alpha : float
        The L2 strength passed to it (the solver may raise it further; ``alpha_`` reports
        the value used).
    row_bound : float
        ``R``: bound on the augmented row ``[x, intercept_scaling]``.
    options : dict
        Resolved solver hyperparameters (``batch_size``, ``n_steps``...), ``name -> value``.
    reason : str
        One line saying why.
    """

    solver: str
    alpha: float
    row_bound: float
    options: dict = field(default_factory=dict)
    reason: str = ""

    def view(self, estimator, n_features):
        """The estimator's parameters with the resolved values substituted: what the
        planners read (attributes ``solver``, ``alpha``, ``row_bound``, options...)."""
        params = dict(estimator.get_params(deep=False))
        # the model as it runs: a target_range fits the targets minus their released mean
        # over the range's half-width, |z| <= 2, with the loss's scale in those units
        # (linear_model/_target_range.py); "auto" scales resolved
        params.update(range_model_params(params))
        params.update(self.options)
        params.update(solver=self.solver, alpha=self.alpha, row_bound=self.row_bound,
                      n_features_in_=int(n_features))
        return types.SimpleNamespace(**params)


def choose_convex_solver(loss, n_outputs, delta, calibration="tight"):
    """The convex models' solver rule (module docstring)."""
    if calibration == "paper" and loss.loss_id != ABSOLUTE:
        return "output_perturbation", "calibration='paper': output perturbation (Zhang 2017)"
    if loss.loss_id == ABSOLUTE:
        if delta == 0.0:
            raise ValueError(
                "huber_threshold=0 (absolute loss) has no pure epsilon-DP solver: use "
                "delta > 0 (solver='phased' or 'resque') or huber_threshold > 0")
        return "phased", "absolute loss: one-pass phased SGD on the smoothed loss"
    if n_outputs > 1:
        if delta == 0.0:
            return "output_perturbation", "multinomial, delta=0: output perturbation (pure)"
        return "dpsgd", "multinomial: DP-SGD with the practical schedule"
    if loss.loss_id in (LOGISTIC, HUBER):
        return "objective_perturbation", ("binary logistic/Huber: objective perturbation "
                                          "(noise damped by the data's curvature)")
    return "output_perturbation", "default"


def choose_nonconvex_solver(loss, delta):
    """``DPNonconvexRegressor``'s rule: ``warm_gd`` for the smooth robust losses (Welsch,
    Tukey, Cauchy), ``zeroth_order`` for the nonsmooth and user-supplied losses."""
    from .._losses._ids import CAUCHY, TUKEY, WELSCH

    if loss.loss_id in (TUKEY, WELSCH, CAUCHY):
        return "warm_gd", ("smooth robust loss: private Huber warm start, then noisy "
                           "gradient descent on the robust loss")
    return "zeroth_order", "nonsmooth or user loss: zeroth-order (loss values only)"


def auto_alpha(solver, loss, *, n, p, epsilon, delta, row_bound, checked=False):
    """The ``alpha="auto"`` rule (module docstring): public quantities only.  ``checked``:
    the fit's base-rate check is on and ``n mu`` large enough for the checked fit's flat
    comparator (:func:`uses_flat_comparator`: the check runs, or ``n mu >=
    DPSGD_FLAT_MIN_SIZE``)."""
    R = float(row_bound)
    L = float(loss.lipschitz(R))
    mu = budget_mu(epsilon, delta, p)
    if solver == "objective_perturbation":
        return objective_perturbation_alpha(loss, n=n, p=p, epsilon=epsilon, delta=delta,
                                            row_bound=R, margin=OP_MARGIN[_family(loss)])
    if solver == "output_perturbation":
        W = OUTPUT_MARGIN[_family(loss)] / R
        c = float(loss.smoothness(R)) / (R * R)
        s = 2.0 * L / (n * mu)
        return (c * R * R * s * s / (W * W)) ** (1.0 / 3.0)
    margin, gamma = comparator_constants(solver, loss, checked)
    return noise_balanced_alpha(L, p, n, mu, R, margin, size_exponent=gamma)


#: binary logistic dpsgd at a small privacy sample size ``n mu < DPSGD_SMALL_SIZE`` (``mu``
#: the GDP parameter of the fit's ``(epsilon, delta)``): at most ``DPSGD_SMALL_EPOCHS``
#: epochs (:func:`dpsgd_schedule`)
DPSGD_SMALL_SIZE = 2000.0
DPSGD_SMALL_EPOCHS = 5.0


def dpsgd_schedule(n, p, batch_size=None, n_steps=None, *, epsilon=None, delta=None,
                   multinomial=False, binary=False):
    """``(batch_size, n_steps)`` of dpsgd: the practical default (module docstring) for
    None, BST14's ``ceil(n^2/b^2)`` for ``n_steps="bst14"``, else the given values.
    ``multinomial`` (with ``epsilon`` and ``delta > 0``): the default's steps are extended
    while the planned noise multiplier stays below ``STEPS_NOISE_MULTIPLIER`` (module
    docstring).  ``binary`` (binary logistic, with ``epsilon`` and ``delta > 0``): at most
    ``DPSGD_SMALL_EPOCHS = 5`` epochs where ``n mu < DPSGD_SMALL_SIZE = 2000``.  Public
    quantities only.

    Why fewer epochs at small ``n mu``: for a fixed budget the noise multiplier grows like
    ``sqrt(T)``, and the noise of a stiff direction (intercept, column means, the few
    coefficients that carry the signal) averages over its last ``1/(eta lambda)`` steps
    only, so it grows with ``T``; where the noise dominates the signal, fewer, less noisy
    steps rank better as long as they still converge.  Measured with
    ``make_private_pipeline`` on the analogue tables of ``benchmarks/_small_tables.py``
    (10 seeds, ROC AUC, 20 -> 5 epochs, with the small-table knots rule): synthetic
    monotone signal on 7,000 rows at 3 % positives at epsilon 0.5 / 1 (``n mu`` ~ 600 /
    1,160) 0.702 -> 0.734 / 0.752 -> 0.785; credit card 4,000 rows 0.566 -> 0.604 / 0.648
    -> 0.644; 7,000 rows 0.506 -> 0.546 / 0.582 -> 0.588; 2,000 rows 0.584 -> 0.577 / 0.515
    -> 0.508; Bank on 10,000 rows 0.641 -> 0.652 / 0.652 -> 0.670; Adult on 1,700 / 5,000
    rows 0.732 -> 0.732 / 0.862 -> 0.862 at 0.5, 0.842 -> 0.852 / 0.875 -> 0.874 at 1;
    Adult on 18,000 rows (``n mu`` ~ 1,560 / 2,980) 0.890 -> 0.893 / 0.901 -> 0.898 -- the
    last one above the threshold keeps 20.  The full tables (``n mu`` >= 2,600 at epsilon
    0.5) need the 20 epochs to converge: 5 cost Bank 0.891 -> 0.882 / 0.906 -> 0.877 and
    Adult 0.905 -> 0.900 at epsilon 0.5 / 1.  2 and 10 epochs were worse than 5 on average
    (synthetic at 0.5: 0.724 and 0.703)."""
    n = int(n)
    if batch_size is None:
        batch_size = min(n, max(MIN_BATCH, round(4.0 * math.sqrt(n))))
    if n_steps == "bst14":
        n_steps = math.ceil(n * n / (int(batch_size) ** 2))
    elif n_steps is None:
        budget = EPOCH_BUDGET / (n * p)
        epochs = min(MAX_EPOCHS, max(MIN_EPOCHS, budget))
        if (binary and epsilon is not None and delta is not None and float(delta) > 0.0
                and _privacy_size(n, epsilon, delta) < DPSGD_SMALL_SIZE):
            epochs = min(epochs, DPSGD_SMALL_EPOCHS)
        n_steps = max(1, math.ceil(epochs * n / int(batch_size)))
        if multinomial and epsilon is not None and delta is not None and float(delta) > 0.0:
            q = int(batch_size) / n
            mu = budget_mu(float(epsilon), float(delta), p)
            # T-fold Poisson-subsampled Gaussian, noise z L over replace-one sensitivity
            # 2L: ~ q sqrt(T (exp(4/z^2) - 1))-GDP (Bu, Dong, Long & Su 2020)
            cheap = mu * mu / (q * q * math.expm1(4.0 / STEPS_NOISE_MULTIPLIER ** 2))
            longest = min(MAX_STEPS_FACTOR * n_steps,
                          max(epochs, budget) * n / int(batch_size))
            n_steps = max(n_steps, math.floor(min(cheap, longest)))
    return batch_size, n_steps


#: dpsgd's per-example clip as a fraction of the loss's Lipschitz bound ``L = R``, by loss
#: (:mod:`skdp._solvers._dpsgd`, step 2; 1 for the losses not listed).  Binary logistic:
#: ``1/2``.  A row's gradient is ``(sigmoid(z) - y') x`` with ``y'`` in {0, 1}, and
#: ``|sigmoid(z) - y'| <= 1/2`` exactly when the row is classified right (and for every
#: row at ``W = 0``), so the clip ``R/2`` leaves all those rows' gradients unchanged and
#: only down-weights misclassified rows, while it halves the noise (``sigma = z L/2``).
#: Measured with ``make_private_pipeline`` (10 seeds, same splits, piecewise-linear basis,
#: dpsgd averaging its last iterates at the time): at total epsilon 0.5 / 1 / 2, Adult
#: accuracy 0.840 -> 0.844 / 0.850 ->
#: 0.851 / 0.853 -> 0.852 (AUC 0.892 -> 0.897 / 0.905 -> 0.906 / 0.908 -> 0.908), Bank
#: AUC 0.887 -> 0.896 / 0.903 -> 0.904 / 0.906 -> 0.903 (accuracy within 0.002), Credit
#: card AUC 0.738 -> 0.753 / 0.757 -> 0.767 / 0.769 -> 0.773.  A clip at ``R/4`` lost on
#: Bank (accuracy 0.899 -> 0.889 at 1).  Multinomial: also ``1/2`` of ``L = sqrt(2) R``.
#: The gradient is ``(p - e_y) x^T`` and ``||p - e_y||^2 = (1 - p_y)^2 + sum_{j != y} p_j^2
#: <= 2 (1 - p_y)^2``, so every row given at least 1/2 on its own class has a gradient of
#: norm at most ``L/2`` and is not clipped; at ``W = 0`` (``p = 1/K``) the gradients are
#: shortened by at most ``1/sqrt(2 (K - 1)/K)``.  ``bench_multiclass.py`` (20 seeds; the
#: oracle grid re-run with the clip), the default without -> with the clip: digits at
#: epsilon 0.5 / 1 / 10 0.113 / 0.267 / 0.836 -> 0.136 / 0.453 / 0.904, three weak classes
#: at 0.5 / 1 0.433 / 0.447 -> 0.449 / 0.478, six classes at 0.5 0.367 -> 0.388, wine 3 and
#: 5 classes +0.002 to +0.023: all 15 cells up.  ``bench_dpsgd_stall.py`` (50 synthetic
#: and 40 real-derived cells, 5 paired seeds): mean +0.014, worst -0.010 (nearly constant
#: columns at epsilon 5), digits +0.25 at epsilon 2.
DPSGD_CLIP_FRACTION = {LOGISTIC: 0.5, MULTINOMIAL: 0.5}


#: the base-rate check's GDP parameter over the objective noise's, ``mu_f/mu``
#: (:mod:`skdp.linear_model._base_rate`); costs the model ~2 % of its ``mu``.  0.3 (4 %)
#: cost Adult in a private pipeline 0.002 accuracy / 0.004 AUC at eps = 0.5 (22 seeds),
#: where the check never fires; 0.2 keeps every weak-signal cell of bench_majority.py
#: within 0.002 of the majority rate
FALLBACK_RATIO = 0.2


#: the check runs only where its comparison is precise: ``n mu >= CHECK_MIN_SIZE`` with
#: ``mu`` the GDP parameter of ``(epsilon, delta)``, i.e. a noise std ``~2/mu_f`` of the
#: difference "rows right - majority count" of at most ~5 % of ``n`` at ``FALLBACK_RATIO``
#: 0.2.  Below it a noisy check throws good models away: 300 rows, epsilon = 1 (``n mu``
#: = 71): 2 of 5 seeds replaced a model 78-95 % right by the fallback (the counts' noise
#: std was 42 rows)
CHECK_MIN_SIZE = 200.0


#: a multinomial dpsgd fit whose base-rate check is on (``base_rate_fallback="auto"``) takes
#: the checked fit's flat comparator (``DPSGD_CHECKED_MARGIN``) from ``n mu >=
#: DPSGD_FLAT_MIN_SIZE`` on, also where the check itself does not run yet (``n mu <
#: CHECK_MIN_SIZE``); below, the shrinking comparator (``DPSGD_MULTINOMIAL_MARGIN``,
#: ``gamma = 1``).  Why: the shrinking rule exists for the weak-signal mode, where shrinking
#: to the class priors (the majority class) beats a noisy model; without a check to catch
#: that mode it was kept wherever the check did not run.  With dpsgd's half-bound clip the
#: unregularised model beats the majority rate on its own at these sizes, and the strong
#: shrinkage (``alpha_`` 0.15 on digits at epsilon = 0.5, ``n mu`` = 156) only costs
#: accuracy.  Measured (``benchmarks/calibrate_check_size.py``,
#: ``results/calibrate_check_size.md``, 16 seeds per cell): on 168 synthetic cells
#: (``calibrate_auto.multinomial_problem`` and a balanced variant: K = 3, 5, 10, weak and
#: strong signal, p = 10 and 40, n = 500 to 1,600, epsilon = 0.5 to 2, ``n mu`` = 62 to 379)
#: the flat comparator without the check beats the majority rate in every cell (worst
#: +0.007 at ``n mu`` = 62, +0.068 at 100-200) and the shrinking rule by 0.012 on average
#: at ``n mu`` = 118-199 (48 of 72 cells), while at ``n mu`` = 62 the shrinking rule is
#: ahead by 0.014 (18 of 24 cells): the knee sits between, at 100.  Mean shortfall to the
#: best of (shrinking, flat, flat + check) per cell: 0.0104 with the flat comparator from
#: 200 (the rule before), 0.0054 from 100, 0.0075 from 0; running the *check* from 100
#: instead (it throws good models away: it fell back in 0-60 % of the fits there) 0.0091.
#: Checked on 33 real-derived cells kept out of the choice (digits on 600 / 900 rows and on
#: classes 0-4, wine quality 3 / 5 classes on 800 / 1,500 rows, concrete, airfoil and
#: bike-sharing targets binned at quantiles, epsilon 0.5 to 2): shortfall 0.0222 -> 0.0128,
#: the flat comparator at or within 0.002 of the shrinking rule in all 10 cells with ``n
#: mu`` in 100-200 (digits on 900 rows at epsilon 0.5: 0.198 against 0.147), worst cell
#: against the majority unchanged (wine 3 classes on 800 rows at epsilon 0.5, ``n mu`` =
#: 99: below the majority by 0.02 under either rule and under the check).  Those real cells
#: would have liked the flat comparator below 100 too (digits on 600 rows at epsilon 0.5:
#: 0.161 against 0.123), the synthetic ones not; the knee follows the calibration split.
#: ``bench_multiclass.py`` (20 seeds): digits at epsilon 0.5 (``n mu`` = 156) 0.136 ->
#: 0.240 (``alpha_`` 0.15 -> 1.4e-5; the grid's best 0.247), the other 14 cells unchanged
#: (bitwise: their ``n mu`` is at least 300, where the check runs)
DPSGD_FLAT_MIN_SIZE = 100.0


def _check_applies(estimator, solver, loss, n_outputs, delta):
    """Whether the base-rate check is on for this fit, whatever the data size:
    ``base_rate_fallback="auto"`` on a logistic fit (binary or multinomial) by objective
    perturbation or dpsgd (``calibration="tight"``) with ``delta > 0`` and an intercept
    (the fallback is an intercept at the class priors)."""
    if not (getattr(estimator, "base_rate_fallback", False) == "auto"
            and float(delta) > 0.0 and bool(getattr(estimator, "fit_intercept", False))
            and getattr(estimator, "calibration", "tight") == "tight"):
        return False
    if solver == "objective_perturbation":
        return loss.loss_id == LOGISTIC and int(n_outputs) == 1
    return solver == "dpsgd" and loss.loss_id in (LOGISTIC, MULTINOMIAL)


def _privacy_size(n, epsilon, delta):
    """``n mu``, ``mu`` the GDP parameter of ``(epsilon, delta)``."""
    return float(n) * budget_mu(float(epsilon), float(delta), 1)


def uses_base_rate_fallback(estimator, solver, loss, n_outputs, delta, *, n, epsilon):
    """Whether the fit ends with the base-rate check (:mod:`skdp.linear_model._base_rate`):
    ``base_rate_fallback="auto"`` on a logistic fit (binary or multinomial) by objective
    perturbation or dpsgd (``calibration="tight"``) with ``delta > 0`` and an intercept
    (the fallback is an intercept at the class priors), on enough data for a precise
    comparison (``n mu >= CHECK_MIN_SIZE``)."""
    return (_check_applies(estimator, solver, loss, n_outputs, delta)
            and _privacy_size(n, epsilon, delta) >= CHECK_MIN_SIZE)


def uses_flat_comparator(estimator, solver, loss, n_outputs, delta, *, n, epsilon):
    """Whether ``alpha="auto"`` takes the checked fit's flat comparator (``checked`` of
    :func:`auto_alpha`): the check runs (:func:`uses_base_rate_fallback`), or it is on and
    ``n mu >= DPSGD_FLAT_MIN_SIZE`` (only dpsgd's multinomial rule reads it)."""
    return (_check_applies(estimator, solver, loss, n_outputs, delta)
            and _privacy_size(n, epsilon, delta) >= min(DPSGD_FLAT_MIN_SIZE, CHECK_MIN_SIZE))


def resolve_solver(estimator, loss, n_outputs):
    """``(solver, reason)``: ``estimator.solver``, ``"auto"`` resolved by the solver rules
    (:func:`choose_convex_solver`, :func:`choose_nonconvex_solver`; they read the loss, the
    number of outputs, ``delta`` and ``calibration``, not the sizes) -- the first step of
    :func:`resolve_fit_plan`, cheap enough for a budget split to ask before it plans."""
    solver = estimator.solver
    if solver != "auto":
        return solver, "given"
    delta = float(estimator.delta)
    if getattr(estimator, "_NONCONVEX", False):
        return choose_nonconvex_solver(loss, delta)
    return choose_convex_solver(loss, n_outputs, delta, estimator.calibration)


def resolve_fit_plan(estimator, *, n_samples, n_features, loss, n_outputs, row_bound):
    """Resolve ``solver="auto"``, ``alpha="auto"`` and the schedules of ``estimator``.

    Parameters
    ----------
    estimator : BaseDPLinear
        Read for its parameters only.
    n_samples, n_features : int
        Public sizes (``n`` and the number of features, intercept excluded); the rules
        read ``estimator.auto_n_features`` instead of ``n_features`` when it is set.
    loss : loss spec
    n_outputs : int
    row_bound : float
        ``R`` (public, or data-derived for a non-private fit).

    Returns
    -------
    FitPlan
    """
    n = int(n_samples)
    # the rules' width: the estimator's auto_n_features when a composite fixed it (the
    # privacy event reads these choices: skdp.linear_model._budget.width_rule_pins)
    rule_features = getattr(estimator, "auto_n_features", None)
    if rule_features is None:
        rule_features = n_features
    p = (int(rule_features) + int(bool(estimator.fit_intercept))) * int(n_outputs)
    delta = float(estimator.delta)
    solver, reason = resolve_solver(estimator, loss, n_outputs)
    checked = uses_base_rate_fallback(estimator, solver, loss, n_outputs, delta, n=n,
                                      epsilon=float(estimator.epsilon))
    alpha = estimator.alpha
    if isinstance(alpha, str):  # "auto", SPLINE_BASIS_ALPHA or TARGET_RANGE_ALPHA
        flat = uses_flat_comparator(estimator, solver, loss, n_outputs, delta, n=n,
                                    epsilon=float(estimator.epsilon))
        rule = alpha
        alpha = auto_alpha(solver, loss, n=n, p=p, epsilon=float(estimator.epsilon),
                           delta=delta, row_bound=row_bound, checked=flat)
        if rule == SPLINE_BASIS_ALPHA and spline_basis_alpha_applies(solver, loss):
            alpha *= spline_basis_alpha_factor(n, p, float(estimator.epsilon), delta)
        if rule == TARGET_RANGE_ALPHA or (
                rule == "auto" and getattr(estimator, "target_range", None) is not None
                and loss.loss_id == HUBER):
            # a target_range fit's model, planned as itself or as the estimator it is in
            # (the absolute loss keeps the target's units and the plain rule)
            alpha *= TARGET_RANGE_ALPHA_FACTOR
    options = {}
    if solver == "dpsgd" or (solver == "rrpsgd" and estimator.n_steps == "bst14"):
        b, T = dpsgd_schedule(n, p, estimator.batch_size, estimator.n_steps,
                              epsilon=float(estimator.epsilon), delta=delta,
                              multinomial=loss.loss_id == MULTINOMIAL,
                              binary=loss.loss_id == LOGISTIC and int(n_outputs) == 1)
        options.update(batch_size=b, n_steps=T)
    if solver == "dpsgd" and loss.loss_id in DPSGD_CLIP_FRACTION:
        options.update(clip_fraction=DPSGD_CLIP_FRACTION[loss.loss_id])
    if checked:
        options.update(follow_up_ratio=FALLBACK_RATIO)
    if solver == "warm_gd" and getattr(estimator, "auto_n_features", None) is not None:
        # its warm start's alpha rule and its choice to refine read the width too
        options.update(rule_features=p)
    return FitPlan(solver=solver, alpha=float(alpha), row_bound=float(row_bound),
                   options=options, reason=reason)


#: ``alpha`` a private pipeline hands its final ``DPHuberRegressor`` (given ``alpha="auto"``)
#: for the fit when its design is a private spline basis (:func:`pipeline_model_alpha`):
#: the ``auto`` rule times :func:`spline_basis_alpha_factor` (objective perturbation only)
SPLINE_BASIS_ALPHA = "auto_spline"
#: :func:`spline_basis_alpha_factor`: ``clip(t/SPLINE_ALPHA_KNEE, 1, SPLINE_ALPHA_MAX_FACTOR)``
SPLINE_ALPHA_KNEE = 12.0
SPLINE_ALPHA_MAX_FACTOR = 6.0


def spline_basis_alpha_applies(solver, loss):
    """Whether ``alpha=SPLINE_BASIS_ALPHA`` differs from ``"auto"``: a Huber fit
    (``huber_threshold > 0``) by objective perturbation."""
    return solver == "objective_perturbation" and loss.loss_id == HUBER


def spline_basis_alpha_factor(n, p, epsilon, delta):
    """Factor on the ``alpha="auto"`` rule of a Huber model fitted by objective
    perturbation on a private pipeline's spline basis (``alpha=SPLINE_BASIS_ALPHA``, which
    the plan pins where :func:`pipeline_model_alpha` says so)::

        f = clip(t / SPLINE_ALPHA_KNEE, 1, SPLINE_ALPHA_MAX_FACTOR),   t = n mu / sqrt(p),

    ``mu`` the GDP parameter of the model's ``(epsilon, delta)`` (:func:`budget_mu`), ``p``
    its coefficients: the privacy sample size of the ``alpha`` rule (module docstring).
    Public: ``n``, ``p``, ``epsilon``, ``delta``.

    **Only where the targets lie within the threshold**: the plan pins the rule only for a
    public ``y_bound <= huber_threshold`` (:func:`pipeline_model_alpha`; the loss is
    quadratic over the whole target range), the regime of the evidence below (targets
    scaled into [-1, 1], ``y_bound = kappa = 1``).  The rule's comparator is a margin in
    target units; a target ``s`` times larger needs coefficients ``s`` times larger, and
    more shrinkage then costs bias.  Measured (20 seeds, ``y`` and ``y_bound`` multiplied
    by ``s``, ``kappa = 1``; R^2 without -> with ``clip(t/12, 1, 6)``): ``s = 2`` mixed --
    epsilon 0.5 / 1 / 10: ``years_reg`` 0.311 -> 0.278 / 0.444 -> 0.459 / 0.498 -> 0.499,
    airfoil 0.080 -> 0.057 / 0.244 -> 0.265 / 0.511 -> 0.524, concrete 0.019 -> 0.011 /
    0.262 -> 0.213 / 0.786 -> 0.787, wine -0.092 -> 0.107 / 0.139 -> 0.222 / 0.322 ->
    0.326; ``s = 3`` concrete 0.260 -> 0.183 at epsilon 1; ``s = 10`` losses of 0.08 to
    0.11 at epsilon 1 (``years_reg`` 0.460 -> 0.380, airfoil 0.286 -> 0.178, concrete 0.142
    -> 0.057); a pipeline test table (``|y|`` up to 890, ``kappa`` = 50, released
    ``y_bound`` ~ 900) 0.95 -> -0.25.  What this says about the threshold: a smaller
    ``kappa`` is the larger lever (not done: ``huber_threshold`` is the user's).  With
    ``y_bound = 1`` and ``kappa = 1/3`` (the plain rule: ``y_bound > kappa``) the pipeline
    beats ``kappa = 1`` with this rule in 27 of 32 cells of the tables below
    (``bench_spline_alpha.py --thresholds``, ``results/huber_threshold.md``, clean
    86ea4f5, seeds 0-39): concrete 0.206 -> 0.359 and airfoil 0.183 -> 0.240 at epsilon
    1, wine 0.143 -> 0.202 at 2; but wine at 0.5 -0.019 -> -0.097, wine 2,000 rows at 2
    -0.032 -> -0.064, ``years_reg`` within 0.005.

    **Why** (issue 48, a weak integer column of 20 years costs R^2): on the pipeline's
    basis the ``auto`` rule under-regularises the Huber model.  Its constants were fitted
    on dense decaying and one-hot designs with loose bounds; a piecewise-linear spline
    basis is local (each coefficient sees the rows between two knots, so many directions
    have little curvature and objective perturbation's noise, damped by the curvature, is
    large there) and tight (every column's block of a row has norm in ``[1/sqrt 2, 1]``).
    Every extra column -- the weak year column -- adds such directions and raises the row
    bound, and the model's coefficients became noise-dominated: on ``years_reg`` of
    ``benchmarks/_small_tables.py`` (1,400 training rows) R^2 at epsilon 0.5 / 1 was 0.252
    / 0.378 with the year column and 0.328 / 0.426 without it (40 seeds).  The cause is
    the shrinkage, not the column: without the year column more ``alpha`` gains as well.

    **Measured** (``benchmarks/bench_spline_alpha.py``, ``results/spline_alpha.md``: clean
    88e9684 (and 3296174, bitwise the same), seeds 0-39, 1 thread;
    ``make_private_pipeline(DPHuberRegressor(y_bound=1.0))``,
    delta = 1e-6), mean test R^2 before -> with the rule at epsilon 0.5 / 1 / 2 / 10:

    * ``years_reg`` 0.252 -> 0.302 / 0.378 -> 0.433 / 0.459 -> 0.476 / 0.485 -> 0.490;
      without the year column 0.328 -> 0.363 / 0.426 -> 0.448 / 0.469 -> 0.474 / 0.485
      -> 0.485.  The year column's cost (without minus with) falls from 0.076 / 0.048 /
      0.010 / 0.000 to 0.060 / 0.015 / -0.002 / -0.005; with the rule the table with the
      column is within 0.026 of the old fit without it at 0.5 and above it from 1 on;
    * the raw regression tables of ``benchmarks/_raw_protocol.py`` (public target ranges):
      airfoil (1,052 training rows) -0.055 -> -0.003 / -0.009 -> 0.183 / 0.187 -> 0.345 /
      0.465 -> 0.498; concrete (721) 0.008 -> 0.009 / 0.209 -> 0.206 / 0.350 -> 0.445 /
      0.718 -> 0.756; wine (4,547) -1.048 -> -0.019 / -0.310 -> 0.106 / -0.178 -> 0.143 /
      0.276 -> 0.303;
    * seeded subsamples: airfoil 500 rows -0.015 -> -0.015 / -0.007 -> -0.013 / -0.024 ->
      0.071 / 0.305 -> 0.397; concrete 500 -0.312 -> -0.312 / -0.036 -> -0.047 / 0.135 ->
      0.136 / 0.532 -> 0.650; wine 2,000 -0.139 -> -0.052 / -0.688 -> -0.101 / -1.209 ->
      -0.032 / -0.020 -> 0.160.

    29 of 32 cells gain or tie; the three losses (-0.003, -0.006, -0.011: concrete,
    airfoil 500 and concrete 500 at epsilon 1) are at ``t`` = 12-24, within about one
    standard error, where R^2 is near or below 0 but for concrete.  On ``years_reg``'s
    generator at 20,000 and 100,000 rows (10 seeds, epsilon 1 / 10; ``t`` up to ~5,000,
    the factor at its cap) R^2 moved by +0.007 / +0.000 and +0.001 / +0.000.

    **The constants** (seeds 0-39, same tables): factors x2, x3, x4, x6, x8 flat and
    ``clip(t/t_0, 1, c)`` for ``(t_0, c)`` = (10, 4), (10, 6), (15, 4), (15, 6), (12, 6),
    (15, 8).  Flat factors cost concrete at ``t`` <= 24 (x4: 0.008 -> -0.140 at epsilon
    0.5; its target mean is far from 0 and a large ``alpha`` also shrinks the intercept)
    and help everywhere from ``t`` ~ 40; wine wants the most (x8 best at ``t`` >= 60),
    years_reg x3-x4 at ``t`` = 40-75.  (12, 6) had the best sum over the cells; (15, 6)
    was within the noise of it on years_reg and airfoil, 0.02-0.08 behind on wine.  The
    knee of ``t`` = 12 keeps the smallest, noise-dominated cells (``t`` < 12, where the
    Huber knee ``SMALL_SIZE_KNEE`` already shrinks hard) at the old ``alpha``.

    **Privacy**: the factor reads ``n``, ``p``, ``epsilon``, ``delta`` only, the pin the
    model's public parameters only (not a released ``y_bound_``: a ``y_bound="auto"`` model
    keeps the plain rule, so the plan, made before the bound is released, and the fit
    agree), and the factor is applied inside :func:`resolve_fit_plan`, which both the planner
    (:func:`skdp.linear_model._base.planned_dp_event`, so the pipeline's split of the
    budget) and the fit call, before objective perturbation computes its noise: its
    Jacobian term ``eps_J = log(1 + beta/(n alpha))`` and so ``sigma`` are those of the
    final ``alpha`` (``tests/test_spline_basis_alpha.py``).
    """
    t = float(n) * budget_mu(float(epsilon), float(delta), int(p)) / math.sqrt(int(p))
    return min(SPLINE_ALPHA_MAX_FACTOR, max(1.0, t / SPLINE_ALPHA_KNEE))


def pipeline_model_alpha(model, release_names):
    """``{"alpha": SPLINE_BASIS_ALPHA}`` -- what a private pipeline hands its final model
    for the fit (restored afterwards, like the solver rule's pin) -- when the model is a
    ``DPHuberRegressor`` with ``alpha="auto"``, a public ``y_bound`` at most its
    ``huber_threshold`` (the targets within the threshold: the regime of the evidence,
    :func:`spline_basis_alpha_factor`), and a ``DPSplineTransformer`` among the releasing
    transformers (``release_names``: their class names); else ``{}``.  Public: the
    pipeline's classes and the model's parameters."""
    if type(model).__name__ != "DPHuberRegressor" or getattr(model, "alpha", None) != "auto":
        return {}
    params = {"y_bound": getattr(model, "y_bound", None),
              "target_range": getattr(model, "target_range", None),
              "huber_threshold": getattr(model, "huber_threshold", "auto")}
    y_bound = effective_y_bound(params)       # both in the model's units (a target_range
    kappa = effective_huber_threshold(params)  # divides them by its half-width)
    if (isinstance(y_bound, numbers.Real) and not isinstance(y_bound, bool)
            and kappa and 0.0 < float(y_bound) <= float(kappa)
            and "DPSplineTransformer" in release_names):
        return {"alpha": SPLINE_BASIS_ALPHA}
    return {}


#: share of a private pipeline's Gaussian-DP budget ``mu^2`` given to each DP transformer
#: that spends budget (knots of the numeric columns, discovery of the categories); the
#: final estimator gets what is left (:mod:`skdp._pipeline`).  A category discovery on few
#: rows or at a small epsilon takes more (:func:`discovery_share`).
TRANSFORMER_SHARES = {"DPSplineTransformer": 0.05, "DPOneHotEncoder": 0.05}
DEFAULT_TRANSFORMER_SHARE = 0.05

#: a private category discovery in a pipeline gets the share of ``mu^2`` at which a
#: category holding this fraction of the rows reaches its threshold (with probability
#: 1/2), at least its share in :data:`TRANSFORMER_SHARES` and at most
#: :data:`DISCOVERY_SHARE_MAX` (:func:`discovery_share`)
DISCOVERY_ROW_FRACTION = 0.3
DISCOVERY_SHARE_MAX = 0.3


def discovery_share(n_samples, n_columns, mu, threshold_delta):
    r"""Share ``w`` of ``mu^2`` for a private category discovery
    (:class:`~skdp.preprocessing.DPOneHotEncoder` with ``categories="auto"``) on
    ``n_samples`` rows of ``n_columns`` columns, in a pipeline of Gaussian-DP budget
    ``mu`` whose discovery spends ``threshold_delta`` on its threshold.

    **The threshold in rows.**  The discovery releases every value's count with Gaussian
    noise of L2 sensitivity ``sqrt(2 d)`` (``d = n_columns``) at ``mu_i = sqrt(w) mu``, so
    ``sigma = sqrt(2 d) / (sqrt(w) mu)``, and keeps the values whose noisy count reaches
    ``tau = 1 + sigma sqrt(2 ln(2 d / delta_T))``
    (:func:`skdp.preprocessing._categorical.discovery_threshold`).  A category holding a
    fraction ``f`` of the rows is released with probability 1/2 when ``tau = f n``.  At
    the fixed 5 % the threshold is about half of the rows on 1,190 Adult rows with 4
    categorical columns at epsilon 0.5 (``tau`` = 622): not even "Married-civ-spouse"
    (46 % of the rows), the column that carries most of the signal, is released, and the
    model sees almost no category.  The rule solves ``tau(w) = f n`` for ``f`` =
    :data:`DISCOVERY_ROW_FRACTION`,

    .. math:: w = \left(\frac{\sqrt{2d}\,\sqrt{2\ln(2d/\delta_T)}}{\mu\,(f n - 1)}
              \right)^2,

    clipped to ``[TRANSFORMER_SHARES["DPOneHotEncoder"], DISCOVERY_SHARE_MAX]`` (the
    discrete noise's grid rounds ``sigma`` up by a hair; the rule ignores it).  On
    tables where the default share already releases the categories that hold 30 % of
    the rows the rule is the default share.

    **Measured** (20 seeds, the splits of ``benchmarks/bench_small_tables.py``,
    ``make_private_pipeline(DPLogisticRegression(classes=[0, 1]))``, delta 1e-6, numba on
    1 thread; paired differences of the test ROC AUC against the fixed 5 %):

    * ``adult_1700_8col`` (1,190 training rows, 4 categorical columns), epsilon 0.5: the
      rule's share is 0.146; AUC 0.741 -> 0.794 (+0.053 +- 0.011); DP-EBM (given
      data-derived bounds) has 0.773.  Shares 0.21 and 0.30 gave +0.045 +- 0.017 and
      +0.050 +- 0.013: the gain is flat over 0.15-0.3, hence the cap.  Marital status
      and sex then release 1.7 and 1.8 categories on average, against 0.35 and 1.0.
    * Fractions ``f`` of 0.15-0.25 also raise the share at epsilon 1 on that table (0.058-
      0.161: -0.005 +- 0.003 to -0.003 +- 0.003, where the pipeline is 0.045 above
      DP-EBM) and on ``adult_5k_13col`` at epsilon 0.5 (0.079-0.140: -0.002 +- 0.002 to
      -0.003 +- 0.003); ``f`` = 0.3 leaves them at 5 %.  ``f`` = 0.1 gave
      ``adult_5k_13col`` at epsilon 1 a share of 0.087: +0.005 +- 0.002.
    * A fixed larger share loses where the default already finds the categories that
      matter: 15 % cost ``bank_10k_5col`` at epsilon 0.5 0.015 +- 0.005 (its threshold is
      6 % of the rows at 5 %), which the rule leaves at 5 %.
    * The raw Adult and Bank tables of ``benchmarks/bench_raw_tables.py`` (22,792 and
      31,647 training rows) get 5 % at every epsilon from 0.5: their thresholds are at
      most 4 % of the rows (0.2-3.9 %).

    **The cost where it does not pay**: a table whose categorical columns have no value
    holding 30 % of the rows (many columns of many rare values) gets the larger share
    for nothing.  With one spline block besides, the model then keeps at least 65 % of
    ``mu^2`` instead of 90 %: its ``mu`` falls by at most ``sqrt(0.65/0.90)`` = 0.85, about
    the model of an epsilon 0.85 times smaller.  The rule fires only where the fixed
    share's threshold lies above 30 % of the rows, so that at 5 % such columns released
    (almost) nothing anyway.  Measured on ``cc_2k_3pct_2col`` with 4 added columns of 10
    equally frequent values (20 seeds): at epsilon 0.5 the rule gives 0.105, AUC -0.021
    +- 0.043 (within that cell's noise); at epsilon 1 it keeps 5 %.

    **Privacy**: a function of ``n``, the schema's column count, ``epsilon`` and ``delta``
    (through ``mu`` and ``delta_T``) only, fixed by the plan before any row is read.
    """
    from ..preprocessing._categorical import discovery_sensitivity, threshold_factor

    floor = TRANSFORMER_SHARES["DPOneHotEncoder"]
    d, n = int(n_columns), float(n_samples)
    rows = DISCOVERY_ROW_FRACTION * n - 1.0
    if d < 1 or not mu > 0.0 or not 0.0 < threshold_delta < 1.0:
        return floor
    if rows <= 0.0:
        return DISCOVERY_SHARE_MAX
    # tau(w) - 1 = sigma(w) factor, sigma(w) = sensitivity / (sqrt(w) mu)
    root = discovery_sensitivity(d) * threshold_factor(d, threshold_delta)
    need = (root / (float(mu) * rows)) ** 2
    return min(DISCOVERY_SHARE_MAX, max(floor, need))


#: at most this many categories per column in the planning width of a private category
#: discovery (:func:`planned_categories`)
PLANNED_CATEGORIES_MAX = 8


def planned_categories(n_samples, threshold):
    r"""Categories per column that a private pipeline's *planning width* counts for a
    private category discovery (:class:`~skdp.preprocessing.DPOneHotEncoder` with
    ``categories="auto"``) on ``n_samples`` rows with the public threshold ``threshold``
    on its noisy counts -- what the final model's ``auto`` rules read
    (``auto_n_features``, :func:`skdp.linear_model._budget.width_rule_pins`), never what
    the encoder releases::

        k = min(floor(sqrt(n / tau)), PLANNED_CATEGORIES_MAX).

    ``n / tau`` is the most values a column can hold at a count of ``tau`` or more (the
    counts sum to ``n``); the released categories are about those (the noise moves a
    count by ``sigma = (tau - 1) / sqrt(2 ln(2 d / delta_T))``, a fraction of ``tau``).
    Real columns are skewed, so fewer pass; the square root is the geometric middle
    between one category and that bound.  Per column, the released categories against
    ``r = n / tau`` on the benchmark tables (Bike sharing, Adult, Bank; seed 0): ``r`` =
    1.5 / 3.3 / 7.6 / 14 / 26 / 50 / 100-500 released 0.4 / 0.75-1 / 1.8 / 3-3.6 /
    4-5.6 / 5.4-7 / 4.7-8.3 on average (``sqrt(r)`` = 1.2 / 1.8 / 2.8 / 3.7 / 5.1 / 7.1
    / 10-22, hence the cap).

    **Why not zero** (what the plan counted before: every discovering column at its
    lowest width, ``other`` and ``missing``).  The model's rules then read a width far
    below the design's, and regularise too little for it: Bike sharing's hourly table
    (8 categorical columns, 57 values) lost 0.041 / 0.053 / 0.025 R^2 at epsilon 0.5 / 1
    / 2 with ``DPNonconvexRegressor(y_bound=1.0)`` when the plan fixed the model's event.

    **Measured** (10 seeds, one thread, paired against zero on clean commits; the cells
    with a category discovery of ``bench_target_range_nonconvex.py``,
    ``bench_small_tables.py`` and ``bench_raw_tables.py``; the other cells do not move):

    * ``DPNonconvexRegressor`` (Bike hourly, its 2,000-row sample, wine and its 2,000-row
      sample -- one two-valued column, planned at 2-8 --, Adult's hours, Bike daily;
      epsilon 0.5 / 1 / 2 / 10): the default ``target_range`` rule (loss scale 0.05
      ``h``) +0.003 R^2 on average, between -0.030 +- 0.014 (Bike daily, 511 rows,
      epsilon 0.5: ``r`` = 1.5, one category planned per column where 0.4 were released)
      and +0.045 +- 0.030 (Bike daily at epsilon 1); the ``scaled`` reference
      (``y_bound=1``) +0.022 -- Bike +0.037 / +0.054 / +0.026 / +0.006, back to its
      values when the rules read the released width; Adult's hours +0.29 / +0.13 / +0.13
      / +0.06; worst the 2,000 wine rows at epsilon 1, -0.21 +- 0.11.  The
      ``DPNonconvexRegressor()`` on the raw target (no range: not a recommended
      configuration) loses 0.021 on average (Bike -0.05 to -0.07), also back to its
      values with the released width.
    * ``DPLogisticRegression`` (its DP-SGD schedule reads the width; small Adult and Bank
      tables and the raw Adult and Bank tables): ROC AUC within -0.0011 / +0.0013,
      accuracy within -0.0013 / +0.0012 of zero in every cell.
    * Alternatives (the same cells, wine aside): ``floor(n / tau)`` per column (the most
      the threshold lets through) gains most on the ``scaled`` reference (+0.092, this
      rule +0.062 on those cells) but costs the raw Bank table 0.010 AUC at epsilon 2
      (about 1,100 categories planned where 42 were released); a fixed 4 or 8 per column
      costs Bike daily 0.10 / 0.16 R^2 at epsilon 0.5 under the default rule, and 8
      costs the 2,000-row Bike sample 0.22 (``scaled``, epsilon 0.5); a cap of 4 instead
      of 8 is within 0.004 on average.

    **Privacy**: a function of ``n`` and the public threshold (``epsilon``, ``delta`` and
    the schema's column count), never of the rows: the model's event that reads it is
    fixed before any row.
    """
    n, tau = float(n_samples), float(threshold)
    if not (n >= 1.0 and tau > 0.0):
        return 0
    return int(min(math.floor(math.sqrt(n / tau)), PLANNED_CATEGORIES_MAX))


def pipeline_budget_split(transformer_names, discoveries=None):
    """Shares of ``mu^2`` of the DP transformers of a private pipeline, in order.

    A function of the transformers' classes, and of public sizes, never of the data:
    ``discoveries`` has, for each transformer, None or the ``(n_samples, n_columns, mu,
    threshold_delta)`` of a private category discovery whose input width the schema
    tells; that transformer gets :func:`discovery_share` (at least its class's share).
    The Gaussian releases compose in Gaussian DP, ``mu^2 = sum mu_i^2``, so a share ``w``
    costs ``sqrt(w) mu``: 5 % of ``mu^2`` is 22 % of ``mu`` (the knots' rank error is
    ``~ sigma sqrt(6)`` rows, ``sigma = sqrt(24 d)/mu_i``); the transformers never take
    more than half of ``mu^2`` together.  Measured with ``make_private_pipeline`` (6
    seeds): shares of 2 %, 5 % and 10 % each gave Adult accuracy 0.831 / 0.836 / 0.830
    at total epsilon 0.5 and 0.845 / 0.845 / 0.843 at 1, Bank 0.897 / 0.897 / 0.898 at 1.
    """
    names = list(transformer_names)
    discoveries = [None] * len(names) if discoveries is None else list(discoveries)
    if len(discoveries) != len(names):
        raise ValueError("one discovery entry (or None) per transformer")
    shares = []
    for name, discovery in zip(names, discoveries):
        share = TRANSFORMER_SHARES.get(name, DEFAULT_TRANSFORMER_SHARE)
        if discovery is not None:
            share = max(share, discovery_share(*discovery))
        shares.append(share)
    total = sum(shares)
    if total > 0.5:
        shares = [0.5 * w / total for w in shares]
    return shares


#: part of a private pipeline's ``delta`` that the thresholds of its private category
#: discoveries share (evenly between the discovering encoders; each spends its part on its
#: threshold and calibrates its Gaussian at the same part).  One encoder keeps what it had
#: before the plan existed: half of ``delta`` for its threshold; two or more no longer take
#: half each (which left nothing for the model).  The Gaussian releases and the model
#: compose at the rest of ``delta``.
PIPELINE_THRESHOLD_DELTA_SHARE = 0.5

#: part of a :class:`~skdp.accounting.PrivacyLedger`'s ``delta`` that its Rényi filter
#: (``adaptive=True``, :mod:`skdp.accounting._filter`) reserves for the ``(0, delta)`` parts
#: of the events it admits -- the thresholds of private category discoveries -- fixed when
#: the ledger is created, as the filter's proof needs.  The same share as a private
#: pipeline's thresholds, so one pipeline fitted at the ledger's ``delta`` fits in it.  Its
#: price where nothing discovers categories: at ``(epsilon, delta) = (1, 1e-6)`` the filter
#: admits 0.819 of the Gaussian ``mu^2`` the exact composition admits, against 0.869 with no
#: reserve (arithmetic of the conversion, :func:`skdp.accounting._filter.renyi_budget`).
LEDGER_FILTER_DELTA_RESERVE_SHARE = 0.5


#: ``data_norm="auto"`` / ``y_bound="auto"`` outside a private pipeline: the share of the
#: fit's Gaussian-DP budget ``mu^2`` that releases the bounds, and the quantiles released
#: (of the feature-row norms, of ``|y|``); clipping the few rows above a high quantile
#: costs less than the noise of a bound set for the largest row
#: (:meth:`skdp.linear_model._base.BaseDPLinear._run_solver_released_bounds`)
AUTO_BOUND_SHARE = 0.05
AUTO_NORM_QUANTILE = 0.95
AUTO_Y_QUANTILE = 0.99
#: the relative margin by which such a fit's ledger reservation loosens its event planned with
#: the model at the placeholder bounds (:func:`skdp.linear_model._base.
#: released_bounds_reservation`): the event at the released bound differs from it by
#: rounding only, at most 1e-15 relative (measured: every solver of the three estimators,
#: data scales 1e-6 to 1e6), so 1e-10 leaves a factor 1e5; it moves the reserved epsilon
#: by ~1e-10 relative
RELEASED_BOUNDS_EVENT_RTOL = 1e-10

#: The share of a released-bounds fit's model is searched for ``epsilon (1 - margin)``, so
#: that its reservation -- the planned event loosened by ``RELEASED_BOUNDS_EVENT_RTOL`` --
#: still fits the epsilon asked for: a fit asking for a ledger's whole remaining budget
#: was refused once the loosening moved its event (calibrated to within ~1e-12 of it) by
#: ~1e-10 (review).  The loosening raises epsilon by the rtol times the elasticity
#: ``|d ln eps / d ln noise|`` (about 1-2 for Gaussian and zCDP records); 1e-8 leaves a
#: factor of 50 and costs nothing measurable.  The fit re-checks the loosened event
#: (:func:`skdp.linear_model._nested_share.released_bounds_model_epsilon`).
RELEASED_BOUNDS_EPSILON_MARGIN = 1e-8


def auto_bounds_mu(epsilon, delta):
    """The Gaussian-DP ``mu`` of a fit's ``data_norm="auto"``/``y_bound="auto"`` release:
    ``AUTO_BOUND_SHARE`` of the fit's ``mu^2`` (public)."""
    from ..preprocessing._common import gdp_mu

    return math.sqrt(AUTO_BOUND_SHARE) * gdp_mu(epsilon, delta)


#: share of a regressor's Gaussian-DP budget ``mu^2`` that releases the mean of its targets
#: within a public ``target_range`` (:mod:`skdp.linear_model._target_range`): the noise of
#: the mean is ``(high - low)/(n sqrt(share) mu)``, the model keeps ``sqrt(1 - share)`` of
#: its ``mu`` (2.5 % more noise).  Chosen with a prototype (10 seeds) on the raw targets of
#: airfoil, concrete, wine and bike sharing and 350-2,000-row subsamples at epsilon 0.5-10:
#: at 2 % the mean's noise cost up to 0.36 R^2 more on 350 rows at epsilon 0.5 (airfoil
#: -0.61 against -0.26, concrete -0.58 against -0.23); from 700 rows on 2 % and 5 % were
#: within 0.05 in every cell.  The measured effect of the range:
#: ``benchmarks/results/target_range.md``.
TARGET_CENTRE_SHARE = 0.05

#: A ``target_range`` fit is unit-free: its model is fitted on the targets minus their
#: private mean divided by the range's half-width ``h = (high - low)/2``
#: (:mod:`skdp.linear_model._target_range`), so ``huber_threshold`` is read in units of
#: ``h`` and ``alpha`` belongs to the divided targets.  ``huber_threshold="auto"`` is then
#: ``TARGET_RANGE_THRESHOLD h`` (5 % of the range's width; without a range it is 1), and
#: ``alpha="auto"`` is the ``auto`` rule times ``TARGET_RANGE_ALPHA_FACTOR``.  Chosen among
#: six pairs (threshold 0.05, 0.1, 0.2 of ``h``; factor 1, 3) on the raw targets of
#: airfoil, concrete, wine, bike sharing and their 350-2,000-row subsamples at epsilon
#: 0.5-10 (32 cells, seeds 0-9, through ``make_private_pipeline``): with (0.1, 3) the mean
#: test R^2 was 0.281 against 0.158 for the range in the target's own units (threshold 1,
#: the plain rule), no cell more than 0.0073 below it (wine on 2,000 rows at epsilon 10);
#: bike rentals at epsilon 1 0.12 -> 0.53, concrete 0.02 -> 0.33, airfoil on 350 rows at
#: 0.5 -0.42 -> -0.03.  Factor 1 lost up to 0.14 on wine (residuals are a tenth of its
#: range there: the noise needs the stronger penalty), threshold 0.2 up to 0.012.
#: Confirmed on fresh seeds (10-29) and two tables not used to choose, Adult's weekly
#: hours (5,000 rows, range 0-100) and daily bike rentals (731 rows, range 0-10,000):
#: ``benchmarks/results/target_range.md``.
TARGET_RANGE_THRESHOLD = 0.1
TARGET_RANGE_ALPHA_FACTOR = 3.0
#: ``huber_threshold="auto"`` without a ``target_range``: 1, in the target's units (the
#: threshold of every regression result that scales its target into [-1, 1] first)
DEFAULT_HUBER_THRESHOLD = 1.0
#: ``DPNonconvexRegressor(loss_scale="auto")``: 1 in the target's units without a
#: ``target_range`` (the scale of every regression result that scales its target into
#: [-1, 1] first); with one, ``TARGET_RANGE_LOSS_SCALE`` half-widths of the range (the model
#: is fitted on the divided targets, as ``DPHuberRegressor``'s; its default solver's warm
#: start is the Huber fit at threshold ``loss_scale``).  Chosen among 0.05, 0.1, 0.2 and 0.4
#: half-widths through ``make_private_pipeline`` on the raw targets of airfoil, concrete,
#: wine, bike sharing and their subsamples at epsilon 0.5-10 (32 cells, seeds 0-9,
#: ``benchmarks/results/target_range_nonconvex.md``): mean test R^2 0.276 / 0.274 / 0.276 /
#: 0.241, largest shortfall to the best scale of a cell 0.061 / 0.073 / 0.103 / 0.343.
#: Confirmed on fresh seeds 10-19 (``target_range_nonconvex_fresh.md``): 0.269 / 0.264 /
#: 0.269, shortfall 0.067 / 0.082 / 0.116; on the two held-out tables (Adult's weekly
#: hours, daily bike rentals) 0.05 had the best mean in both seed sets (0.251 and 0.262,
#: against 0.249 and 0.260 for 0.1).  So 0.05: the smallest worst cell, the mean within
#: 0.0002 of the best.  Against the target in its own units (``loss_scale=1``) the range
#: gains everywhere but on wine, whose level is within a few residual spreads of 0 (up to
#: -0.10 on 1,400 rows at epsilon 1; -0.13 with 0.1, at 2); airfoil at epsilon 1 -54 ->
#: +0.28, concrete -1.2 -> +0.27, hourly bike rentals +0.01 -> +0.53, the held-out daily
#: rentals at 2 -5.2 -> +0.67.  The warm start's ``alpha`` times
#: ``TARGET_RANGE_ALPHA_FACTOR`` (the Huber range's penalty) was tried and not kept: +0.14
#: on wine at 0.5, -0.14 on concrete at 1 (seeds 0-9, scale 0.1).
DEFAULT_LOSS_SCALE = 1.0
TARGET_RANGE_LOSS_SCALE = 0.05
#: ``alpha`` a ``target_range`` fit hands the model it fits on the divided targets, given
#: ``alpha="auto"``: the ``auto`` rule times :data:`TARGET_RANGE_ALPHA_FACTOR`
TARGET_RANGE_ALPHA = "auto_target_range"


#: knots of DPSplineTransformer(n_knots="auto"): ``clip(round(c (n/sigma)^(1/3) min(1,
#: (n/sigma / x_0)^(1/3))), lo, hi)`` -- the cube-root rule above ``x_0``, steeper below
#: (:func:`spline_knots`)
SPLINE_KNOTS_COEF = 1.85
SPLINE_KNOTS_RANGE = (3, 16)
SPLINE_KNOTS_KNEE = 50.0
#: below ``SPLINE_SMALL_TABLE_ROWS`` rows the rule gives at most ``SPLINE_SMALL_TABLE_KNOTS``
#: knots (:func:`spline_knots`, "Small tables")
SPLINE_SMALL_TABLE_ROWS = 20000
SPLINE_SMALL_TABLE_KNOTS = 6


def spline_knots(n_samples, noise_std):
    """Knots per column of a private spline basis, from the rows per unit of the knot
    release's noise ``x = n/sigma`` (public: ``sigma`` is calibrated from epsilon, delta and
    the number of columns):

        ``k = clip(round(c x^(1/3) min(1, (x/x_0)^(1/3))), 3, 16)``,

    ``c = SPLINE_KNOTS_COEF = 1.85``, ``x_0 = SPLINE_KNOTS_KNEE = 50``: the cube-root rule
    from ``x_0`` on, ``~0.5 x^(2/3)`` below it, at least 3 knots.

    More knots fit a finer shape but cost the model coefficients (more noise in it) and
    sit closer together than the knots' own rank error ``~ sigma sqrt(6)``.  Measured
    with ``make_private_pipeline`` on Adult, Bank and Credit card at pipeline totals
    epsilon 0.5 to 2 (``n/sigma`` about 40 to 190; 3 to 6 seeds): 6 to 8 knots were best,
    12 and 16 mostly worse, and on Adult at epsilon 0.5 (``x = 51``) the rule's 7 beat 4
    and 5.  Beyond, the rule grows as the cube root up to 16 (the count the non-private
    quantile splines of the same design use); that range is not calibrated.

    **Below ``x_0``** (small or rare-positive tables, issue 48): the knots' rank error is a
    large part of ``n`` and the model's noise per coefficient is large, so each basis
    coefficient must collect the signal of many rows.  The rule before (a floor of 6 knots)
    lost ROC AUC on the analogue tables of ``benchmarks/_small_tables.py`` (10 seeds,
    ``make_private_pipeline`` with 20 dpsgd epochs, AUC of 6 knots -> 4 knots -> 3 knots): credit card 4,000 rows
    at 4 % positives at epsilon 0.5 / 1 (``x`` = 9 / 18) 0.551 -> 0.593 -> 0.566 / 0.567 ->
    0.612 -> 0.648; 2,000 rows at 3 % at 0.5 (``x`` = 6) 0.507 -> 0.535 -> 0.584; a
    synthetic monotone signal on 7,000 rows at 3 % at 0.5 / 1 / 2 (``x`` = 16 / 31 / 58)
    0.655 -> 0.680 -> 0.702 / 0.747 -> 0.776 -> 0.776 / 0.779 -> 0.786 -> 0.799; Bank on
    10,000 rows, 5 columns, at 0.5 / 1 (``x`` = 22 / 42) 0.627 -> 0.641 -> 0.632 / 0.652
    -> 0.663 -> 0.664; full credit card at 0.5 / 1 (``x`` = 25 / 47) 0.751 -> 0.752 ->
    0.753 / 0.764 -> 0.769 -> 0.770.  Against: Adult on 1,700 rows at 0.5 (``x`` = 3)
    0.760 -> 0.751 -> 0.732 (at 1: 0.839 -> 0.846 -> 0.842); Adult on 18,000 rows at 1 / 2
    (``x`` = 59 / 112) unchanged within 0.001.  The knee ``x_0 = 50`` keeps every cell
    of ``results/raw_tables.md`` at its knots but credit card at 0.5 (6 -> 4); where the
    signal is weak the data would like fewer knots further up (3 or 4 on the credit-card
    sample at ``x = 50``: +0.02 AUC), which no public quantity tells from Adult's wish for 7
    at ``x = 51``.

    **Small tables** (``n < SPLINE_SMALL_TABLE_ROWS = 20,000``): at most
    ``SPLINE_SMALL_TABLE_KNOTS = 6`` knots.  The rule's growth with ``x`` counts the knots'
    own noise only; it was calibrated on tables of 21,000 training rows and more.  On a
    small table a large epsilon gives a large ``x`` (up to 16 knots per column) while each
    coefficient still sees only ``~n/k`` rows -- and the rare class a few of them -- so the
    basis overfits, privately or not: on ``synth_mono`` (4,900 training rows, 11 knots at
    epsilon 10) scikit-learn's non-private ``LogisticRegression`` on the pipeline's basis
    ranks at AUC 0.805 (10 seeds), its signal column alone at 0.823.  Measured with
    ``make_private_pipeline`` on the analogue tables of ``benchmarks/_small_tables.py`` at
    epsilon 10 (seeds 0-29, AUC, the rule's knots -> at most 6): credit card on 2,000 /
    4,000 / 7,000 rows (8 / 10 / 11 knots) 0.751 -> 0.743 / 0.743 -> 0.754 / 0.604 ->
    0.617, the synthetic monotone signal (11) 0.794 -> 0.807, Adult on 1,700 / 5,000 /
    18,000 rows (7 / 9 / 14) 0.880 -> 0.881 / 0.902 -> 0.903 / 0.9125 -> 0.9123, Bank on
    10,000 rows (13) 0.690 -> 0.691; ``years_reg`` (``DPHuberRegressor``, 8 knots) R^2
    0.474 -> 0.487.  At epsilon 1 only Adult's 18,000 rows have more than 6 knots (7:
    0.900 -> 0.900).  4 knots did as well except on the 2,000-row credit card (0.742 at
    epsilon 10, seeds 0-19), 8 gained less (synthetic 0.806).  Every table of
    ``results/raw_tables.md`` has at least 21,000 training rows and keeps its knots.

    Examples
    --------
    >>> from skdp.linear_model._auto import spline_knots
    >>> spline_knots(22792, 282.0), spline_knots(22792, 36.0), spline_knots(1400, 250.0)
    (8, 16, 3)
    >>> spline_knots(4900, 20.6), spline_knots(20000, 20.6)
    (6, 16)
    """
    lo, hi = SPLINE_KNOTS_RANGE
    x = n_samples / noise_std
    k = SPLINE_KNOTS_COEF * x ** (1 / 3) * min(1.0, (x / SPLINE_KNOTS_KNEE) ** (1 / 3))
    if n_samples < SPLINE_SMALL_TABLE_ROWS:
        hi = min(hi, SPLINE_SMALL_TABLE_KNOTS)
    return int(min(max(round(k), lo), hi))


#: ``DPSplineTransformer(tail_knots="auto")`` adds the public tail knots below ``n/sigma =
#: SPLINE_TAIL_KNOTS_BELOW`` (:func:`spline_tail_knots`)
SPLINE_TAIL_KNOTS_BELOW = 20.0
#: ... and on small tables (``n < SPLINE_SMALL_TABLE_ROWS``) below ``n/sigma =
#: SPLINE_SMALL_TABLE_TAIL_KNOTS_BELOW`` (:func:`spline_tail_knots`, "Small tables")
SPLINE_SMALL_TABLE_TAIL_KNOTS_BELOW = 60.0
#: quantile knots per column of ``DPSplineTransformer(n_knots="auto")`` where it adds the
#: tail knots: the boundary quantiles only (:func:`spline_tail_knots`)
TAIL_QUANTILE_KNOTS = 2


def spline_tail_knots(n_samples, noise_std):
    """Whether ``DPSplineTransformer(tail_knots="auto")`` adds to every column's knots the
    two public knots of :func:`skdp.preprocessing._spline.decade_spares` (one step of the
    decade grid beyond the boundary quantiles): where the rows per unit of the knot
    release's noise, ``x = n/sigma`` (public), are below ``SPLINE_TAIL_KNOTS_BELOW`` (20),
    and on small tables (``n < SPLINE_SMALL_TABLE_ROWS = 20,000``) below
    ``SPLINE_SMALL_TABLE_TAIL_KNOTS_BELOW`` (60).

    With them the quantile knots are the two boundary ones only (``TAIL_QUANTILE_KNOTS``),
    so a column has 4 knots: spare, low quantile, high quantile, spare.

    **Why** (issue 48, the credit-card analogue ``cc_2k_3pct_2col`` of
    ``benchmarks/_small_tables.py``: 1,400 training rows, 3 % positives, ``x`` = 5.6 / 10.7
    at pipeline epsilon 0.5 / 1; ROC AUC 0.561 / 0.508 at a5d0b87, worse at the larger
    epsilon).  At such ``x`` the knots' rank margin (one noise rank, capped at 1/4:
    :meth:`skdp._mechanisms._quantiles.TreeHistogram.rank_margin`) puts the boundary knots
    at the 25th and 75th percentiles, and everything beyond them is clamped.  The signal
    column ``pay_0`` (integers -2..8) has its 25th to 84th percentiles at -1 and 0 and
    its positives in the 10 % of rows with ``pay_0 >= 1``: its knots merged to [-1, 0],
    and ``pay_0`` clamped at 0 ranks the defaults at AUC 0.574 (non-private, the whole
    table), against 0.726 unclamped and 0.718 clamped at 1.  At epsilon 0.5 the noise put
    the upper knot at 0.2 in some seeds (``pay_0 >= 1`` kept apart), at 1 mostly not: the
    non-monotone result was the knots' luck.  Not the cause: the base-rate check (it runs
    at epsilon 1, ``n mu >= 200``, not at 0.5) fell back in 6 of 10 seeds, but its
    fallback keeps the ranking; nor the solver (dpsgd, 47 steps, at both).

    **Measured** with ``make_private_pipeline`` (seeds 0-29, one split and noise per seed;
    ROC AUC without -> with the rule, at epsilon 0.5 / 1): ``cc_2k_3pct_2col`` 0.541 ->
    0.617 / 0.516 -> 0.681; ``cc_4k_4pct_3col`` 0.586 -> 0.662 / 0.645 -> 0.711;
    ``cc_7k_5pct_4col`` 0.570 -> 0.567 / (``x`` = 26: unchanged); ``adult_1700_8col``
    0.736 -> 0.727 / 0.849 -> 0.848; ``adult_5k_13col`` 0.860 -> 0.855 / 0.875 -> 0.868;
    ``synth_mono`` 0.751 -> 0.762 / (``x`` = 30: unchanged).  Accuracy stays at the
    majority rate on the rare-positive tables and moves by at most 0.005 on Adult.
    Alternatives at the same ``x`` (seeds 0-29 unless said): every quantile knot plus the
    spares -- cc_2k 0.601 / 0.688, cc_4k 0.651 / 0.726, but synth 0.738 (noise columns'
    tails add noise); the median plus the spares -- cc_4k 0.688 / 0.725 but Adult 1,700
    0.710 / 0.824, 5,000 0.838 / 0.857; the whole decade grid over the released range
    without quantiles (seeds 10-29) -- synth 0.802 but Adult 1,700 0.723 / 0.807 (without
    the rule 0.729 / 0.850): one linear piece across a decade cannot fit Adult's age.  Not
    kept either: a larger knots' share of ``mu^2`` (15 %, 30 %: cc_2k 0.532 / 0.547 at 0.5,
    synth 0.738 / 0.701), a smaller rank margin (``z`` = 0.5, 0.25, 0.1: synth 0.727 /
    0.657 / 0.528 at 0.5) and ``alpha`` x 0.3 / 3 / 10 (within 0.025 either way).

    **The knee** ``x_0 = 20``: the rule at ``x`` < 60 adds synth at epsilon 1 (``x`` = 30,
    0.786 -> 0.800, seeds 0-19) but costs the full credit-card table of
    ``results/raw_tables.md`` at epsilon 0.5 / 1 (``x`` = 25 / 47; 10 seeds) 0.755 ->
    0.743 / 0.765 -> 0.729; everywhere (``x`` up to 1,500) Bank's 3 columns lose 0.013 to
    0.021 and synth at epsilon 10 gains 0.027.  Every cell of ``results/raw_tables.md`` has
    ``x`` >= 24.8 (credit card at 0.5; Adult 50.8, Bank 65.3) and keeps its knots.

    **Small tables** (``n < 20,000``, the small-table bound of :func:`spline_knots`): the
    knee moves to ``x = 60``.  Between 20 and 60 the rank margin still clamps
    ``sqrt(12)/x`` = 6-17 % of the rows at each end of every column
    (:meth:`~skdp._mechanisms._quantiles.TreeHistogram.rank_margin`, 12 levels), and on a
    small rare-positive table the positives are often in one of those tails: the
    synthetic analogue of issue 48's 7,000-row table (one monotone column carries the
    signal, 3 % positives; ``x`` = 30.5 at epsilon 1) clamps its top 11 %, where most of
    its positives are.  The full credit-card table
    that lost with the tails at ``x`` = 25 and 47 (above) has 21,000 training rows, as has
    every table of ``results/raw_tables.md``: none of them changes.  Measured with
    ``make_private_pipeline`` (seeds 0-19, paired, AUC change with the tails) on every
    analogue cell of ``benchmarks/_small_tables.py`` the clause reaches: ``synth_mono`` at
    epsilon 1 (``x`` = 30.5) +0.015 ± 0.005 (0.786 -> 0.800; DP-EBM's best 0.796);
    ``cc_7k_5pct_4col`` at 1 (26.4) -0.009 ± 0.007; ``bank_10k_5col`` at 0.5 / 1 (22.1 /
    42.2) +0.003 ± 0.003 / -0.002 ± 0.003; ``adult_18k_10col`` at 0.5 / 1 (30.8 / 58.9)
    -0.003 ± 0.001 / +0.003 ± 0.001.  Accuracy moves by at most 0.003.  Keeping every
    quantile knot and adding the spares instead costs the synthetic table 0.015 ± 0.005:
    its noise columns' tails add coefficients.  At epsilon 10 the pipeline builds no tails
    (:func:`pipeline_tail_knots`); forced there (at any ``x``) they lift the synthetic
    table by +0.014 ± 0.002 but cost the others up to 0.024 (Bank's 10,000 rows -0.018 ±
    0.002, the 7,000-row credit card -0.015 ± 0.004, Adult's 5,000 rows -0.006 ± 0.001).
    """
    x = n_samples / noise_std
    return x < SPLINE_TAIL_KNOTS_BELOW or (
        n_samples < SPLINE_SMALL_TABLE_ROWS and x < SPLINE_SMALL_TABLE_TAIL_KNOTS_BELOW)


def pipeline_tail_knots(model, epsilon):
    """``tail_knots`` of the spline basis ``make_private_pipeline`` builds for ``model`` at
    total budget ``epsilon``: ``"auto"`` (:func:`spline_tail_knots`) when the model is fitted
    by DP-SGD -- ``DPLogisticRegression`` with ``solver="dpsgd"``, or ``solver="auto"``
    below ``epsilon = PIPELINE_DPSGD_BELOW``, where the plan picks dpsgd
    (:func:`pipeline_model_solver`) unless ``n epsilon >= PIPELINE_OBJECTIVE_FROM_SIZE``
    -- else False.  Public: the model's class and parameters and ``epsilon``.

    ``n`` is not known when the pipeline is built, so a ``solver="auto"`` model at
    ``epsilon >= 5`` (dpsgd only on small tables) gets no tail knots, and one at
    ``epsilon < 5`` on ``n epsilon >= 3 x 10^5`` rows (objective perturbation) could get
    them -- but only below ``n/sigma = 20``, i.e. with ``sigma > 3 x 10^5/(20 epsilon)``
    rows of knot noise, which the knots' 5 % share of ``mu^2`` gives only from about
    20,000 numeric columns (``sigma`` grows as ``sqrt(24 d)/mu``; at ``n epsilon = 3 x
    10^5``, ``n/sigma`` = 19.7 for 20,000 columns at epsilon 4.99, 24.0 at 0.5).

    Why only DP-SGD: objective perturbation's noise in ``w`` is the objective noise
    damped by the data's curvature, ``-(n H)^{-1} b``, and a tail knot's basis function is
    active on few rows, so its coefficient gets little curvature and much noise, which the
    tail rows then carry.  ``DPHuberRegressor`` (objective perturbation) on the
    ``years_reg`` analogue, 40 seeds, R^2 without -> with tail knots at epsilon 0.5 / 1 / 2:
    0.252 -> 0.219 / 0.378 -> 0.269 / 0.459 -> 0.362 (one seed: a tail coefficient of
    3.4 on ``x`` moved the predictions of the rows above its 75th percentile by up to 1.8).
    DP-SGD takes few steps and its noise is not divided by the curvature.
    """
    if type(model).__name__ != "DPLogisticRegression":
        return False
    solver = getattr(model, "solver", None)
    if solver == "dpsgd" or (solver == "auto"
                             and pipeline_model_solver(type(model).__name__, epsilon)
                             == "dpsgd"):
        return "auto"
    return False


#: degree of the spline basis of ``make_private_pipeline(degree="auto")``: piecewise
#: linear.  A degree-``k`` B-spline row has ``k + 1`` non-zeros summing to one, so its norm
#: lies in ``[1/sqrt(k + 1), 1]``; the public bound is 1 whatever ``k``, so the lower the
#: degree, the more of the bound (which scales the model's noise) the rows actually use.
#: One-hot bins (``k = 0``) use all of it but fit steps, not shapes.  Measured with
#: ``make_private_pipeline`` (the same 10 seeds and splits; dpsgd averaging its last
#: iterates at the time, which the ranking of the degrees does not depend on):
#: degree 1 against 3 on Adult at total epsilon 0.5 / 1 / 2 / 10: accuracy 0.840 / 0.850 /
#: 0.853 / 0.859 against 0.836 / 0.847 / 0.850 / 0.857, AUC 0.892 / 0.905 / 0.908 / 0.914
#: against 0.886 / 0.901 / 0.905 / 0.913; on Bank and Credit card at 0.5 to 10 degree 1 is at
#: or above degree 3 in all 7 cells (Bank AUC at 0.5: 0.887 against 0.878).  Degree 0 was
#: best on Adult at 0.5 only (0.841) and worst at 2 and 10 (0.843, 0.849).  Regression,
#: ``DPHuberRegressor(y_bound=3)`` on standardised targets (objective perturbation), 10
#: seeds, R^2 of degree 1 against 3 at total epsilon 1 / 4: wine 0.205 / 0.321 against
#: 0.205 / 0.310, bike sharing 0.318 / 0.490 against 0.286 / 0.430, concrete 0.253 / 0.686
#: against 0.135 / 0.668, airfoil 0.294 / 0.489 against 0.230 / 0.463.
PIPELINE_SPLINE_DEGREE = 1

#: the solvers that fit a CSR design on its non-zeros, without a dense copy (objective and
#: output perturbation: :mod:`skdp._mechanisms._clipped_rows`; dpsgd: its kernel)
CSR_NATIVE_SOLVERS = frozenset({"objective_perturbation", "output_perturbation", "dpsgd"})


def pipeline_sparse_design(model):
    """Whether ``make_private_pipeline`` hands ``model`` a CSR design (the spline basis as
    CSR, the categories' one-hot block stacked onto it): when every solver the model can
    run is in :data:`CSR_NATIVE_SOLVERS` -- ``DPLogisticRegression`` and
    ``DPHuberRegressor`` with ``solver="auto"`` (except the absolute loss,
    ``huber_threshold=0``, which runs ``phased``) or a native solver given.  Public: the
    model's class and parameters.  The fit is the dense design's bit for bit (the solvers
    read the CSR rows in the dense accumulation order; zeros add nothing), and faster: a
    piecewise-linear basis stores 3 entries per column where the dense one stores
    ``n_knots + 1``.  10^6 x 20 raw columns (``bench_raw_scale``): 2.6 GB dense design,
    0.5 GB CSR."""
    name = type(model).__name__
    if name not in ("DPLogisticRegression", "DPHuberRegressor"):
        return False
    solver = getattr(model, "solver", "auto")
    if solver == "auto":
        return not (name == "DPHuberRegressor" and getattr(model, "huber_threshold", 1) == 0)
    return solver in CSR_NATIVE_SOLVERS


#: what ``solver="auto"`` of a private pipeline's final classifier becomes below
#: ``PIPELINE_DPSGD_BELOW`` (total epsilon): ``dpsgd``, whose Poisson-sampled Gaussian
#: event composes with the transformers' Gaussian releases almost without loss (it keeps
#: ~91 % of the epsilon), where objective perturbation's composable record keeps ~75 %
#: (its certificate is exact for one release only).  Above, objective perturbation's
#: accuracy per epsilon wins anyway -- on large tables.  Measured with
#: ``make_private_pipeline`` on Adult, Bank and Credit card, 5 seeds: dpsgd ahead in 8 of 9
#: (data set, epsilon <= 2) cells in AUC, objective perturbation ahead in all three at
#: epsilon = 10 in accuracy (10 seeds: Adult AUC 0.914 against 0.908, Bank 0.913 against
#: 0.908).  **Small tables** (``n epsilon < PIPELINE_DPSGD_BELOW_SIZE = 1e5``, ``n`` the
#: training rows) get ``dpsgd`` at every epsilon: at epsilon = 10 on the analogue tables of
#: ``benchmarks/_small_tables.py`` (10 seeds, the knots rule before the small-table knee,
#: ``n epsilon`` 12,000 to 70,000) dpsgd's AUC
#: is ahead in all 7 binary tables: credit card on 2,000 / 4,000 / 7,000 rows 0.711 ->
#: 0.746 / 0.705 -> 0.719 / 0.586 -> 0.601, the synthetic monotone signal 0.779 -> 0.800,
#: Adult on 1,700 / 5,000 rows 0.868 -> 0.880 / 0.900 -> 0.902, Bank on 10,000 rows
#: 0.682 -> 0.685; on Adult's 18,000-row sample (``n epsilon`` = 126,000) objective
#: perturbation is still ahead (0.914 against 0.910), as on the full tables.
#:
#: **Large tables** (``n epsilon >= PIPELINE_OBJECTIVE_FROM_SIZE``) get the estimator's own
#: rule at every epsilon -- objective perturbation for a binary model: the composition
#: loss no longer matters where the noise is small against ``n``, and its minimiser is the
#: exact regularised one where DP-SGD stops after its epochs.  It also fits a Dask table in
#: ~30 passes over the workers' partitions where DP-SGD needs a round trip per step.
#: Measured with ``benchmarks/bench_pipeline_solver_size.py`` (results/
#: pipeline_solver_size.md, clean dc35cf0, 3 seeds; Adult's 70 % training split resampled
#: to ``n`` rows, scored on the held-out 30 %), objective perturbation minus DP-SGD in
#: AUC / accuracy: ``n epsilon`` = 3 x 10^4 -0.006 / -0.006, 9 x 10^4 -0.002 / -0.001,
#: 10^5 -0.001 / +0.002 (even), 3 x 10^5 (two cells) +0.003 / +0.003 to +0.005,
#: 9 x 10^5 +0.003 / +0.005; on the Adult-shaped public generator of
#: ``benchmarks/bench_raw_dask.py`` (results/pipeline_solver_size_synth.md, clean 50ca855,
#: 3 seeds): 3 x 10^4 -0.005 / -0.004, 9 x 10^4 -0.002 / -0.002, 10^5 -0.000 / +0.001,
#: 3 x 10^5 (two cells) +0.001 to +0.002 / +0.001 to +0.002, 9 x 10^5 +0.002 / +0.002,
#: and at 10^6 rows, epsilon 1: +0.0045 / +0.0043 (results/raw_dask.md).
PIPELINE_AUTO_SOLVER = {"DPLogisticRegression": "dpsgd"}
PIPELINE_DPSGD_BELOW = 5.0
PIPELINE_DPSGD_BELOW_SIZE = 1e5
PIPELINE_OBJECTIVE_FROM_SIZE = 3e5


#: the part of a private pipeline's ``delta`` (what its thresholds leave) that a final model
#: is fitted at when its event follows the released width even with its rules read at the
#: planning width (``DPNonconvexRegressor``'s ``zeroth_order`` and ``spider`` at
#: ``calibration="paper"``): it is
#: composed as the pair that dominates every ``(epsilon_m, delta_m)``-DP release
#: (:func:`skdp.linear_model._budget.largest_dominated_epsilon`), whose ``delta_m`` adds
#: to the transformers' profile
DOMINATED_MODEL_DELTA_SHARE = 0.5


def pipeline_model_solver(model_name, epsilon, n_samples=None):
    """The solver ``solver="auto"`` becomes for the final ``model_name`` of a private
    pipeline with total budget ``epsilon`` on ``n_samples`` training rows (None: not known
    yet, the epsilon rule alone; returns None for the estimator's own rule): ``dpsgd`` for
    a classifier below ``epsilon = 5`` or ``n epsilon = 10^5``, unless
    ``n epsilon >= 3 x 10^5``.  Public: ``epsilon`` and ``n``."""
    size = None if n_samples is None else float(n_samples) * float(epsilon)
    if size is not None and size >= PIPELINE_OBJECTIVE_FROM_SIZE:
        return None
    if epsilon < PIPELINE_DPSGD_BELOW or (size is not None
                                          and size < PIPELINE_DPSGD_BELOW_SIZE):
        return PIPELINE_AUTO_SOLVER.get(model_name)
    return None


def dask_basis_compact(solver):
    """Whether a private pipeline's Dask fit keeps its CSR basis on the workers as compact
    rows, expanded inside every task that reads a partition
    (:func:`skdp._dask_pipeline.rebuilt_basis`), rather than persisted as built: for the
    solvers that make passes over all the rows -- objective and output perturbation (and
    ``"auto"``, left to the estimator, which picks them on large tables), a few dozen passes
    (35 at 10^6 rows).  DP-SGD (and ``phased``) reads a sample of every partition at each
    of thousands of steps: expanding a partition for each (0.11 s per 10^6 rows) would cost
    more than its fit, so it keeps the built basis.

    Measured (``benchmarks/results/raw_dask.md``, 2 worker processes x 1 thread, epsilon
    1): at 10^7 rows the compact basis fit in 38.2 s (0.96 x the in-memory fit, 0.70 x the
    non-private Dask pipeline) with workers peaking at 1.02-1.08 GB, against 34.7 s and
    1.66 GB for the persisted basis and 1.69-1.70 GB for the non-private pipeline; at 10^6
    rows 6.5 s and 0.70-0.73 GB against 7.0 s and 0.74-0.78 GB; at 10^8 rows
    (``raw_dask_1e8.md``) 424.5 s with its compact rows in memory, against 975-1100 s with
    the persisted basis spilled to disk (and 1760.9 s for the non-private pipeline).
    Public: the solver the plan pins (or the estimator's parameter)."""
    return solver in ("auto", "objective_perturbation", "output_perturbation")


def dask_design_sparse(model):
    """Whether a private pipeline fitting a Dask DataFrame keeps the model's design as CSR
    blocks on the workers (:func:`skdp._dask_pipeline.lazy_transform`): exactly when it
    would in memory (:func:`pipeline_sparse_design`: every solver the model can run reads
    CSR rows -- DP-SGD's steps clip only the rows they sample,
    :func:`skdp._solvers._dpsgd._partition_batch_sum`; objective and output perturbation's
    passes run the in-memory sparse pass per partition,
    :func:`skdp._solvers._dask_objective._partition_sums`).  CSR stores a row's non-zero
    basis entries only: 18 a row, 219 bytes, on the Adult-shaped table of
    ``benchmarks/bench_raw_dask.py`` (145 columns, 1.16 kB dense), where that benchmark's
    non-private pipeline keeps 207 bytes a row.  The workers keep that basis as compact
    rows (70 bytes a row there) and expand a partition inside each task that reads it
    (:func:`skdp._dask_pipeline.rebuilt_basis`).  The other Dask solvers (``phased``) take
    dense blocks.  Public: the model's class and parameters."""
    return pipeline_sparse_design(model)
