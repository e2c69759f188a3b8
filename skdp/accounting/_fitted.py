"""Read the privacy of a fitted estimator or pipeline.

A fitted skdp estimator carries ``dp_event_`` (what its ``fit`` released) and
``privacy_guaranteed_`` (whether every bound that shaped the noise was public).  A
scikit-learn ``Pipeline`` of such steps released the composition of its steps' events: each
step's ``fit`` reads the private rows once (through the previous steps' *already private*
output), so the pipeline's guarantee is the sequential composition of its steps' events.

A step that learned from the data *without* a DP mechanism (a plain ``StandardScaler``, a
``PCA``...) voids the guarantee of everything after it.  A step is accepted without an event
only when skdp can *verify* that it learns nothing from the data values and maps each row
independently (:func:`_is_data_free`: ``"passthrough"``, ``None``, a short list of exact
classes, public-category one-hot encoding); anything else makes :func:`fitted_dp_event`
raise and :func:`fitted_privacy_guaranteed` return False.  In particular scikit-learn's
``FunctionTransformer`` is not data-free: its ``func`` receives the whole batch and can
rescale every row by a statistic of all rows (``A / abs(A).max()``: one row of ``1e4``
shrinks every other row), so the next step's neighbouring inputs differ in all rows.
:class:`skdp.preprocessing.RowwiseFunctionTransformer` calls a function on one row at a
time and is data-free by construction.

The same holds for the column selectors of a ``ColumnTransformer``: a callable given as a
block's columns is called on the whole table, so which columns reach a step could follow
one row (``["a"] if (df["a"] > 10).any() else ["b"]``), with no noise.  A selector is
accepted only when skdp can verify that it reads the schema alone (names, dtypes):
scikit-learn's ``make_column_selector`` itself, not a subclass
(:func:`is_schema_selector`); any other makes :func:`fitted_dp_event` raise and
:func:`fitted_privacy_guaranteed` return False.

The containers themselves -- ``Pipeline``, ``ColumnTransformer``, ``FeatureUnion`` -- are
walked as composition only when skdp verifies their class exactly
(:func:`unverified_containers`): a subclass can override ``fit``, ``fit_transform``,
``transform`` or ``_iter`` and read the whole private table between its DP steps (add a
column of the batch mean, pick columns from the values), so it is refused like any other
unverified step.
"""

import sys

from . import _lazy_dp_accounting as dp_accounting  # events only; see that module
from ._events import compose

__all__ = ["fitted_dp_event", "fitted_privacy_guaranteed"]

# The verified data-free classes (exact classes only: a subclass can override ``fit`` or
# ``transform`` and read the batch), with the reason each one learns nothing and maps a row
# to an output that depends on that row and on public parameters only.  Their ``fit``
# reads the schema (number of columns, names) and nothing else.
_SKLEARN_DATA_FREE = {
    "PolynomialFeatures": "monomials of one row's values; powers_ depend on the number "
                          "of columns and on degree/interaction_only/include_bias only",
    "Normalizer": "divides a row by that row's own norm (norm is a public parameter)",
    "Binarizer": "compares each value with the public threshold parameter",
}
_SKDP_DATA_FREE = {
    "RowwiseFunctionTransformer": "calls func on one copied row at a time: a row's output "
                                  "is func of that row and of public kw_args",
    "FrameToPandas": "converts a polars frame to pandas cell by cell (identity on rows)",
}
# FunctionTransformer only without a function (func None: the identity, which scikit-learn
# puts in place of "passthrough" in ColumnTransformer.transformers_ and a fitted
# FeatureUnion's transformer_list): :func:`_is_identity_function`.
# Deliberately absent: FunctionTransformer with a func (it sees the whole batch),
# SplineTransformer and KBinsDiscretizer (knots / bin edges are quantiles or ranges of the
# data), any scaler, OneHotEncoder with categories="auto" (lists every value that occurs).

# The verified column selectors of a ColumnTransformer block, as (module, class): exact
# classes only (a subclass can override ``__call__`` and read the rows), with why each one
# reads the table's schema and no value.
_SCHEMA_SELECTORS = {
    ("sklearn.compose", "make_column_selector"):
        "df.iloc[:1].select_dtypes(dtype_include, dtype_exclude).columns, then the names "
        "matching pattern: dtypes and column names only (the row it slices is never read)",
    ("skdp._pipeline", "_SchemaFromDtypes"):
        "the names a frame declares in attrs['skdp_schema'], else make_column_selector "
        "by dtype: column names, attrs and dtypes only",
}


# The containers skdp walks as composition, as (module, class): exact classes only (a
# subclass can override ``fit``, ``fit_transform``, ``transform`` or ``_iter`` and read the
# whole private table between its steps), with why each one reads the rows only through
# its steps and hands every step's output on row by row.
_VERIFIED_CONTAINERS = {
    ("sklearn.pipeline", "Pipeline"):
        "fits each step on the previous step's output, in order; reads no row itself",
    ("sklearn.pipeline", "FeatureUnion"):
        "fits every block on its own input and stacks the blocks' outputs row by row",
    ("sklearn.compose", "ColumnTransformer"):
        "fits every block on the columns its selector names (selectors verified by "
        "is_schema_selector) and stacks the outputs row by row (the output format is "
        "checked by density_decides_format)",
    ("skdp._pipeline", "PrivatePipeline"):
        "a Pipeline whose fit, fit_transform, fit_predict, transform, predict, score and "
        "__getitem__ are skdp's: they execute the plan made before any row "
        "(skdp._plan.make_plan), each step still reading the rows only through the "
        "previous step's output; its other methods are Pipeline's",
    ("skdp.preprocessing._csr_assembly", "SparseColumnTransformer"):
        "a ColumnTransformer that overrides _hstack only: it stacks the blocks' outputs "
        "row by row (scipy.sparse.hstack's matrix, bit for bit) and decides the format "
        "from the blocks' types, never from a value",
}


def _is_pipeline(estimator):
    # Not imported at module level (a default fit does not need sklearn.pipeline): an
    # estimator can only be a Pipeline if sklearn.pipeline has been imported.
    pipeline = sys.modules.get("sklearn.pipeline")
    return pipeline is not None and isinstance(estimator, pipeline.Pipeline)


