r"""One privacy plan for a composite, made from public information before any row is read.

A :class:`~skdp.PrivatePipeline` spends one ``(epsilon, delta)`` budget on several
releases: the DP transformers' (knots, categories, scales), then the final estimator's.
Before its ``fit`` (or ``fit_transform``, ``fit_predict``, or a parent's call of them)
reads a row, :func:`make_plan` walks the whole tree of steps -- nested ``Pipeline``\ s,
every ``ColumnTransformer`` block and its ``remainder``, every ``FeatureUnion`` -- and fixes,
from the public schema (column names and dtypes), ``n`` and the parameters alone:

* **which steps release** (``role="release"``: a DP transformer; ``"model"``: the final
  skdp estimator), which are **data-free** (``"data-free"``: verified by
  :func:`skdp.accounting._fitted.data_free_reason`; ``"public"``: a DP transformer given
  public categories, which releases nothing), and **refuses** any other step with a
  ``TypeError`` that names it -- before anything is fitted; the containers are walked
  only as the exact classes skdp verifies (a subclass can read the whole table between
  its steps: refused first, :func:`skdp.accounting._fitted.unverified_containers`);
* **each release's share**: the DP transformers get public shares of the Gaussian-DP
  budget ``mu^2`` (:func:`skdp.linear_model._auto.pipeline_budget_split`); the thresholds
  of private category discoveries share a public part of ``delta``
  (:data:`skdp.linear_model._auto.PIPELINE_THRESHOLD_DELTA_SHARE`); the final estimator
  gets the largest ``epsilon`` for which the composition of everything is
  ``(epsilon, delta)``-DP under the exact accountant
  (:func:`skdp.linear_model._budget.largest_model_epsilon`);
* **each release's noise key**, derived from the pipeline's ``random_state``, the step's
  own ``random_state`` and the step's *path* (:func:`derive_key`): two steps never share a
  key, whatever seeds the user gave them (two equal keys would draw equal noise, which
  cancels in a difference of the two releases).  One releasing step object at two paths
  could hold only one key and is refused (:func:`_refuse_aliased_steps`); the fit reads
  the keys back from the steps before fitting (:func:`check_configured_keys`);
* **the planned event** of every release (each DP transformer's event is a function of its
  parameters, ``n`` and the schema: stated by the transformer itself, ``planned_event(n,
  d)``, when every transformer of the tree has that formula -- :func:`analytic_prefix`,
  no fit -- else read from fits on public placeholder rows,
  :func:`planned_transformer_events`; the fit checks the released events against the
  plan either way) and so the planned total, which a
  :class:`~skdp.accounting.PrivacyLedger` is charged before the first release.

The design width the final estimator sees is public unless a release sets it (the
released knots of a spline basis, equal knots merging; the discovered categories).  The
model's event is fixed before any row all the same: its ``auto`` rules (``alpha``, DP-SGD's
batch size and steps, ``warm_gd``'s warm start) read the plan's public *planning width*
(``model_width``: every knot distinct, and per discovering encoder column its public
estimate of the categories the release will hold,
:func:`skdp.linear_model._auto.planned_categories`) through the estimator's
``auto_n_features`` (:func:`skdp.linear_model._budget.width_rule_pins`), and its
``epsilon`` is the largest that composes with the transformers' planned events.  Had the
model's event followed the released width -- each width's model calibrated on its own to
compose with the transformers -- the composition would not meet the budget in general (the
derivation and a counter-example are in :func:`~skdp.linear_model._budget.width_rule_pins`).
The fit checks the model's released event against the plan (by privacy profile,
:func:`skdp.accounting._events.same_privacy_profile`: ``zeroth_order``'s Gaussian steps
follow the width, their total ``mu`` does not).  A model whose profile still follows the
width (``DPNonconvexRegressor``'s ``zeroth_order`` and ``spider`` at
``calibration="paper"``, whose printed noise reads it) is refused by ``model_plan="fixed"``;
under ``"adaptive"`` it is fitted at the released width to a share ``(epsilon_m,
delta_m)`` fixed before any row and composed as the pair that dominates every such release
(:func:`_dominated_model_plan`; the plan prints a note).  A model whose event reads its
``data_norm`` (objective perturbation with a numeric ``alpha``) is refused behind a bound
the transformers release from the data (:func:`_bound_follows_data`).

The plan is an ordinary, printable object: ``print(pipe.plan(X))`` before fitting, or
``pipe.privacy_plan_`` after.
"""

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["PlannedStep", "PrivacyPlan", "check_configured_keys", "derive_key",
           "make_plan"]

#: the seed of every fit on placeholder data (public data, so a public seed)
_PLACEHOLDER_SEED = 0

#: keys are handed to the steps' ``random_state`` (scikit-learn takes seeds below 2^32)
_KEY_HIGH = 2**32


@dataclass(frozen=True)
class PlannedStep:
    """What the plan decided for one step of the tree.

    Attributes
    ----------
    path : str
        Parameter prefix of the step (``"columns__numeric"``), as for ``set_params``.
    estimator : str
        Class name.
    role : {"release", "model", "public", "data-free"}
        ``"release"``: a DP transformer that spends budget; ``"model"``: the final skdp
        estimator; ``"public"``: a DP transformer with public parameters that releases
        nothing; ``"data-free"``: a step verified to learn nothing from the rows.
    mu_share : float
        Share of the Gaussian-DP budget ``mu^2`` (0 unless ``role="release"``).
    epsilon, delta : float or None
        The budget handed to the step (``delta`` includes a threshold's part).
    threshold_delta : float
        The part of the pipeline's ``delta`` spent by the step's threshold (0: none).
    key : int, None or "withheld"
        The step's noise key (its ``random_state`` during the fit); None: keys from the OS;
        ``"withheld"`` in a pipeline returned by a private search or cross-validation,
        whose derived keys are not handed out with the model
        (:data:`skdp.model_selection._common.WITHHELD_KEY`).
    event : dp_accounting.DpEvent or None
        The planned event.
    reason : str
        Why the step has its role (for the data-free steps: what was verified).
    dominated : bool
        The model's ``event`` is the pair that dominates every ``(epsilon, delta)``-DP
        release, not its own: its event follows the released width, so it is fitted at
        that width to ``(epsilon, delta)`` (:func:`_dominated_model_plan`).
    params : dict
        Parameters the plan hands the step for the fit (the width the model's ``auto``
        rules read, ``auto_n_features``; a pipeline rule's solver or alpha; a nested
        share's ``model_epsilon``).
    """

    path: str
    estimator: str
    role: str
    mu_share: float = 0.0
    epsilon: float = None
    delta: float = None
    threshold_delta: float = 0.0
    key: int = None
    event: object = None
    reason: str = ""
    params: dict = field(default_factory=dict)
    dominated: bool = False