def _named_parts(estimator):
    """The fitted sub-steps of a ``ColumnTransformer`` or ``FeatureUnion`` as
    ``(name, step)`` (None if ``estimator`` is neither).  Each reads the same rows as its
    siblings, so their events compose *sequentially* (one person's row is in every
    block's input), never in parallel."""
    compose = sys.modules.get("sklearn.compose")
    if compose is not None and isinstance(estimator, compose.ColumnTransformer):
        if not hasattr(estimator, "transformers_"):
            return None
        return [(name, trans) for name, trans, cols in estimator.transformers_ if not
                (isinstance(trans, str) and trans == "drop") and not _no_columns(cols)]
    pipeline = sys.modules.get("sklearn.pipeline")
    if pipeline is not None and isinstance(estimator, pipeline.FeatureUnion):
        return [(name, trans) for name, trans in estimator.transformer_list if not
                (isinstance(trans, str) and trans == "drop")]
    return None


def density_decides_format(step, input_sparse=None):
    """Whether ``step`` is a ``ColumnTransformer`` whose output format (sparse or dense)
    scikit-learn may pick from the *density of the data*.

    ``ColumnTransformer`` sets ``sparse_output_ = nnz/total < sparse_threshold`` when a
    block is sparse, and a sparse block's stored entries count the rows' values (a spline
    row stores ``degree + 1`` entries for a value and one for a missing one; an encoder's
    unknown row stores none; a ``Binarizer`` of sparse input, its non-zeros).  Replacing
    one row can then flip the format -- of the transform, of the design the model is
    fitted on, of ``sparse_output_``, of whether a later check raises -- with certainty:
    one bit of the data that no release covers.  So the answer must not read the rows:
    it is a function of the parameters and of whether the input is sparse
    (``input_sparse``: True or False when known -- the plan reads the type of ``X`` --,
    None when not: a fitted ``ColumnTransformer`` that saw a DataFrame had dense input,
    else the input may have been sparse).

    The format is public when ``sparse_threshold`` is 0 (always dense); when
    ``sparse_threshold >= 1`` and a block's rows always hold a zero (a sparse DP spline
    basis or DP one-hot encoding: every row leaves its missing column, or all but one
    column, empty), so that the output is sparse whatever the rows; when no block can be
    sparse (dense input, and no leaf with a true ``sparse_output`` parameter; with sparse
    input every block may pass the sparsity on); and for skdp's
    :class:`~skdp.preprocessing._csr_assembly.SparseColumnTransformer`, which decides it
    from the blocks' types alone."""
    compose = sys.modules.get("sklearn.compose")
    if compose is None or not isinstance(step, compose.ColumnTransformer):
        return False
    if getattr(type(step), "FORMAT_FROM_TYPES", False) or not step.sparse_threshold > 0:
        return False
    blocks = [trans for _, trans, _ in step.transformers]
    if not (isinstance(step.remainder, str) and step.remainder == "drop"):
        blocks.append(step.remainder)
    blocks = [b for b in blocks if not (isinstance(b, str) and b == "drop")]
    if step.sparse_threshold >= 1 and any(map(_rows_hold_a_zero, _selecting_blocks(step))):
        return False
    if input_sparse is None:
        input_sparse = not hasattr(step, "feature_names_in_")
    return bool(blocks) and (input_sparse or any(map(_has_sparse_output, blocks)))


def _has_sparse_output(block):
    """Whether a block (on dense input) can output a sparse matrix: a leaf with a true
    ``sparse_output`` parameter (DP or scikit-learn encoders, a sparse spline basis)."""
    if isinstance(block, str) or block is None:
        return False
    if _is_pipeline(block):
        return any(_has_sparse_output(sub) for _, sub in block.steps)
    if hasattr(block, "get_params"):
        params = block.get_params(deep=True)
        return any(key.split("__")[-1] == "sparse_output" and bool(value) is True
                   for key, value in params.items() if not callable(value))
    return False


def _selecting_blocks(step):
    """The blocks of a ``ColumnTransformer`` that certainly select a column (so their
    output is part of the stack): the fitted blocks with columns, or before the fit those
    given a non-empty list of columns (a selector might select none)."""
    if hasattr(step, "transformers_"):
        return [t for _, t, cols in step.transformers_
                if not (isinstance(t, str) and t == "drop") and not _no_columns(cols)]
    return [t for _, t, cols in step.transformers
            if not callable(cols) and not _no_columns(cols)]


def _rows_hold_a_zero(block):
    """Whether every output row of ``block`` has an unstored zero, by construction: a
    ``DPSplineTransformer`` with sparse output (a value's row leaves the missing column
    empty, a missing value's row every basis column) or a ``DPOneHotEncoder`` (one stored
    one per column among at least its "other" and "missing" columns), possibly the last
    step of a pipeline block."""
    if _is_pipeline(block):
        block = block.steps[-1][1]
    return (_is_exact(block, "skdp.preprocessing", ("DPSplineTransformer", "DPOneHotEncoder"))
            and bool(block.get_params().get("sparse_output")) is True)


def refuse_density_formats(estimator, input_sparse=None, path=""):
    """Raise ``TypeError`` if a ``ColumnTransformer`` in the tree of ``estimator`` picks
    its output format from the data's density (:func:`density_decides_format`); the
    message names the step and the way out.  A fitted
    :class:`~skdp.PrivatePipeline` passes: its plan checked its whole tree, knowing the
    input's type, before any row was read (:func:`skdp._plan.make_plan`)."""
    compose = sys.modules.get("sklearn.compose")
    pipeline = sys.modules.get("sklearn.pipeline")
    if getattr(estimator, "privacy_plan_", None) is not None:
        return
    if density_decides_format(estimator, input_sparse):
        where = f"step {path!r}" if path else "the ColumnTransformer"
        raise TypeError(
            f"{where} has sparse_threshold={estimator.sparse_threshold!r} and a block "
            "that can output a sparse matrix (a sparse_output block, or sparse input "
            "passed on): scikit-learn then picks sparse or dense "
            "output from the density of the private rows, and one replaced row (a missing "
            "value, an unknown category) can flip it -- one bit of the data that no noise "
            "covers. Set sparse_threshold=0 (always dense), or make every block dense; "
            "make_private_pipeline's own ColumnTransformer decides the format from the "
            "blocks' types alone")
    if _is_pipeline(estimator):
        children = estimator.steps
    elif compose is not None and isinstance(estimator, compose.ColumnTransformer):
        children = [(name, trans) for name, trans, _ in estimator.transformers]
    elif pipeline is not None and isinstance(estimator, pipeline.FeatureUnion):
        children = list(estimator.transformer_list)
    else:
        return
    current = input_sparse
    for name, child in children:
        if isinstance(child, str) or child is None:
            continue
        refuse_density_formats(child, current, f"{path}__{name}" if path else name)
        if _is_pipeline(estimator) and _has_sparse_output(child):
            # a pipeline's next step reads this step's output: sparse from here on (a
            # step without such a parameter is taken to pass its input's type on)
            current = True