@dataclass(frozen=True)
class PrivacyPlan:
    """The public plan of one fit of a :class:`~skdp.PrivatePipeline` (module docstring).

    Attributes
    ----------
    epsilon, delta : float
        The total budget.
    n_samples : int
    steps : tuple of PlannedStep
        Every step of the tree, in fit order.
    mu : float
        Gaussian-DP parameter the shares are of (``(epsilon, delta - thresholds)``-DP).
    model_width : int or None
        The model's public design width, or, when a release sets it, the public
        planning width its event was fixed at (every knot distinct, each discovering
        encoder's public estimate of its categories,
        :func:`skdp.linear_model._auto.planned_categories`).
    planned_event : dp_accounting.DpEvent or None
        Composition of every planned event.
    ledger_event : dp_accounting.DpEvent
        What a ledger is charged before the first release.
    """

    epsilon: float
    delta: float
    n_samples: int
    steps: tuple
    mu: float
    model_width: int = None
    planned_event: object = None
    ledger_event: object = None
    notes: tuple = field(default_factory=tuple)

    @property
    def releases(self):
        """The steps that release (role ``"release"`` or ``"model"``)."""
        return tuple(s for s in self.steps if s.role in ("release", "model"))

    def step(self, path):
        """The :class:`PlannedStep` at ``path``."""
        for s in self.steps:
            if s.path == path:
                return s
        raise KeyError(path)

    def __str__(self):
        lines = [f"PrivacyPlan: epsilon={self.epsilon:.6g}, delta={self.delta:.3g}, "
                 f"n={self.n_samples}, mu={self.mu:.6g}"]
        width = max([len(s.path) for s in self.steps] + [4])
        for s in self.steps:
            if s.role in ("release", "model"):
                eps = "later" if s.epsilon is None else f"{s.epsilon:.4g}"
                what = (f"epsilon={eps} delta={s.delta:.3g}"
                        + (f" mu^2 share={s.mu_share:.3g}" if s.role == "release" else "")
                        + (f" threshold delta={s.threshold_delta:.3g}"
                           if s.threshold_delta else "")
                        + f" key={'OS' if s.key is None else 'derived'}"
                        + "".join(f" {k}={v!r}" for k, v in s.params.items()
                                  if k == "solver"))
            else:
                what = s.reason
            lines.append(f"  {s.path:<{width}}  {s.estimator:<22} {s.role:<9} {what}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __repr__(self):
        return str(self)


def derive_key(pipeline_seed, step_seed, path):
    """The noise key of the step at ``path``: a function of the pipeline's seed, the step's
    own seed and its path, or None (keys from the OS) when neither seed is given.

    Distinct paths give distinct keys (a collision of two 32-bit keys in one plan, about
    ``k^2 2^-33`` for ``k`` steps, is refused by :func:`make_plan`), so equal user seeds
    never give equal noise.  A ``numpy.random.Generator`` (or ``RandomState``) seed is
    drawn from once per step and plan -- the draw, not the object, enters the key: a
    generator shared by two steps (or copied into the blocks of a ``ColumnTransformer``,
    which deep-copies its parameters) would otherwise make them draw the same noise."""
    pipeline_word, step_word = _seed_word(pipeline_seed), _seed_word(step_seed)
    if pipeline_word is None and step_word is None:
        return None
    words = [int.from_bytes(hashlib.sha256(path.encode()).digest()[i:i + 4], "little")
             for i in range(0, 16, 4)]
    entropy = [1, pipeline_word] if pipeline_word is not None else [0, 0]
    entropy += [1, step_word] if step_word is not None else [0, 0]
    state = np.random.SeedSequence(entropy, spawn_key=words).generate_state(2, np.uint64)
    return int(state[0]) % _KEY_HIGH


def _seed_word(seed):
    """A non-negative int for a seed: the int itself, a fresh draw from a generator (which
    advances it), None for None."""
    if seed is None:
        return None
    if _is_int(seed):
        if seed < 0:
            raise ValueError(f"random_state must be a non-negative int, got {seed!r}")
        return int(seed)
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**63))
    if isinstance(seed, np.random.RandomState):
        return int(seed.randint(0, 2**31 - 1))
    raise TypeError(f"random_state must be None, an int or a numpy random generator, got "
                    f"{type(seed).__name__}")


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


# --------------------------------------------------------------------------------------
# The tree
# --------------------------------------------------------------------------------------


def _is_dp_transformer(step):
    if not type(step).__module__.startswith("skdp.preprocessing"):
        return False
    params = step.get_params(deep=False)
    return "epsilon" in params and "delta" in params


def _is_skdp_estimator(step):
    return type(step).__module__.startswith("skdp.linear_model") and \
        hasattr(step, "_planning_loss")


def _releases_nothing(step):
    """A DP transformer whose parameters make it learn nothing (public categories)."""
    return type(step).__name__ == "DPOneHotEncoder" and not isinstance(step.categories, str)


def _sets_width(step):
    """Whether a DP transformer's output width is part of its release: the released
    categories of a discovery, the released knots of a spline basis (equal knots merge)."""
    return _discovers_categories(step) or type(step).__name__ == "DPSplineTransformer"


def _discovers_categories(step):
    return type(step).__name__ == "DPOneHotEncoder" and isinstance(step.categories, str)


def _block_is_empty(columns, X):
    """Whether a ColumnTransformer block selects no column of ``X`` (resolved on the
    public schema: names and dtypes).  A callable selector is called only when it is
    verified to read the schema alone (:func:`skdp.accounting._fitted.is_schema_selector`:
    exactly ``make_column_selector`` or skdp's own); any other is refused, never called
    (:func:`_refuse_unverified_selectors` refuses it first, with its path)."""
    from .accounting._fitted import _no_columns, is_schema_selector, selector_refusal

    if is_schema_selector(columns):
        if not hasattr(X, "dtypes"):
            raise TypeError("a dtype or name column selector needs a DataFrame (its schema); "
                            f"got {type(X).__name__}")
        return len(columns(X)) == 0
    if callable(columns):
        raise selector_refusal("", None, columns)
    return _no_columns(columns)


def _refuse_unverified_selectors(step, path):
    """Raise before any row is read if a block of the ColumnTransformer ``step`` (at
    ``path``), dropped blocks included, selects its columns with a callable that is not
    verified to read the schema only (:func:`skdp.accounting._fitted.unverified_selectors`).

    scikit-learn calls such a callable on the private table at fit, and the plan would
    call it on the real frame: a selector that reads the rows (a subclass of
    ``make_column_selector`` overriding ``__call__``, a lambda) could route one column or
    another to a DP step -- or another remainder -- depending on one row, a release that
    no noise covers.  The verified selectors' output is a function of the names and
    dtypes, the same on neighbouring tables."""
    from .accounting._fitted import selector_refusal, unverified_selectors

    refused = unverified_selectors(step)
    if refused:
        raise selector_refusal(path, *refused[0])


def walk(step, path, X, final):
    """``(path, leaf, final)`` for every leaf of the tree of ``step`` in fit order; blocks
    of a ColumnTransformer that select no column of ``X`` are skipped (never fitted)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    prefix = f"{path}__" if path else ""
    if isinstance(step, Pipeline):
        last = len(step.steps) - 1
        for i, (name, sub) in enumerate(step.steps):
            yield from walk(sub, prefix + name, X, final and i == last)
    elif isinstance(step, ColumnTransformer):
        _refuse_unverified_selectors(step, path)
        for name, sub, columns in step.transformers:
            if isinstance(sub, str) and sub == "drop":
                continue
            if _block_is_empty(columns, X):
                continue
            yield from walk(sub, prefix + name, X, False)
        remainder = step.remainder
        if not (isinstance(remainder, str) and remainder == "drop"):
            yield prefix + "remainder", remainder, False
    elif isinstance(step, FeatureUnion):
        for name, sub in step.transformer_list:
            if isinstance(sub, str) and sub == "drop":
                continue
            yield from walk(sub, prefix + name, X, False)
    else:
        yield path, step, final


def schema_input_widths(step, X, path=""):
    """``{path: width}`` of the leaves whose input width the schema ``X`` tells: the
    first steps of the pipeline (after identity steps such as ``FrameToPandas``) take
    ``X``'s width, the leaves of a ``ColumnTransformer`` block on ``X`` the number of
    columns the block selects (:func:`_column_count`), every branch of a ``FeatureUnion``
    its input's.  Leaves after a step that changes the columns are left out (their width
    is known only from a fit).  Public: names, dtypes and the width of ``X``."""
    widths = {}
    _input_widths(step, path, X, _width(X), widths)
    return widths


def _input_widths(step, path, X, width, widths):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    prefix = f"{path}__" if path else ""
    if isinstance(step, Pipeline):
        for name, sub in step.steps:
            _input_widths(sub, prefix + name, X, width, widths)
            if not _keeps_columns(sub):
                X = width = None
    elif isinstance(step, ColumnTransformer):
        for name, sub, columns in step.transformers:
            if isinstance(sub, str) or X is None:
                continue
            count = _column_count(columns, X)
            _input_widths(sub, prefix + name, None, count, widths)
    elif isinstance(step, FeatureUnion):
        for name, sub in step.transformer_list:
            if not isinstance(sub, str):
                _input_widths(sub, prefix + name, X, width, widths)
    elif width is not None:
        widths[path] = int(width)


def _keeps_columns(step):
    """Whether a pipeline step hands on its input's columns unchanged: None,
    ``"passthrough"`` or one of skdp's identity steps (``_IDENTITY_STEPS``)."""
    return (step is None or (isinstance(step, str) and step == "passthrough")
            or (type(step).__name__ in _IDENTITY_STEPS
                and type(step).__module__.startswith("skdp.preprocessing")))


def data_free_reason(step):
    """Why ``step`` learns nothing from the rows (a verified property,
    :func:`skdp.accounting._fitted._is_data_free`), or None if that cannot be verified."""
    from .accounting._fitted import _is_data_free

    if isinstance(step, str) or step is None:
        return "passthrough" if _is_data_free(step) else None
    return "verified data-free (stateless, row by row)" if _is_data_free(step) else None


def _refusal(path, step, final):
    kind = type(step).__name__
    if type(step).__module__.startswith("skdp.model_selection"):
        return TypeError(
            f"step '{path}' ({kind}) is a private search inside a PrivatePipeline: its "
            "selection is accounted in Renyi DP with its own budget, which the pipeline's "
            "plan cannot split. Put the pipeline inside the search instead: "
            "DPGridSearchCV(make_private_pipeline(...), {...}, epsilon=...)")
    from .accounting._fitted import DROP_REFUSAL, drops_a_column

    if drops_a_column(step):
        return TypeError(f"step '{path}' ({kind}) of a PrivatePipeline {DROP_REFUSAL}. "
                         "Nothing was fitted")
    if final:
        return TypeError(
            f"step '{path}' ({kind}) of a PrivatePipeline is not an skdp estimator or DP "
            "transformer: it would learn from the rows without differential privacy. Use a "
            "DP estimator (skdp.DPLogisticRegression, DPHuberRegressor, "
            "DPNonconvexRegressor) or a DP transformer as the final step")
    return TypeError(
        f"step '{path}' ({kind}) of a PrivatePipeline is neither a DP transformer nor "
        "verifiably data-free: it could learn from the rows without differential privacy, "
        "which voids the guarantee of the whole pipeline. Nothing was fitted. Use a DP "
        "transformer from skdp.preprocessing, a stateless row-wise one "
        "(skdp.preprocessing.RowwiseFunctionTransformer(func) applies a function one row at a time), or "
        "public parameters (e.g. OneHotEncoder(categories=[...], handle_unknown='ignore'))")


# --------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------


def make_plan(pipeline, X, n_samples, epsilon, delta, *, lazy=False):
    """The :class:`PrivacyPlan` of ``pipeline`` (a PrivatePipeline) for a fit on ``X``'s
    schema and ``n_samples`` rows (module docstring).  Reads no row of ``X``: only its
    column names and dtypes (through the column selectors) and its width.

    Raises TypeError for a step that would learn without DP or a container that is a
    subclass skdp does not verify (refused before any walk of the tree:
    :func:`skdp.accounting._fitted.unverified_containers`), BudgetExceededError when the
    budget cannot cover the plan; all before anything is fitted.

    ``lazy``: ``X`` is the schema (an empty pandas frame) of a Dask DataFrame; the fits on
    placeholder rows run on a lazy placeholder of ``n_samples`` rows
    (:func:`skdp._dask_pipeline.placeholder`), never held on the client.
    """
    from .accounting import compose, gaussian_epsilon
    from .accounting._fitted import refuse_density_formats, refuse_unverified_containers
    from .linear_model._auto import PIPELINE_THRESHOLD_DELTA_SHARE, pipeline_budget_split
    from .preprocessing._common import gdp_mu

    # first: every walk below (walk, schema_input_widths, analytic_prefix, the placeholder
    # fits) takes a Pipeline, ColumnTransformer or FeatureUnion as a verified container
    refuse_unverified_containers(pipeline)
    X = planned_input(X)
    leaves = list(walk(pipeline, "", X, True))
    kinds = []
    for path, leaf, final in leaves:
        if final and _is_skdp_estimator(leaf):
            kinds.append("model")
        elif _is_dp_transformer(leaf):
            kinds.append("public" if _releases_nothing(leaf) else "release")
        else:
            reason = data_free_reason(leaf)
            if reason is None:
                raise _refusal(path, leaf, final)
            kinds.append("data-free")
    _refuse_aliased_steps(leaves, kinds)
    refuse_density_formats(pipeline, input_sparse=hasattr(X, "tocsr"))
    seed = pipeline.random_state
    releasing = [(p, leaf) for (p, leaf, _), k in zip(leaves, kinds) if k == "release"]
    has_model = "model" in kinds
    discovering = [p for p, t in releasing if _discovers_categories(t)]
    threshold_total = PIPELINE_THRESHOLD_DELTA_SHARE * delta if discovering else 0.0
    mu = gdp_mu(epsilon, delta - threshold_total)
    widths = schema_input_widths(pipeline, X)
    discoveries = [
        (int(n_samples), widths[p], mu, threshold_total / len(discovering))
        if p in discovering and widths.get(p) else None
        for p, _ in releasing]
    shares = pipeline_budget_split([type(t).__name__ for _, t in releasing], discoveries)
    if not has_model and shares:
        # no final estimator takes the rest: the transformers share all of mu^2
        total = sum(shares)
        shares = [w / total for w in shares]

    planned = []
    share_of = dict(zip([p for p, _ in releasing], shares))
    for (path, leaf, final), kind in zip(leaves, kinds):
        name = type(leaf).__name__ if not isinstance(leaf, str) else repr(leaf)
        if kind == "data-free":
            planned.append(PlannedStep(path, name, kind, reason=data_free_reason(leaf)))
            continue
        own_seed = leaf.get_params(deep=False).get("random_state")
        key = derive_key(seed, own_seed, path or "final")
        if kind == "public":
            planned.append(PlannedStep(path, name, kind, key=key,
                                       reason="public categories: releases nothing"))
        elif kind == "release":
            mu_i = math.sqrt(share_of[path]) * mu
            if path in discovering:
                # the encoder calibrates its Gaussian at delta/2 and spends delta/2 on its
                # threshold: hand it twice its threshold's share, and the epsilon that is
                # exactly mu_i-GDP at that half
                t_delta = threshold_total / len(discovering)
                eps_i, delta_i = float(gaussian_epsilon(t_delta, mu_i)), 2.0 * t_delta
            else:
                t_delta = 0.0
                eps_i, delta_i = float(gaussian_epsilon(delta, mu_i)), float(delta)
            planned.append(PlannedStep(path, name, kind, mu_share=share_of[path],
                                       epsilon=eps_i, delta=delta_i, threshold_delta=t_delta,
                                       key=key, reason="DP transformer"))
        else:
            planned.append(PlannedStep(path, name, kind, delta=float(delta), key=key,
                                       reason="final estimator: the rest of the budget"))
    keys = [s.key for s in planned if _is_int(s.key)]
    if len(set(keys)) != len(keys):
        raise ValueError("two steps' derived noise keys collide (probability ~2^-32): "
                         "choose another random_state for the pipeline")
    plan = PrivacyPlan(float(epsilon), float(delta), int(n_samples), tuple(planned), mu)
    from ._mechanisms._exact import public_noise_memo

    analytic = analytic_prefix(pipeline, plan, X)
    if analytic is not None:
        # every transformer states its event and widths from public quantities: no fit
        events, shape = analytic
        plan = _with_events(plan, events)
        return _plan_model(pipeline, plan, X, events, compose, shape=shape, lazy=lazy)
    # both placeholder fits (events, widths) draw a step's noise with the same public key
    with public_noise_memo():
        events = planned_transformer_events(pipeline, plan, X, lazy=lazy)
        plan = _with_events(plan, events)
        return _plan_model(pipeline, plan, X, events, compose, lazy=lazy)