def _parts(estimator):
    """The fitted sub-steps of a ``ColumnTransformer`` or ``FeatureUnion`` (None if
    ``estimator`` is neither); :func:`_named_parts` without the names."""
    parts = _named_parts(estimator)
    return None if parts is None else [trans for _, trans in parts]


def _no_columns(columns):
    """Whether a ColumnTransformer block selected no column (it is then never fitted)."""
    if columns is None:
        return True
    if hasattr(columns, "__len__") and not isinstance(columns, str):
        if len(columns) == 0:
            return True
        if all(isinstance(c, bool) for c in columns) or getattr(columns, "dtype", None) == bool:
            return not any(columns)
    return False


def is_schema_selector(columns):
    """Whether ``columns``, a ColumnTransformer block's selector, is one skdp verifies to
    read the schema only: an instance of exactly one of the classes of
    ``_SCHEMA_SELECTORS`` (reasons listed there).

    Privacy argument: the selected columns are then a function of the column names and
    dtypes -- public, the same on two neighbouring tables -- so every block receives the
    same columns on both and each DP step's sensitivity holds.  A subclass can override
    ``__call__`` and is not verified, nor is any other callable: scikit-learn calls it on
    the private table, and a routing that follows one row moves that row's information
    into which column a DP step receives (a release with epsilon = inf)."""
    return any(_is_exact(columns, module, (name,)) for module, name in _SCHEMA_SELECTORS)


def unverified_selectors(estimator):
    """``(block name, selector)`` of every block of the ``ColumnTransformer`` ``estimator``
    (its ``transformers`` parameter, fitted or not, dropped blocks included: their columns
    decide what the remainder receives) whose columns are given by a callable that
    :func:`is_schema_selector` does not verify; ``[]`` for anything else.  Lists, names,
    positions, masks and slices are fixed before any row is read."""
    compose = sys.modules.get("sklearn.compose")
    if compose is None or not isinstance(estimator, compose.ColumnTransformer):
        return []
    return [(name, columns) for name, _, columns in estimator.transformers
            if callable(columns) and not is_schema_selector(columns)]


def selector_refusal(path, block, selector):
    """The TypeError for a ColumnTransformer (at ``path``, "" if unknown) whose block
    ``block`` (None if unknown) selects its columns with the unverified callable
    ``selector`` (:func:`unverified_selectors`); it names the step, the block and the
    selector's type, never a value."""
    import types

    where = f"step {path!r} (ColumnTransformer)" if path else "a ColumnTransformer"
    which = f"block {block!r}" if block is not None else "a block"
    kind = "a function" if isinstance(selector, (types.FunctionType, types.MethodType)) \
        else f"a {type(selector).__name__} object"
    return TypeError(
        f"{where} selects the columns of {which} with {kind}, which is called on "
        "the whole table: which columns reach a step could depend on the rows (one row "
        "could decide what a DP step receives, with no noise), which voids the guarantee "
        "of the whole pipeline. Select columns by name, position or "
        "sklearn.compose.make_column_selector (dtypes and name patterns; that class "
        "itself, not a subclass)")


def _is_container(step):
    """Whether ``step`` is an instance (a subclass included) of scikit-learn's
    ``Pipeline``, ``FeatureUnion`` or ``ColumnTransformer``, the classes skdp's walks
    recognise (looked up in ``sys.modules``: an instance exists only once imported)."""
    pipeline = sys.modules.get("sklearn.pipeline")
    compose = sys.modules.get("sklearn.compose")
    bases = ((pipeline.Pipeline, pipeline.FeatureUnion) if pipeline is not None else ()) + \
        ((compose.ColumnTransformer,) if compose is not None else ())
    return bool(bases) and isinstance(step, bases)


def is_verified_container(step):
    """Whether ``step`` is an instance of exactly one of the classes of
    ``_VERIFIED_CONTAINERS`` (reasons listed there), not of a subclass."""
    return any(_is_exact(step, module, (name,)) for module, name in _VERIFIED_CONTAINERS)


def _container_children(container):
    """``(name, step)`` of everything a verified container fits or holds: a pipeline's
    steps; a ``ColumnTransformer``'s blocks and ``remainder`` as given and, once fitted,
    as fitted (``transformers_``); a ``FeatureUnion``'s blocks."""
    if hasattr(container, "steps"):
        return list(container.steps)
    if hasattr(container, "transformer_list"):
        return list(container.transformer_list)
    children = [(name, trans) for name, trans, _ in container.transformers]
    children.append(("remainder", container.remainder))
    children += [(name, trans) for name, trans, _ in getattr(container, "transformers_", ())]
    return children


def unverified_containers(estimator, path=""):
    """``(path, container)`` of every ``Pipeline``, ``ColumnTransformer`` or
    ``FeatureUnion`` in the tree of ``estimator`` (itself included) whose class is a
    subclass skdp does not verify (:func:`is_verified_container`), in walk order; only
    the verified containers' children are visited.

    Privacy argument: the accounting composes the events of a container's DP steps
    because a verified container reads the rows only through its steps and hands each
    step's output on row by row (``_VERIFIED_CONTAINERS``): replacing one row changes one
    input row of each step, whose sensitivity then holds.  A subclass can override
    ``fit``, ``fit_transform``, ``transform`` or ``_iter`` and read the whole private table
    itself -- add a column of the batch mean to every row, choose which columns a DP
    step receives from the values -- so a replaced row changes every row a later step
    receives (or its columns) with no noise: a release with epsilon = inf that the steps'
    events do not cover.  It is refused, as the leaf steps are (exact classes only,
    ``_SKLEARN_DATA_FREE``: data-free means verified).  Reading the tree reads attributes
    only, never a row, so every entry point can call this before it fits or walks
    anything."""
    if _is_container(estimator) and not is_verified_container(estimator):
        yield path, estimator
        return
    if not _is_container(estimator):
        return
    for name, step in _container_children(estimator):
        if not isinstance(step, str) and step is not None:
            yield from unverified_containers(step, f"{path}__{name}" if path else name)


def container_refusal(path, container):
    """The TypeError for the unverified container ``container`` at ``path`` ("" for the
    estimator itself) (:func:`unverified_containers`): it names the step, its class and
    the class it derives from, never a value."""
    kind = type(container).__name__
    verified = [getattr(sys.modules.get(module), name, None)
                for module, name in _VERIFIED_CONTAINERS]
    base = next((cls.__name__ for cls in type(container).__mro__[1:] if cls in verified),
                "a container")
    where = f"step {path!r} ({kind})" if path else kind
    return TypeError(
        f"{where} is a subclass of {base}, which skdp cannot verify: a subclass can "
        "override fit, fit_transform, transform or _iter and read the whole private table "
        "between its steps (a statistic of all rows in every row, columns chosen from the "
        "values) with no noise, which voids the guarantee of the whole pipeline. Use "
        "sklearn.pipeline.Pipeline, FeatureUnion, sklearn.compose.ColumnTransformer or "
        "skdp.PrivatePipeline themselves, and put a computation in a DP transformer or in "
        "skdp.preprocessing.RowwiseFunctionTransformer (one row at a time)")


def refuse_unverified_containers(estimator, path=""):
    """Raise :func:`container_refusal` for the first unverified container in the tree of
    ``estimator`` (:func:`unverified_containers`); called by every entry point that walks
    a tree (the plan, :func:`fitted_dp_event`, a ledger's ``attach``) before it walks."""
    for where, container in unverified_containers(estimator, path):
        raise container_refusal(where, container)


def _unverified_selectors_in_tree(estimator, path=""):
    """``(path, block, selector)`` of every unverified selector
    (:func:`unverified_selectors`) of the ColumnTransformers in the tree of ``estimator``
    (walking Pipelines and the fitted blocks of ColumnTransformers and FeatureUnions)."""
    for block, selector in unverified_selectors(estimator):
        yield path, block, selector
    children = estimator.steps if _is_pipeline(estimator) else _named_parts(estimator)
    for name, step in children or ():
        yield from _unverified_selectors_in_tree(step, f"{path}__{name}" if path else name)


def _named_steps(estimator, path=""):
    """``(path, step)`` of every leaf step of ``estimator`` (walking Pipeline,
    ColumnTransformer and FeatureUnion), in fit order; ``path`` joins the names with
    ``"__"`` as ``set_params`` does ("" for a bare estimator)."""
    if _is_pipeline(estimator):
        named = estimator.steps
    else:
        named = _named_parts(estimator)
        if named is None:
            yield path, estimator
            return
    for name, step in named:
        yield from _named_steps(step, f"{path}__{name}" if path else name)


def _steps(estimator):
    for _, step in _named_steps(estimator):
        yield step


def _is_public_one_hot(step):
    """scikit-learn's ``OneHotEncoder`` with public category lists learns nothing from the
    data values, provided an unknown value can never raise (``handle_unknown`` "ignore" or
    "infrequent_if_exist"), no frequency is read (``min_frequency`` and
    ``max_categories`` None) and no column is dropped (``drop`` None).

    With ``drop`` set (``"first"``, ``"if_binary"`` or a list), scikit-learn's
    ``transform`` warns "Found unknown categories ... encoded as all zeros" whenever a row
    holds a value outside the lists: on a pair of neighbouring tables that differ in such
    a row, the warning (an exception under ``warnings.simplefilter("error")``) happens on
    one of them only -- an event no noise covers.  Without ``drop`` an unknown value is
    encoded as all zeros silently, and each output row is a function of its own row and
    the public lists."""
    return (_is_exact(step, "sklearn.preprocessing", ("OneHotEncoder",))
            and not (isinstance(step.categories, str) and step.categories == "auto")
            and step.handle_unknown in ("ignore", "infrequent_if_exist")
            and step.min_frequency is None and step.max_categories is None
            and step.drop is None)


def drops_a_column(step):
    """Whether ``step`` is scikit-learn's ``OneHotEncoder`` with ``drop`` set, which
    :func:`_is_public_one_hot` refuses whatever its categories (its refusals say so:
    :data:`DROP_REFUSAL`)."""
    return (_is_exact(step, "sklearn.preprocessing", ("OneHotEncoder",))
            and getattr(step, "drop", None) is not None)


#: why a ``OneHotEncoder`` with ``drop`` set is not data-free (:func:`_is_public_one_hot`)
DROP_REFUSAL = ("is not data-free: with drop set, scikit-learn warns at transform when a "
                "row holds a value outside the categories, which happens on one of two "
                "neighbouring tables only; give it public categories, "
                "handle_unknown='ignore' and drop=None")


def _is_identity_function(step):
    """scikit-learn's ``FunctionTransformer`` without a function: the identity (``func``
    None; no inverse, so no inverse check reads the data).  A fitted ``ColumnTransformer``
    or ``FeatureUnion`` holds one for every ``"passthrough"`` block."""
    return (_is_exact(step, "sklearn.preprocessing", ("FunctionTransformer",))
            and step.func is None and step.inverse_func is None)


def _is_exact(step, module, names):
    """Whether ``step`` is exactly (not a subclass of) one of ``module``'s classes
    ``names``.  ``module`` is looked up in ``sys.modules``: an instance of one of its
    classes exists only once it has been imported."""
    mod = sys.modules.get(module)
    name = type(step).__name__
    return mod is not None and name in names and type(step) is getattr(mod, name, None)


def _is_data_free(step):
    """Whether skdp can verify that ``step`` learns nothing from the data values.

    True for ``"passthrough"``/``None`` and the identity ``FunctionTransformer`` that
    scikit-learn substitutes for it (:func:`_is_identity_function`), scikit-learn's
    ``OneHotEncoder`` with public category lists (:func:`_is_public_one_hot`), and the
    exact classes of ``_SKLEARN_DATA_FREE`` and ``_SKDP_DATA_FREE`` (their reasons are
    listed there).  Each maps one row to an output that depends on that row and on public
    parameters only, so replacing a row changes one output row and the next DP step's
    sensitivity still holds.  A user function that receives the batch (a
    ``FunctionTransformer`` with a ``func``) is never data-free.
    """
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return True
    return (_is_identity_function(step)
            or _is_public_one_hot(step)
            or _is_exact(step, "sklearn.preprocessing", _SKLEARN_DATA_FREE)
            or _is_exact(step, "skdp.preprocessing", _SKDP_DATA_FREE))