def planned_input(X):
    """``X`` as the steps of the fit read it, for the plan: a DataFrame, an array, a
    sparse matrix (anything with a ``shape``) as it is; any other array-like -- a list or
    tuple of rows -- as the array scikit-learn's validation makes of it
    (``numpy.asarray``; strings as objects, as its encoders convert them).

    The plan reads the width from ``X.shape``.  A list has none, and was planned at width
    1 while every step fitted it at its real width: a model whose event reads the width
    then released another event than the one planned, after the transformers had
    released.  Planned on the array the fit sees, the width (and so every planned event)
    is the one the fit uses.  Rows of unequal lengths have no width: refused here,
    before any release, naming no value."""
    if hasattr(X, "shape") or hasattr(X, "dtypes"):
        return X
    try:
        array = np.asarray(X)
    except ValueError:
        raise ValueError(
            f"X is a {type(X).__name__} whose rows are not all sequences of one length: a "
            "private pipeline reads X as an array of shape (n_samples, n_features), rows of "
            "equal length. Nothing was fitted") from None
    return array.astype(object) if array.dtype.kind in "USV" else array


def _refuse_aliased_steps(leaves, kinds):
    """Refuse one releasing step object (a DP transformer or the model) at two paths of
    the tree, from the tree alone (before any row is read).

    The plan hands every releasing path its own share and key (:func:`configured`), as
    parameters of the step object at that path.  One object at two paths (the same
    encoder in two ``ColumnTransformer`` blocks, which clones it for each) holds only the
    last of them, so both blocks would draw their noise from one key: equal unit noises,
    which cancel in a scaled difference of the two releases that the plan composes as
    independent.  A DP transformer with public parameters releases nothing and is left
    alone."""
    first_path = {}
    for (path, leaf, _), kind in zip(leaves, kinds):
        if kind not in ("release", "model"):
            continue
        if id(leaf) in first_path:
            raise ValueError(
                f"steps '{first_path[id(leaf)]}' and '{path}' are one "
                f"{type(leaf).__name__} object: the plan gives each path its own noise key "
                "and budget share, which one object cannot hold (both blocks would draw the "
                "same noise). Give each path its own instance, e.g. sklearn.base.clone(step); "
                "nothing was fitted")
        first_path[id(leaf)] = path


def check_configured_keys(pipeline, plan):
    """Refuse a configured ``pipeline`` whose releasing steps do not hold the keys of
    ``plan`` (read back from its parameters, before any fit).

    :func:`make_plan` derives distinct keys (:func:`derive_key`) and :func:`configured`
    sets them; reading them back proves that the fit draws with exactly those keys, so
    the releases it composes as independent are keyed apart -- whatever aliasing of step
    objects slipped past :func:`_refuse_aliased_steps`.  (The accounting,
    :func:`skdp.accounting.fitted_dp_event`, reads the plan's keys: this check is what
    makes them the steps' keys.)"""
    params = pipeline.get_params(deep=True)
    for s in plan.releases:
        name = f"{s.path}__random_state" if s.path else "random_state"
        if name in params and params[name] != s.key:
            raise ValueError(
                f"step '{s.path}' does not hold the noise key its plan derived for it (one "
                "step object at two paths holds the last path's key): its releases would "
                "share another step's noise. Give each path its own instance; nothing was "
                "fitted")


def _with_events(plan, events):
    planned = [_replace(s, event=events[s.path]) if s.role == "release" else s
               for s in plan.steps]
    return _replace(plan, steps=tuple(planned))


def _replace(obj, **changes):
    import dataclasses

    return dataclasses.replace(obj, **changes)