def _refusal(path, step):
    """The TypeError for a step without an event that is not verified data-free: it names
    the step (its path in the pipeline, where known, and its type) and the way out."""
    kind = type(step).__name__
    where = f"step {path!r} ({kind})" if path else kind
    if kind == "FunctionTransformer" and getattr(step, "func", None) is not None:
        why = ("is not data-free: its func receives the whole batch, so one row can change "
               "every output row (e.g. a rescaling by the largest value), which voids the "
               "guarantee of the whole pipeline")
    elif drops_a_column(step):
        why = DROP_REFUSAL
    else:
        why = ("has no dp_event_: either it is not fitted or it learned from the data "
               "without differential privacy, which voids the guarantee of the whole "
               "pipeline")
    return TypeError(
        f"{where} {why}. Use skdp.preprocessing.RowwiseFunctionTransformer(func) for a "
        "function applied to one row at a time, or a DP transformer (e.g. "
        "skdp.preprocessing.DPStandardScaler)."
    )


def fitted_dp_event(estimator):
    """The dp-accounting event released by fitting ``estimator`` (estimator or Pipeline).

    Parameters
    ----------
    estimator : fitted skdp estimator or sklearn.pipeline.Pipeline
        For a pipeline every step must either carry ``dp_event_`` or be verified data-free
        (``"passthrough"``, ``None``, ``PolynomialFeatures``, ``Normalizer``,
        ``Binarizer``, ``OneHotEncoder`` with public category lists that ignores unknown
        values and drops no column, :class:`skdp.preprocessing.RowwiseFunctionTransformer`,
        :class:`skdp.preprocessing.FrameToPandas`).  A ``FunctionTransformer`` with a
        ``func`` is not: its function sees the whole batch (module docstring); without
        one it is the identity that stands for ``"passthrough"``.  ``ColumnTransformer`` and
        ``FeatureUnion`` are walked: their blocks read the same rows, so their events
        compose sequentially.  A container is walked only as exactly ``Pipeline``,
        ``ColumnTransformer``, ``FeatureUnion``, :class:`~skdp.PrivatePipeline` or skdp's
        own ``SparseColumnTransformer``: a subclass can read the whole table between its
        steps and is refused (:func:`unverified_containers`).  A ``ColumnTransformer``
        block selects its columns by name, position, mask or ``make_column_selector``
        (schema only); any other callable selector is refused (module docstring).

    Notes
    -----
    The composition of a plain ``Pipeline`` is the composition of what each step released,
    with one exception.  When a DP transformer releases the width of the next step's input
    (the knots of a :class:`~skdp.preprocessing.DPSplineTransformer`, the categories a
    :class:`~skdp.preprocessing.DPOneHotEncoder` discovers) and a following estimator's
    ``auto`` rules read that width, the estimator's event follows a released value, and
    the exact composition of the events released is not a proof of the budget
    (:func:`skdp.linear_model._budget.width_rule_pins`; for a one-hot encoder before a
    logistic model, 1.041 and 1.047 were reported at two released widths, against 1.059
    for the Rényi-DP bound over every width the encoder can release).  Such an estimator is
    composed as the pair that dominates every ``(epsilon, delta)``-DP release of it, and a
    DP transformer behind such a step at its calibration target
    (:mod:`skdp.accounting._released_width`).  An estimator whose event does not follow
    the width keeps its exact event: one whose rules read a public ``auto_n_features``
    (a :class:`~skdp.PrivatePipeline`'s plan and the private searches set it), unless its
    solver's own plan reads the width (``zeroth_order``, ``spider`` at
    ``calibration="paper"``).

    Returns
    -------
    event : dp_accounting.DpEvent
        The step's own event, or ``ComposedDpEvent`` of the steps' events in order (replace-one
        neighbours, see :mod:`skdp.accounting._events`).  A step that released nothing
        (``NoOpDpEvent``: a public-category encoder) is left out, the identity of
        composition; ``NoOpDpEvent()`` if no step released anything.

    Raises
    ------
    TypeError
        If a step learned from the data without a DP mechanism or cannot be verified to
        be data-free, a container is a subclass skdp does not verify, or a
        ColumnTransformer selects columns with a callable that cannot be verified to read
        the schema only (the message names the step), or the estimator is not fitted.
    ValueError
        If two steps drew their noise from one stream, so that their events do not
        compose as independent: the same integer ``random_state`` at a common release
        site (two encoders, an encoder and a spline basis, two estimators; a
        ``DPStandardScaler`` and a ``DPOneHotEncoder`` of one seed use two sites and
        compose), or two generators in one state.  The seeds of a model a private search
        or cross-validation returned are its user's, not the keys the procedure used:
        its steps' ``keyed_by_`` records stand for those keys until a step is refitted.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import PolynomialFeatures
    >>> from skdp import DPLogisticRegression
    >>> from skdp.accounting import fitted_dp_event, get_epsilon
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (200, 2)); y = (X[:, 0] > 0).astype(int)
    >>> pipe = make_pipeline(PolynomialFeatures(2), DPLogisticRegression(
    ...     data_norm=3.0, classes=[0, 1], solver="output_perturbation",
    ...     random_state=0)).fit(X, y)
    >>> get_epsilon(fitted_dp_event(pipe), delta=1e-6) <= 1.0
    True

    Objective perturbation (the default solver of binary models) certifies ``epsilon_``
    from its exact privacy profile but records a *dominating* zCDP curve, which composes
    with other events at a slightly larger epsilon:

    >>> pipe = make_pipeline(PolynomialFeatures(2), DPLogisticRegression(
    ...     data_norm=3.0, classes=[0, 1], random_state=0)).fit(X, y)
    >>> pipe[-1].epsilon_, get_epsilon(fitted_dp_event(pipe), delta=1e-6) >= 1.0
    (1.0, True)
    """
    refuse_unverified_containers(estimator)   # before any walk reaches a subclass
    _check_distinct_seeds(estimator)
    events, recorded, _ = walk_events(estimator)
    if not recorded:
        raise TypeError("the estimator released nothing: no step carries a dp_event_")
    refuse_density_formats(estimator)
    return composed_events(events)


def walk_events(estimator, path="", input_released=False, behind=None, planned=False):
    """``(events, recorded, output_released)``: the events of ``estimator``'s fitted
    leaves in fit order (``NoOpDpEvent``\\ s left out, :func:`_step_event`), whether any
    leaf carries one, and whether the width of ``estimator``'s output is a released
    value.  A leaf without an event must be verified data-free (:func:`_refusal`
    otherwise).  ``input_released``: whether the width of its input is (a step before it
    in a pipeline released it).

    A step releases its output's width when its input's was (a scaler keeps it, a
    ``ColumnTransformer`` stacks its blocks) or its own release sets it
    (:func:`~._released_width.sets_width`; a releasing step of another library counts,
    as its width cannot be told).  The blocks of a ``ColumnTransformer`` or
    ``FeatureUnion`` read its input, never each other's output.  Behind a released width
    (:mod:`~._released_width`):

    * an skdp estimator's event is :func:`~._released_width.released_width_event` (its
      exact event when it is the same at every width, else the pair dominating its
      ``(epsilon, delta)``) -- but the model of a :class:`~skdp.PrivatePipeline`
      (``planned``: a step of one), whose plan fixed its event before any row;
    * a DP transformer's is its calibration target (``_width_free_event``: its recorded
      event moves with its input's width in the ninth digit, never below that target,
      :func:`skdp.preprocessing._common.target_event`), or for a class without one the
      pair of its ``(epsilon, delta)``;
    * a :class:`~skdp.PrivatePipeline` nested in the pipeline (its plan reads its input's
      width) is composed as the pair of its plan's total budget.

    ``behind``: a list the paths of the releasing leaves behind a released width are
    appended to (a :class:`~skdp.PrivatePipeline`'s plan reads it,
    :func:`skdp._plan._release_probe`)."""
    from ._released_width import (behind_released_width, released_width_event, sets_width,
                                  step_pair)

    if not path:
        # the root of a walk: no subclass of a container is walked as one
        refuse_unverified_containers(estimator)
    planned = planned or _is_private_pipeline(estimator)
    if _is_pipeline(estimator) and path and _is_private_pipeline(estimator):
        # nested in a pipeline: its plan read its input's width
        events, recorded, released = _walk_sequence(estimator.steps, path, input_released,
                                                    behind, planned)
        plan = getattr(estimator, "privacy_plan_", None)
        if input_released and events and plan is not None:
            events = [step_pair(plan.epsilon, plan.delta)]
        return events, recorded, released
    if _is_pipeline(estimator):
        return _walk_sequence(estimator.steps, path, input_released, behind, planned)
    refused = unverified_selectors(estimator)
    if refused:
        raise selector_refusal(path, *refused[0])
    parts = _named_parts(estimator)
    if parts is not None:
        events, recorded, released = [], False, input_released
        for name, step in parts:
            sub = walk_events(step, f"{path}__{name}" if path else name, input_released,
                              behind, planned)
            events += sub[0]
            recorded, released = recorded or sub[1], released or sub[2]
        return events, recorded, released
    event = _step_event(estimator)
    if event is None:
        if not _is_data_free(estimator):
            raise _refusal(path, estimator)
        return [], False, input_released
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return [], True, input_released
    if input_released and event is getattr(estimator, "dp_event_", None):
        if behind is not None:
            behind.append(path)
        if hasattr(estimator, "_planning_loss"):
            if not planned:
                event = released_width_event(estimator, event)
        else:
            event = behind_released_width(estimator, event)
    released = input_released or sets_width(estimator) or \
        not type(estimator).__module__.startswith("skdp.")
    return [event], True, released


def _walk_sequence(steps, path, released, behind=None, planned=False):
    """:func:`walk_events` of a pipeline's ``(name, step)`` sequence: each step reads the
    previous one's output."""
    events, recorded = [], False
    for name, step in steps:
        sub = walk_events(step, f"{path}__{name}" if path else name, released, behind,
                          planned)
        events += sub[0]
        recorded, released = recorded or sub[1], sub[2]
    return events, recorded, released


def _is_private_pipeline(step):
    pipeline = sys.modules.get("skdp._pipeline")
    return pipeline is not None and isinstance(step, pipeline.PrivatePipeline)


def composed_events(events):
    """The composition :func:`fitted_dp_event` reports: ``NoOpDpEvent`` for nothing
    released, one event as it is, else their ``ComposedDpEvent`` in order (a
    ``NoOpDpEvent`` left out)."""
    events = [e for e in events if not isinstance(e, dp_accounting.NoOpDpEvent)]
    if not events:
        return dp_accounting.NoOpDpEvent()
    return events[0] if len(events) == 1 else compose(*events)


def _step_event(step):
    """What a fitted step released: its ``dp_event_``, a ``NonPrivateDpEvent`` when it
    lost its guarantee (a bound or label set read from the data, whatever its own
    record), None without an event.

    A ``NoOpDpEvent`` (a public-category encoder: nothing released) is the identity of
    composition: :func:`fitted_dp_event` leaves it out, so a pipeline's event is the
    composition of its real releases -- the tree its plan states -- and one real release
    keeps its own certificate (:func:`released_steps`).  A step that lost its guarantee
    is never left out.  A private pipeline's model whose event followed the released
    width is composed as the pair that dominates every release of its planned (epsilon,
    delta) (:func:`skdp._plan._dominated_model_plan`): the pipeline's fit leaves that pair
    on the model with the event it released, and it holds for that fit only."""
    event = getattr(step, "dp_event_", None)
    if event is not None and not getattr(step, "privacy_guaranteed_", True):
        return dp_accounting.NonPrivateDpEvent()
    composed = getattr(step, "_composed_as", None)
    if composed is not None and event is not None and composed[0] is event:
        return composed[1]
    return event


def released_steps(estimator):
    """The fitted leaf steps of ``estimator`` that released something: a ``dp_event_``
    other than ``NoOpDpEvent`` (:func:`_step_event`)."""
    released = []
    for step in _steps(estimator):
        event = _step_event(step)
        if event is not None and not isinstance(event, dp_accounting.NoOpDpEvent):
            released.append(step)
    return released


def _release_seeds(estimator, path="", ints=True):
    """``(path, step, (site, seed))`` for every stream a releasing step drew from: one per
    release site of a step with an integer ``random_state`` (:func:`_seed_keys`), one for
    a step with a generator (its state after the fit); a fitted
    :class:`~skdp.PrivatePipeline` answers with the integer keys its plan handed its steps
    (which it derived distinct, whatever the steps' own seeds) -- and, when the plan handed
    out generators, with the states its fitted steps left them in.  ``ints=False``:
    generators only."""
    plan = getattr(estimator, "privacy_plan_", None)
    if plan is not None:
        prefix = f"{path}__" if path else ""
        params = estimator.get_params(deep=True) if ints else {}   # once, not per step
        for s in plan.steps:
            if ints and s.role in ("release", "model") and _is_int_seed(s.key):
                step = params.get(s.path)
                for key in _seed_keys(step, s.key):
                    yield prefix + s.path, step, key
        if any(_generator_state(s.key) is not None for s in plan.steps):
            # equal generators are equal keys too: compared by the fitted steps' states
            for name, step in estimator.steps:
                yield from _release_seeds(step, prefix + name, ints=False)
        return
    if _is_pipeline(estimator):
        named = estimator.steps
    else:
        named = _named_parts(estimator)
        if named is None:
            event = getattr(estimator, "dp_event_", None)
            if event is None or isinstance(event, dp_accounting.NoOpDpEvent):
                return
            for key in _seed_keys(estimator, getattr(estimator, "random_state", None), ints):
                yield path, estimator, key
            return
    for name, step in named:
        yield from _release_seeds(step, f"{path}__{name}" if path else name, ints)