def serial_containers(estimator):
    """``{"<path>__n_jobs": None}`` for every ColumnTransformer and FeatureUnion inside
    ``estimator`` that would run its blocks in parallel.

    A private fit runs under ``np.errstate(all="ignore")`` (:func:`skdp._mechanisms.
    _quiet.silent_floating_point`): a verified data-free step such as
    ``PolynomialFeatures`` overflowing on one row must report nothing.  That state is
    not inherited by joblib's workers (processes, or threads with their own numpy
    state), so a container with ``n_jobs=2`` ran the step under the default "warn" --
    one dataset warned, its neighbour did not (review).  Its blocks run one after the
    other on the calling thread instead; the user's ``n_jobs`` is restored after the
    fit.  The output is the same."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion

    params = estimator.get_params(deep=True)
    return {f"{key}__n_jobs": None for key, value in params.items()
            if isinstance(value, (ColumnTransformer, FeatureUnion))
            and getattr(value, "n_jobs", None) not in (None, 1)}


def configured(estimator, plan, *, for_placeholder=False):
    """``{param: value}`` that hands every step of ``estimator`` (the pipeline, or its
    prefix) its share and key from ``plan`` (paths relative to the pipeline); ledgers of
    the steps are taken off (the pipeline charges the plan once)."""
    params = {}
    names = estimator.get_params(deep=True)
    for s in plan.steps:
        prefix = f"{s.path}__" if s.path else ""
        if s.role == "release":
            params[prefix + "epsilon"] = s.epsilon
            params[prefix + "delta"] = s.delta
        if s.role in ("release", "public", "model") and prefix + "random_state" in names:
            # placeholder fits are seeded with a constant: their released widths are
            # then a function of public quantities only (a plan must not vary with noise)
            params[prefix + "random_state"] = _PLACEHOLDER_SEED if for_placeholder else s.key
        if prefix + "privacy_ledger" in names:
            params[prefix + "privacy_ledger"] = None
    params.update(serial_containers(estimator))
    return {k: v for k, v in params.items() if k in names}


def placeholder_frame(X, n_rows, spread=False):
    """Public data with the schema of ``X`` (names, dtypes, width) and ``n_rows`` rows:
    zeros in numeric columns, ``False`` in boolean ones, the first public category of a
    categorical dtype (missing if it has none), the empty string elsewhere.  Nothing of
    ``X`` but its schema is read.  ``spread``: numeric columns ``0, 1, ..., n_rows - 1``
    instead (distinct public values: a spline basis keeps all its knots, its nominal
    width)."""
    if hasattr(X, "dtypes") and hasattr(X, "columns"):
        import pandas as pd

        columns = {}
        for name, dtype in zip(X.columns, X.dtypes):
            if isinstance(dtype, pd.CategoricalDtype):
                cats = dtype.categories
                value = cats[0] if len(cats) else None
                columns[name] = pd.Categorical([value] * n_rows, dtype=dtype)
            elif pd.api.types.is_bool_dtype(dtype):
                columns[name] = np.zeros(n_rows, dtype=bool)
            elif pd.api.types.is_numeric_dtype(dtype):
                values = np.arange(n_rows, dtype=np.float64) if spread else np.zeros(n_rows)
                columns[name] = pd.Series(values).astype(dtype)
            elif pd.api.types.is_datetime64_any_dtype(dtype):
                columns[name] = pd.Series(np.zeros(n_rows, dtype="datetime64[ns]"),
                                          dtype=dtype)
            else:
                columns[name] = pd.Series([""] * n_rows, dtype=dtype)
        frame = pd.DataFrame(columns, columns=X.columns)
        attrs = getattr(X, "attrs", None)
        if isinstance(attrs, dict) and "skdp_schema" in attrs:
            # the schema the frame declares (metadata, public) routes the placeholder's
            # columns as it routes the data's
            frame.attrs["skdp_schema"] = attrs["skdp_schema"]
        return frame
    shape = getattr(X, "shape", None)
    width = shape[1] if shape is not None and len(shape) > 1 else 1
    dtype = getattr(X, "dtype", np.dtype(float))
    if dtype == object:
        # an object array carries no schema: numbers, which a numeric step converts and a
        # categorical one counts (the events and widths do not depend on the values)
        values = np.arange(n_rows, dtype=np.float64) if spread else np.zeros(n_rows)
        return np.tile(values.astype(object)[:, None], (1, width))
    if spread:
        return np.tile(np.arange(n_rows, dtype=np.float64)[:, None], (1, width))
    return np.zeros((n_rows, width), dtype=np.float64)


# --------------------------------------------------------------------------------------
# The analytic plan: transformers that state their event and widths
# --------------------------------------------------------------------------------------


class _NotAnalytic(Exception):
    """A part of the tree whose events or widths only a placeholder fit can tell."""


#: data-free steps whose output is their input (schema, width and values)
_IDENTITY_STEPS = ("FrameToPandas",)


def analytic_prefix(pipeline, plan, X):
    """``({path: event}, (lowest, nominal, bound))`` of the pipeline's transformers from
    their own public formulas -- ``planned_event(n, d)`` and ``planned_output(n, d)`` of
    the DP transformers that have them (:class:`~skdp.preprocessing.DPSplineTransformer`,
    :class:`~skdp.preprocessing.DPOneHotEncoder`) -- without fitting anything; None when
    some part of the tree needs the placeholder fits (:func:`planned_transformer_events`,
    :func:`design_widths`): another transformer, a ``FeatureUnion``, a ``remainder``, a
    nested ``ColumnTransformer`` or a DP transformer whose input width is not public.

    The events are those the placeholder fits read (tests compare them on a grid), and the
    fit still checks that every release recorded its planned event, so a wrong formula
    fails loudly at fit time, never silently.  The lowest width is the true lower bound
    of each transformer's released width (the placeholder fits gave an upper estimate of
    it); it only serves the plan's checks (a dominated model's plan must exist at it,
    :func:`_dominated_model_plan`), never a release."""
    from .preprocessing import DPOneHotEncoder, DPSplineTransformer

    supported = (DPSplineTransformer, DPOneHotEncoder)
    by_path = {s.path: s for s in plan.steps}
    steps = pipeline.steps[:-1] if _final_is_model(plan) else pipeline.steps
    events = {}
    d = _width(X)
    try:
        shape = _analytic_sequence(steps, "", X, (d, d, None), plan.n_samples, by_path,
                                   events, supported)
    except _NotAnalytic:
        return None
    if set(events) != {s.path for s in plan.steps if s.role == "release"}:
        return None
    return events, shape


def _analytic_sequence(steps, prefix, X, shape, n, by_path, events, supported):
    """Shape ``(lowest, nominal, bound)`` after the ``steps`` of a Pipeline, from the
    input's; ``X`` the input's schema (None once a step changed it)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    for name, step in steps:
        path = prefix + name
        if _keeps_columns(step):
            shape = (shape[0], shape[1], None)
        elif isinstance(step, Pipeline):
            shape = _analytic_sequence(step.steps, path + "__", X, shape, n, by_path,
                                       events, supported)
            X = None
        elif isinstance(step, ColumnTransformer):
            shape = _analytic_columns(step, path + "__", X, shape, n, by_path, events,
                                      supported)
            X = None
        elif isinstance(step, supported):
            shape = _analytic_leaf(step, path, shape, n, by_path, events)
            X = None
        else:
            raise _NotAnalytic(path)
    return shape


def _analytic_columns(step, prefix, X, shape, n, by_path, events, supported):
    """Shape after a ColumnTransformer whose input is the schema ``X``: the sum of its
    non-empty blocks' widths, the root of the sum of their squared bounds
    (:func:`skdp._pipeline.output_norm_bound`)."""
    if X is None or shape[0] != shape[1]:
        raise _NotAnalytic(prefix)
    remainder = step.remainder
    if not (isinstance(remainder, str) and remainder == "drop"):
        raise _NotAnalytic(prefix + "remainder")
    low = nominal = 0
    bounds = []
    for name, sub, columns in step.transformers:
        if isinstance(sub, str) and sub == "drop":
            continue
        if _block_is_empty(columns, X):
            continue
        count = _column_count(columns, X)
        if count is None:
            raise _NotAnalytic(prefix + name)
        b_low, b_nominal, b_bound = _analytic_sequence(
            [(name, sub)], prefix, None, (count, count, None), n, by_path, events, supported)
        low, nominal = low + b_low, nominal + b_nominal
        bounds.append(b_bound)
    bound = None if not bounds or any(b is None for b in bounds) else \
        math.sqrt(sum(b * b for b in bounds))
    return low, nominal, bound