#: the one "site" of every step given a generator as ``random_state`` (:func:`_seed_keys`)
_GENERATOR_SITE = "a generator"


def _seed_keys(step, seed, ints=True):
    """The streams ``step`` drew its noise from with ``random_state=seed``, as comparable
    ``(site, seed)`` pairs: two steps drew one stream when they have a pair in common
    (but in the cases of :func:`_drew_apart`).

    An integer seed gives one pair per release site of ``step`` (:func:`_release_sites`):
    every site hashes the seed with a spawn key of its own, so equal seeds are one stream
    only at one site.  A generator gives one pair, its state after the fit, whatever the
    step: every site draws from a generator given as ``random_state`` directly, so two
    generators left in one state (one generator deep-copied into two blocks, or two
    equally seeded ones) drew the same words.  Anything else (None: keys from the OS)
    gives none.  ``ints=False``: generators only."""
    if ints and _is_int_seed(seed):
        return [(site, int(seed)) for site in sorted(_release_sites(step))]
    state = _generator_state(seed)
    return [] if state is None else [(_GENERATOR_SITE, state)]


def _release_sites(step):
    """The release sites ``step``'s fit keys from an integer ``random_state``: the names
    its class gives in ``_release_sites``, from the table
    :data:`skdp._mechanisms._exact.RELEASE_SITES` that the key derivations read.

    Two steps given one seed share a stream exactly when they share a site: each site
    hashes the seed with a spawn key of its own (``SeedSequence(s, spawn_key=...)``, or
    ``default_rng(s)`` for the estimators and searches), so within a site equal seeds are
    equal keys and across sites they are unrelated ones (module docstring of
    :mod:`skdp._mechanisms._exact`; ``tests/accounting/test_fitted.py`` opens every
    site's keys at one seed and checks both directions).  A step of two sites (the
    solver and base-rate check of DPLogisticRegression) shares a stream with a step of
    either.  A skdp class that names no site is taken to share all of them; any other
    class, the site of its module (steps of one module may derive keys alike)."""
    sites = getattr(type(step), "_release_sites", None)
    if sites is not None:
        return frozenset(sites)
    module = type(step).__module__
    if module.startswith("skdp."):
        from .._mechanisms._exact import RELEASE_SITES

        return frozenset(RELEASE_SITES)
    return frozenset({f"module {module}"})


def _generator_state(seed):
    """A hashable fingerprint of a numpy generator's state, or None for anything else."""
    import numpy as np

    if isinstance(seed, np.random.Generator):
        return ("generator", repr(seed.bit_generator.state))
    if isinstance(seed, np.random.RandomState):
        state = seed.get_state(legacy=False)
        return ("random_state", repr({k: (v.tobytes() if hasattr(v, "tobytes") else v)
                                      for k, v in state["state"].items()}),
                state["has_gauss"], state["gauss"])
    return None


def _is_int_seed(seed):
    import numbers

    return isinstance(seed, numbers.Integral) and not isinstance(seed, bool)


def _describe(seed_key):
    return str(seed_key) if isinstance(seed_key, int) else \
        "a generator in the same state (one generator copied into two steps, or equal seeds)"


def _check_distinct_seeds(estimator):
    """Refuse to compose releases that drew their noise from one stream: two steps given
    the same integer ``random_state`` at a common release site (:func:`_seed_keys`: two
    encoders, an encoder and a spline basis, two estimators), or two generators left in
    the same state.  Their unit noises are equal and cancel in a difference of their
    releases (two encoders of two equal columns reveal their exact counts' difference),
    so their events do not compose as independent mechanisms.  Equal seeds at distinct
    sites (a ``DPStandardScaler`` and a ``DPOneHotEncoder``, a transformer and an
    estimator) are distinct streams and compose, and so do the pairs
    :func:`_drew_apart` knows to have drawn distinct noise."""
    holders = {}
    for path, step, key in _release_seeds(estimator):
        for other_path, other in holders.get(key, ()):
            if not _drew_apart(step, other, key):
                raise ValueError(
                    f"steps '{other_path}' and '{path}' were fitted with the same "
                    f"random_state ({_describe(key[1])}) at the same release site: they "
                    "drew their noise from the same key, so their releases are not "
                    "independent and their events cannot be composed. Give each DP step "
                    "its own seed, or fit them in a skdp.PrivatePipeline(..., "
                    "random_state=...), which derives a distinct key for every step")
        holders.setdefault(key, []).append((path, step))


def _drew_apart(a, b, key):
    """Whether steps ``a`` and ``b``, which show the same stream ``key``
    (:func:`_seed_keys`), still drew distinct noise: they drew one generator in turn
    (:func:`_drew_in_turn`), or a private procedure keyed them apart
    (:func:`_keyed_apart`)."""
    return _drew_in_turn(a, b, key) or _keyed_apart(a, b)


def _drew_in_turn(a, b, key):
    """Whether two skdp steps hold *one* generator object (a plain ``Pipeline`` does not
    copy its steps).  Every skdp release site draws from a generator given as
    ``random_state`` itself, so they drew from it in turn, the second step the words after
    the first's -- whereas two objects in one state (copies a ``ColumnTransformer`` made,
    equal seeds) drew the same words.  Another class might draw from a copy and leave the
    object as it was: not excused."""
    return (key[0] == _GENERATOR_SITE
            and all(hasattr(type(s), "_release_sites") for s in (a, b))
            and getattr(a, "random_state", None) is getattr(b, "random_state", None))