def _analytic_leaf(step, path, shape, n, by_path, events):
    """Shape after a DP transformer with public input width, and its planned event."""
    if shape[0] != shape[1] or path not in by_path:
        raise _NotAnalytic(path)
    planned = by_path[path]
    d = int(shape[0])
    if planned.role == "release":
        leaf = step.__class__(**step.get_params(deep=False))
        leaf.set_params(epsilon=planned.epsilon, delta=planned.delta)
        events[path] = leaf.planned_event(n, d)
    elif planned.role == "public":
        leaf = step
    else:
        raise _NotAnalytic(path)
    return leaf.planned_output(n, d)


def _column_count(columns, X):
    """Number of columns of ``X`` (schema only) a ColumnTransformer block selects, or None
    when it cannot be told without sklearn's own resolution (a slice, an unknown name, a
    callable not verified to read the schema only: it is never called)."""
    from .accounting._fitted import is_schema_selector

    if is_schema_selector(columns):
        return len(columns(X))
    names = list(X.columns) if hasattr(X, "columns") else None
    width = _width(X)
    if isinstance(columns, (str, int, np.integer)) and not isinstance(columns, bool):
        columns = [columns]
    if not isinstance(columns, (list, tuple, np.ndarray)):
        return None
    cols = list(columns)
    if cols and all(isinstance(c, (bool, np.bool_)) for c in cols):
        return int(sum(cols)) if len(cols) == width else None
    for c in cols:
        if isinstance(c, str):
            if names is None or c not in names:
                return None
        elif isinstance(c, (int, np.integer)) and not isinstance(c, bool):
            if not -width <= int(c) < width:
                return None
        else:
            return None
    return len(cols)


def planned_transformer_events(pipeline, plan, X, lazy=False):
    """``{path: event}`` of every releasing transformer, read from a fit of the
    pipeline's transformers, configured by ``plan``, on public placeholder data of ``X``'s
    schema and ``n`` rows (their events are functions of their parameters, ``n`` and the
    schema only: the real fit checks that it released the same)."""
    return dict(_release_probe(pipeline, plan, X, lazy)[0])


def _release_probe(pipeline, plan, X, lazy=False):
    """``({path: event}, {path: n_features_in_})`` of the releasing transformers, from one
    fit of the transformers on public placeholder rows (:func:`planned_transformer_events`;
    the input widths serve the width probe of a discovery whose input the schema does not
    tell, :func:`_n_columns_of`)."""
    import warnings

    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    from .accounting._fitted import walk_events

    releasing = [s for s in plan.steps if s.role == "release"]
    if not releasing:
        return {}, {}
    prefix = Pipeline(pipeline.steps[:-1]) if _final_is_model(plan) else Pipeline(
        pipeline.steps)
    probe = clone(prefix)
    probe.set_params(**configured(probe, plan, for_placeholder=True))
    key = _probe_key("events", probe, X, plan.n_samples)
    if key not in _PROBES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if lazy:
                from ._dask_pipeline import fit_tree, placeholder, placeholder_lengths

                fit_tree(probe, placeholder(X, plan.n_samples),
                         placeholder_lengths(plan.n_samples))
            else:
                probe.fit(placeholder_frame(X, plan.n_samples))
        # a transformer behind a released width is planned at its calibration target,
        # which bounds its release at every width (skdp.accounting._released_width)
        behind = []
        walk_events(probe, behind=behind)
        _remember(key, ({s.path: _event_at(probe, s.path, s.path in behind)
                         for s in releasing},
                        {s.path: getattr(fitted_leaf(probe, s.path), "n_features_in_", None)
                         for s in releasing}))
    return _PROBES[key]


#: results of fits on placeholder data (public), keyed by everything they depend on: the
#: probe's parameters, the schema and n (a repeated fit plans without refitting them)
_PROBES = {}
_PROBES_MAX = 64


def _remember(key, value):
    if len(_PROBES) >= _PROBES_MAX:
        _PROBES.pop(next(iter(_PROBES)))
    _PROBES[key] = value


def _probe_key(tag, probe, X, n_rows, *extra):
    """A complete, hashable description of a placeholder fit: every leaf parameter of the
    probe (estimator-valued parameters are covered by their own parameters), the schema
    of ``X`` (names, dtypes and the schema it declares in ``attrs``, or width and dtype)
    and the number of rows."""
    items = []
    for name, value in sorted(probe.get_params(deep=True).items()):
        if hasattr(value, "get_params") and not isinstance(value, type):
            items.append((name, type(value).__qualname__))
        else:
            items.append((name, _stable_repr(value)))
    if hasattr(X, "dtypes") and hasattr(X, "columns"):
        attrs = getattr(X, "attrs", None)
        declared = attrs.get("skdp_schema") if isinstance(attrs, dict) else None
        schema = (tuple(map(str, X.columns)), tuple(map(str, X.dtypes)),
                  _stable_repr(declared))
    else:
        schema = (_width(X), str(getattr(X, "dtype", None)))
    return (tag, tuple(items), schema, int(n_rows), extra)


def _stable_repr(value):
    """``repr`` that a long array cannot shorten (numpy summarises above 1000 items)."""
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.shape,
                hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
                if value.dtype != object else repr(value.tolist()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_stable_repr(v) for v in value))
    if hasattr(value, "get_params") and not isinstance(value, type):
        return (type(value).__qualname__, tuple(
            (k, _stable_repr(v)) for k, v in sorted(value.get_params(deep=False).items())))
    return repr(value)


def _final_is_model(plan):
    return any(s.role == "model" for s in plan.steps)


def fitted_leaf(estimator, path):
    """The fitted object at ``path`` (a ColumnTransformer's fitted clone for its blocks)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    node = estimator
    parts = path.split("__") if path else []
    for part in parts:
        if isinstance(node, Pipeline):
            node = node.named_steps[part]
        elif isinstance(node, ColumnTransformer):
            node = node.named_transformers_[part]
        elif isinstance(node, FeatureUnion):
            node = dict(node.transformer_list)[part]
        else:
            raise KeyError(path)
    return node


def _event_at(fitted, path, behind_width=False):
    """The event the plan gives the fitted leaf at ``path``: what it recorded, or behind
    a released width what a pipeline composes for it
    (:func:`skdp.accounting._released_width.behind_released_width`)."""
    from .accounting._released_width import behind_released_width

    leaf = fitted_leaf(fitted, path)
    event = getattr(leaf, "dp_event_", None)
    return behind_released_width(leaf, event) if behind_width and event is not None else event


def _plan_model(pipeline, plan, X, events, compose, shape=None, lazy=False):
    """Plan the final estimator: its width if public, its epsilon if the width is, the
    feasibility of the budget, and the event a ledger is charged.  ``shape``: the
    transformers' ``(lowest, nominal, bound)`` from :func:`analytic_prefix` (None: from
    placeholder fits, :func:`design_widths`)."""
    from sklearn.base import clone

    from .linear_model._budget import model_planned_event, width_rule_pins
    from .linear_model._nested_share import model_split

    transformer_events = [events[s.path] for s in plan.steps if s.role == "release"]
    model_steps = [s for s in plan.steps if s.role == "model"]
    if not model_steps:
        total = compose(*transformer_events) if transformer_events else None
        return _replace(plan, planned_event=total, ledger_event=total)
    model_step = model_steps[0]
    model = pipeline.steps[-1][1]
    if not _is_skdp_estimator(model):
        # the fit hands the model its share as the pipeline's own last step
        raise TypeError(
            f"the skdp estimator at {model_step.path!r} is nested in the last step "
            f"({type(model).__name__}) of the PrivatePipeline: make it the pipeline's own "
            "last step (flatten the nested Pipeline); nothing was fitted")
    solver_pin = {**_pipeline_solver(model, plan, transformer_events),
                  **_pipeline_alpha(model, plan)}
    if solver_pin:
        # a public rule of n and epsilon (the model's own params are the user's): the fit
        # hands it over with the plan's other pins, so plan and fit see the same solver
        model = clone(model).set_params(**solver_pin)
        model_step = _replace(model_step, params=dict(solver_pin))
    if shape is None:
        low, public, bound = design_widths(pipeline, plan, X, lazy=lazy)
    else:
        low, bound = shape[0], shape[2]
        public = not _tree_sets_width(pipeline, plan)
    norm = bound if isinstance(getattr(model, "data_norm", None), str) else None
    n = plan.n_samples
    if norm is not None and shape is None and _bound_follows_data(pipeline, plan, X, lazy,
                                                                   bound):
        # a released bound (a robust scaler's) reaching a model whose event reads it
        from .linear_model._budget import refuse_released_bound

        refuse_released_bound(model, n, max(int(low), 1), plan.epsilon, plan.delta,
                              "the transformers before it (their output bound)")
    if model._data_derived_inputs():
        # a bound or label set read from the data: the fit warns and reports epsilon_ =
        # inf; nothing to split (a ledger refuses it before the first release)
        from .accounting import _lazy_dp_accounting as dp_accounting

        model_step = _replace(model_step, epsilon=plan.epsilon,
                              event=dp_accounting.NonPrivateDpEvent(),
                              reason="reads a bound or its labels from the data: not private")
        steps = tuple(model_step if s.role == "model" else s for s in plan.steps)
        return _replace(plan, steps=steps, model_width=low if public else None,
                        planned_event=dp_accounting.NonPrivateDpEvent(),
                        ledger_event=dp_accounting.NonPrivateDpEvent())
    if public:
        width = low
        # (an estimator with releases of its own also gets its model's share: one search,
        # linear_model/_nested_share.py)
        eps_m, pins = model_split(model, transformer_events, n, low, plan.epsilon,
                                  plan.delta, data_norm=norm)
    else:
        # the width is released.  The model's event is fixed all the same, before any row:
        # its auto rules (alpha, DP-SGD's schedule, warm_gd's warm start) read the public
        # planning width, not the released one (auto_n_features; a model whose privacy
        # profile followed the released width would not compose as planned:
        # :func:`skdp.linear_model._budget.width_rule_pins`)
        width = design_widths(pipeline, plan, X, nominal=True, lazy=lazy)[0] \
            if shape is None else shape[1]
        pins = width_rule_pins(model, width)
        # (an estimator with releases of its own also gets its model's share: one search,
        # linear_model/_nested_share.py)
        eps_m, split = model_split(clone(model).set_params(**pins), transformer_events, n,
                                   width, plan.epsilon, plan.delta, data_norm=norm)
        pins = {**pins, **split}
    pinned = clone(model).set_params(**pins)
    event = model_planned_event(pinned, n, width, eps_m, plan.delta, data_norm=norm)
    if not public and not _width_free(pinned, event, n, eps_m, plan, norm):
        if pipeline.model_plan == "fixed":
            raise ValueError(
                f"{type(model).__name__}(solver={getattr(model, 'solver', None)!r}) "
                "releases an event that depends on the width of the released basis "
                "even with its rules read at a public width, so the pipeline cannot fix "
                "it before the fit (model_plan='fixed', which a private search or "
                "cross-validation needs); outside a search use model_plan='adaptive', in "
                "one a solver whose event does not follow the width (the default "
                "'warm_gd', the DP-SGD solvers 'dpsgd' and 'rrpsgd')")
        # not fixed by its rules' width (the nonconvex regressor's zeroth_order and
        # spider at calibration="paper": their printed noise reads the width)
        return _dominated_model_plan(plan, model_step, transformer_events, model, n, width,
                                     low, norm, {**solver_pin, **pins})
    total = compose(*transformer_events, event) if transformer_events else event
    model_step = _replace(model_step, epsilon=eps_m, event=event,
                          params={**solver_pin, **pins})
    ledger = total
    planned_width = width
    steps = tuple(model_step if s.role == "model" else s for s in plan.steps)
    return _replace(plan, steps=steps, model_width=planned_width,
                    planned_event=total, ledger_event=ledger)


#: the plan's note for a model whose event still follows the released width
DOMINATED_NOTE = (
    "the model's event follows the released width even with its rules read at a public "
    "width: it is fitted at the released width to the (epsilon, delta) of its step and "
    "composed as the pair that dominates every such release (the default solver "
    "'warm_gd', 'rrpsgd' or 'dpsgd' compose tighter)")


def _dominated_model_plan(plan, model_step, events, model, n, width, low, data_norm,
                          params):
    """The plan of a final model whose event follows the released width even with its
    rules read at the planning width (``DPNonconvexRegressor``'s ``zeroth_order`` and
    ``spider`` at ``calibration="paper"``).  Its share ``(epsilon_m,
    delta_m)`` is fixed before any row: ``delta_m`` a public part of the budget's delta
    left by the transformers' thresholds
    (:data:`skdp.linear_model._auto.DOMINATED_MODEL_DELTA_SHARE`), ``epsilon_m`` the
    largest for which the transformers' events followed by *any* ``(epsilon_m,
    delta_m)``-DP release meet the budget
    (:func:`skdp.linear_model._budget.largest_dominated_epsilon`).  The fit calibrates
    the model to ``(epsilon_m, delta_m)`` at the width released, and the pipeline composes
    the dominating pair, never the model's own event: whatever width the transformers
    released, the model is ``(epsilon_m, delta_m)``-DP, so the adaptive composition is
    bounded by the planned one (a calibration of each width's exact event is not:
    :func:`skdp.linear_model._budget.width_rule_pins`).  Refused before any row when the
    model has no plan at that share at the lowest or the planning width."""
    from sklearn.base import clone

    from .accounting import DeltaDpEvent, compose, pure_dp_event
    from .accounting._rdp import peel_delta_events
    from .linear_model._auto import DOMINATED_MODEL_DELTA_SHARE
    from .linear_model._budget import largest_dominated_epsilon, model_planned_event

    # a share of the delta the transformers' thresholds leave
    spent = peel_delta_events(compose(*events))[1] if events else 0.0
    delta_m = (float(plan.delta) - spent) * DOMINATED_MODEL_DELTA_SHARE
    eps_m = largest_dominated_epsilon(events, plan.epsilon, plan.delta, delta_m)
    probe = clone(model).set_params(**params)
    for w in sorted({max(int(low), 1), int(width)}):
        if model_planned_event(probe, n, w, eps_m, delta_m, data_norm=data_norm) is None:
            raise ValueError(
                f"{type(model).__name__}(solver={getattr(model, 'solver', None)!r}) has no "
                f"plan at epsilon={eps_m:.4g}, delta={delta_m:.3g} on {n} rows of {w} "
                "columns, its share of the budget next to the transformers' releases; "
                "nothing was fitted")
    event = compose(pure_dp_event(eps_m), DeltaDpEvent(delta_m))
    model_step = _replace(model_step, epsilon=eps_m, delta=delta_m, event=event,
                          params=dict(params), dominated=True)
    total = compose(*events, event) if events else event
    steps = tuple(model_step if s.role == "model" else s for s in plan.steps)
    return _replace(plan, steps=steps, model_width=width, planned_event=total,
                    ledger_event=total, notes=tuple(plan.notes) + (DOMINATED_NOTE,))


def _width_free(pinned, event, n, eps_m, plan, data_norm):
    """Whether the pinned model's event has one privacy profile at every width the
    transformers can release: :func:`skdp.accounting._released_width.event_follows_width`
    of the model at its share (widths 1 to ``2^40``, to float rounding: a
    zeroth-order model's Gaussian steps follow the width, their total ``mu`` does not),
    the same probe a scikit-learn ``Pipeline``'s model behind a released width gets; the
    planning and the lowest width lie within its range."""
    from sklearn.base import clone

    from .accounting._released_width import event_follows_width

    if event is None:
        return False
    probe = clone(pinned).set_params(epsilon=eps_m, delta=plan.delta)
    if data_norm is not None:
        probe.set_params(data_norm=float(data_norm))
    return not event_follows_width(probe, n)


def _pipeline_solver(model, plan, transformer_events):
    """``{"solver": ...}`` for a final ``solver="auto"`` classifier behind DP transformers
    that release, when the pipeline rule of ``n`` and ``epsilon`` picks a solver for it
    (:func:`skdp.linear_model._auto.pipeline_model_solver`: ``dpsgd`` below ``epsilon = 5``
    or on small tables, ``n epsilon < 10^5``, unless ``n epsilon >= 3 x 10^5``), else
    ``{}`` (the estimator's own rule).  Public: the model's class and parameters, ``n``
    and ``epsilon``."""
    from .linear_model._auto import pipeline_model_solver

    if not transformer_events or getattr(model, "solver", None) != "auto":
        return {}
    solver = pipeline_model_solver(type(model).__name__, plan.epsilon, plan.n_samples)
    return {} if solver is None else {"solver": solver}


def _pipeline_alpha(model, plan):
    """``{"alpha": "auto_spline"}`` for a final ``DPHuberRegressor(alpha="auto")`` with a
    public ``y_bound <= huber_threshold`` behind a releasing ``DPSplineTransformer`` (:func:`skdp.linear_model._auto.pipeline_model_alpha`:
    the ``auto`` rule scaled for a spline basis), else ``{}``.  The plan and the fit both
    read the pinned value (the plan's events are computed with it), and the fit restores
    the user's ``alpha``.  Public: the pipeline's classes and the model's parameter."""
    from .linear_model._auto import pipeline_model_alpha

    releases = {s.estimator for s in plan.steps if s.role == "release"}
    return pipeline_model_alpha(model, releases)


def design_widths(pipeline, plan, X, nominal=False, lazy=False):
    """``(width, public, bound)``: the width of the model's design on ``X``'s schema,
    whether it is public (no category discovery in the tree) -- when it is not, the lowest
    width (every discovering encoder releasing no category) -- and the transformers'
    output bound on placeholder data (None without one), which stands for the model's
    ``data_norm="auto"`` when its event is planned (the events are in noise units: the
    bound's value does not change them, a check at fit time makes sure).

    ``nominal``: the planning width instead -- every spline knot distinct, and every
    discovering encoder releasing its public estimate of categories per column
    (:meth:`~skdp.preprocessing.DPOneHotEncoder.planned_categories`, a function of ``n``
    and its share of the budget)."""
    import warnings

    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    discovering = _tree_sets_width(pipeline, plan)
    if len(pipeline.steps) == 1:
        return _width(X), True, None
    probe = clone(Pipeline(pipeline.steps[:-1]))
    params = configured(probe, plan, for_placeholder=True)
    # a discovering encoder on placeholder data releases the placeholder's one value at
    # most: give it public lists instead, empty for the lowest width, of its public
    # estimate's length for the planning width
    for s in plan.steps:
        leaf = fitted_leaf_template(pipeline, s.path)
        if s.role == "release" and _discovers_categories(leaf):
            d = _n_columns_of(pipeline, plan, s.path, X, lazy)
            k = _planned_categories(leaf, s, plan.n_samples, d) if nominal else 0
            params[f"{s.path}__categories"] = [list(range(k)) for _ in range(d)]
            params.pop(f"{s.path}__epsilon", None)
            params.pop(f"{s.path}__delta", None)
    probe.set_params(**{k: v for k, v in params.items()
                        if k in probe.get_params(deep=True)})
    key = _probe_key("widths", probe, X, plan.n_samples, nominal)
    if key not in _PROBES:
        from ._pipeline import output_norm_bound

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # n rows: the transformers' auto rules (the number of knots) see the real n
            if lazy:
                from ._dask_pipeline import fit_tree, placeholder, placeholder_lengths

                fit_tree(probe, placeholder(X, plan.n_samples, spread=nominal),
                         placeholder_lengths(plan.n_samples))
                out = probe.transform(placeholder_frame(X, 2))   # the width is public
            else:
                out = probe.fit_transform(placeholder_frame(X, plan.n_samples,
                                                            spread=nominal))
        _remember(key, (int(out.shape[1]), output_norm_bound(probe)))
    width, bound = _PROBES[key]
    return width, not discovering, bound


def _planned_categories(leaf, step, n, d):
    """The public estimate of categories per column of the discovering encoder ``leaf``
    at the share ``step`` of the plan gives it
    (:meth:`~skdp.preprocessing.DPOneHotEncoder.planned_categories`)."""
    encoder = leaf.__class__(**leaf.get_params(deep=False))
    encoder.set_params(epsilon=step.epsilon, delta=step.delta)
    return encoder.planned_categories(n, d)


def _bound_follows_data(pipeline, plan, X, lazy, bound):
    """Whether the transformers' output bound differs between two public placeholders
    (zeros, and distinct values): then it is a released value (a robust scaler's
    quantiles), not a public one (a spline basis or one-hot block's ``sqrt`` of its
    columns)."""
    other = design_widths(pipeline, plan, X, nominal=True, lazy=lazy)[2]
    return other != bound


def _tree_sets_width(pipeline, plan):
    """Whether a release of the tree sets the model's width (:func:`_sets_width`)."""
    return any(_sets_width(fitted_leaf_template(pipeline, s.path))
               for s in plan.steps if s.role == "release")


def _width(X):
    shape = getattr(X, "shape", None)
    return int(shape[1]) if shape is not None and len(shape) > 1 else 1


def fitted_leaf_template(pipeline, path):
    """The (unfitted) step object at ``path`` in the pipeline's parameters."""
    if not path:
        return pipeline
    return pipeline.get_params(deep=True)[path]


def _n_columns_of(pipeline, plan, path, X, lazy=False):
    """Number of input columns of the step at ``path``: from the schema when it tells
    (:func:`schema_input_widths`), else from the fit of the transformers on placeholder
    rows (:func:`_release_probe`: the step follows one that may change the columns)."""
    width = schema_input_widths(pipeline, X).get(path)
    if width is None:
        width = _release_probe(pipeline, plan, X, lazy)[1].get(path)
    if width is None:
        raise ValueError(f"the input width of step {path!r} is not known before the fit")
    return int(width)