def _keyed_apart(a, b):
    """Whether ``a`` and ``b`` both carry a valid :class:`ProcedureKeys` record of one
    model a private search or cross-validation returned, at two paths: that procedure
    keyed them itself with keys it checked distinct, and gave them their user's (maybe
    equal) seeds back afterwards, so their seeds are not the keys their releases used
    (:class:`ProcedureKeys` says why no refit, copy or other model can borrow this)."""
    record_a, record_b = _valid_record(a), _valid_record(b)
    return (record_a is not None and record_b is not None
            and record_a.model is record_b.model and record_a.path != record_b.path)


# ----------------------------------------------------------------------------------------
# The keys a private search or cross-validation used, withheld from the models it returns
# ----------------------------------------------------------------------------------------

#: the fitted attribute of a :class:`ProcedureKeys` record
KEYED_BY = "keyed_by_"


class ReturnedModel:
    """Identity token of one model a private procedure returned, shared by the
    :class:`ProcedureKeys` records of its steps (compared with ``is``; a pickle or deep
    copy of the whole model keeps the records' token shared)."""

    def __init__(self, procedure):
        self.procedure = procedure

    def __repr__(self):
        return f"ReturnedModel({self.procedure!r})"


class ProcedureKeys:
    """Public record on a DP step of a model that a private search or cross-validation
    returned: the procedure keyed the step's noise itself, with a key it checked distinct
    from the keys of every other release it made (or a key from the OS), and withheld
    that key.  It carries no key and nothing derived from one.

    **Why.**  The procedure fits every candidate with its own keys and gives the model it
    returns back its user's ``random_state`` values
    (:func:`skdp.model_selection._common.restore_user_seeds`): with the keys, whoever holds
    the model could refit it on each candidate neighbour and recognise the data by the
    release it reproduces bit for bit.  The seeds the model then carries are not the keys
    its releases used: two blocks the user gave ``random_state=7`` drew distinct keys, yet
    show one seed, and :func:`fitted_dp_event`, which reads a step's seed as its key,
    refused a model whose releases are independent.  With these records it judges the
    keys that were used: two steps with valid records of one returned model at two paths
    drew distinct keys (:func:`_keyed_apart`).

    **Why it cannot hide a real collision.**  A record holds only for the fit the
    procedure made (:meth:`holds_for`), of the model it returned:

    * ``model``: the :class:`ReturnedModel` token of that model, compared by identity;
      records of two returned models never excuse each other (two searches run with one
      ``random_state`` derive the same keys);
    * ``path``: the step's place in that model; one fitted step placed twice, or a
      shallow copy of it, has one path and is not excused;
    * the step's fitted attributes when the record was made, compared by identity: a
      refit replaces them (new arrays), so a step refitted in place -- which drew its keys
      from its user's seeds -- is judged on those seeds again; ``clone`` keeps no fitted
      attribute, and a refitted ``ColumnTransformer`` fits fresh clones of its blocks.
      ``set_params`` does not refit: the releases, and their record, stay the procedure's.
    """

    def __init__(self, model, path, step):
        self.model = model
        self.path = path
        self._fitted = _fitted_state(step)

    def holds_for(self, step):
        """Whether ``step`` is still the fit the record was made for: the same fitted
        attributes, each the very object it was (a number or string: the same value,
        which a pickle does not keep as one object; the arrays and events a refit
        renews are objects a pickle or deep copy keeps shared with the record)."""
        now = _fitted_state(step)
        return now.keys() == self._fitted.keys() and all(
            _same_fitted_value(now[name], value) for name, value in self._fitted.items())

    def __repr__(self):
        return (f"ProcedureKeys({self.model.procedure}, step {self.path!r}: keyed by the "
                "procedure, key withheld)")


def _fitted_state(step):
    """The public fitted attributes of ``step`` (names ending in ``_``), its record aside."""
    return {name: value for name, value in vars(step).items()
            if name.endswith("_") and not name.startswith("_") and name != KEYED_BY}


def _same_fitted_value(now, then):
    """``now is then``, or for an immutable scalar the same type and value."""
    if now is then:
        return True
    scalar = (bool, int, float, complex, str, bytes)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        scalar += (numpy.generic,)
    return (isinstance(then, scalar) and type(now) is type(then)
            and (now == then or (now != now and then != then)))


def _valid_record(step):
    """``step``'s :class:`ProcedureKeys` record if it still holds for ``step``, else None."""
    record = getattr(step, KEYED_BY, None)
    if isinstance(record, ProcedureKeys) and record.holds_for(step):
        return record
    return None


def record_procedure_keys(steps, procedure):
    """Mark the releasing leaf steps among ``steps`` (``(path, step)`` of one returned
    model, each keyed by the procedure) with :class:`ProcedureKeys` records sharing one
    :class:`ReturnedModel` token; called last, once the model is final."""
    model = ReturnedModel(procedure)
    for path, step in steps:
        if (getattr(step, "dp_event_", None) is not None and not _is_pipeline(step)
                and _named_parts(step) is None):
            setattr(step, KEYED_BY, ProcedureKeys(model, path, step))


def fitted_privacy_guaranteed(estimator):
    """Whether every DP step of a fitted estimator/pipeline ran on public bounds only.

    ``False`` as soon as one step has ``privacy_guaranteed_ = False`` (a bound was read
    from the data), a step learned from the data without DP, a step without an event
    cannot be verified to be data-free (a ``FunctionTransformer``: its function sees the
    whole batch), a ``Pipeline``, ``ColumnTransformer`` or ``FeatureUnion`` is a subclass
    skdp does not verify (:func:`unverified_containers`: it can read the whole table), or
    a ``ColumnTransformer`` selects columns with a callable that cannot be verified to
    read the schema only (:func:`is_schema_selector`).

    Parameters
    ----------
    estimator : fitted estimator or sklearn.pipeline.Pipeline
        A fitted skdp estimator, or a pipeline (nested pipelines are walked).

    Returns
    -------
    guaranteed : bool
        True iff every step either carries ``dp_event_`` with ``privacy_guaranteed_`` True
        or is verified data-free, every container is one of the verified classes and every
        column selector is verified (see :func:`fitted_dp_event`).

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdp.accounting import fitted_privacy_guaranteed
    >>> fitted_privacy_guaranteed(StandardScaler().fit([[0.0], [1.0]]))
    False
    """
    if next(unverified_containers(estimator), None) is not None:
        return False
    if next(_unverified_selectors_in_tree(estimator), None) is not None:
        return False
    for step in _steps(estimator):
        if getattr(step, "dp_event_", None) is not None:
            if not getattr(step, "privacy_guaranteed_", False):
                return False
        elif not _is_data_free(step):
            return False
    return True
