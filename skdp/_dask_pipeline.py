r"""A :class:`~skdp.PrivatePipeline` on a raw ``dask.dataframe.DataFrame``.

A raw table in Parquet or CSV (``dask.dataframe.read_parquet``/``read_csv``/
``from_pandas``) is fitted where its partitions are: every DP transformer releases from
integer counts summed over the partitions (its own Dask path: the count trees of
:func:`skdp._mechanisms._quantiles.leaf_counts`, the category counts of
:meth:`skdp.preprocessing.DPOneHotEncoder._dask_value_counts`, the scalers' sums), so the
client draws the noise once, on the *same* counts as an in-memory fit of the same rows --
the released knots, categories and scales are those of the pandas fit, bit for bit, with
the same ``random_state``.

How a composite is fitted
-------------------------
scikit-learn's ``Pipeline``/``ColumnTransformer``/``FeatureUnion`` index their input in
memory.  :func:`fit_tree` walks the tree instead:

* a ``Pipeline``'s steps are fitted in order, each on the lazy output of the ones before
  (:func:`lazy_transform`: the fitted step applied to every partition on its worker);
* a ``ColumnTransformer`` block is fitted on the Dask columns it selects (the selection is
  resolved on the public schema, the frame's ``_meta``);
* a releasing DP transformer fits the Dask collection (its counts per partition);
* every other leaf is data-free (the plan verified it) or takes public parameters, and is
  fitted on placeholder rows of the public schema (:func:`skdp._plan.placeholder_frame`);
* a composite is then assembled by fitting it on placeholder rows with its DP leaves
  *frozen* (:func:`_frozen`: ``clone`` returns them, ``fit`` leaves them as released), so
  its fitted structure (column routing, output indices) is scikit-learn's own, holding the
  leaves released from the real counts.

The model's design
------------------
The fitted transformers' output is built per partition on the workers
(:func:`lazy_transform`: CSR or dense float64 blocks, one per non-empty partition) and
never collected on the client; the final estimator fits that ``dask.array`` with its Dask
solvers (:mod:`skdp._solvers._dask_objective`, DP-SGD's partition-wise Poisson sample).
A basis of splines and one-hot columns (what :func:`skdp.make_private_pipeline` builds) is
kept as compact rows instead (:func:`rebuilt_basis`: 70 bytes a row against 220 on an
Adult-shaped table) and expanded inside each task that reads a partition, so a worker
holds the basis of one partition at a time.

What the workers report
-----------------------
A task that computes on private rows on a worker -- a step's transform of a partition
(:func:`lazy_transform`, :meth:`Partitions.map`), the compact basis
(:func:`rebuilt_basis`), a partition's float conversion (:func:`_float_values`) -- enters
:func:`~skdp._mechanisms._quiet.silent_floating_point` itself
(:func:`~skdp._mechanisms._quiet.silent_floating_point_task`): numpy's error state
belongs to the fit's thread or context, which a ``dask.distributed`` worker does not
inherit, and a data-free step's overflow on one row would otherwise be reported there.
A cell that is
not a number fails its conversion with the in-memory fit's error (the schema only), and
an error raised while the first pass reads the rows names its type and the columns that
parsed as another dtype only (:func:`_first_pass`): their own texts quote the entry.

Public quantities
-----------------
As in memory, the schema (column names and dtypes: the frame's ``_meta``) and the number
of rows ``n`` are public; one pass (:func:`inspect_frame`) counts the rows of every
partition and checks that each partition has the declared dtypes.  The plan is made from
the schema and ``n`` before any value is read; its probe fits on placeholder rows run on a
lazy placeholder of ``n`` rows (:func:`placeholder`), so the client never holds ``n``
rows.
"""

import contextlib

import numpy as np

from ._dask import is_dask_collection
from ._mechanisms._quiet import silent_floating_point_task

__all__ = ["FrameRows", "Partitions", "fit_tree", "inspect_frame", "is_dask_frame",
           "lazy_method", "lazy_score", "lazy_transform", "placeholder", "rebuilt_basis"]

#: rows of a partition of the lazy placeholder (the plan's probes)
PLACEHOLDER_PARTITION_ROWS = 1_000_000


def is_dask_frame(X):
    """Whether ``X`` is a Dask DataFrame (not an array, not a Series)."""
    return is_dask_collection(X) and hasattr(X, "columns") and hasattr(X, "to_delayed") \
        and getattr(X, "ndim", 2) == 2


class FrameRows:
    """The public shape of a Dask DataFrame: its schema (an empty pandas frame with its
    column names and dtypes) and the rows of every partition; ``frame``: the DataFrame
    with those partitions pinned (:meth:`pinned`)."""

    def __init__(self, schema, lengths, parts=None, y=None):
        self.schema = schema
        self.lengths = tuple(int(m) for m in lengths)
        self.n = int(sum(self.lengths))
        self.parts = parts
        #: ``y`` as a Dask array with the row chunks counted by :func:`inspect_frame`
        #: (a Dask Series), else ``y`` as given
        self.y = y

    def pinned(self):
        """The frame's partitions counted by :func:`inspect_frame`, as :class:`Partitions`:
        a column selection cannot regroup them (the query optimiser of ``read_parquet``
        merges small row groups depending on the columns read), so every block of the fit
        has the rows counted here."""
        return Partitions(list(self.parts), self.schema, self.lengths)


class Partitions:
    """A table as a list of delayed pandas partitions with a public schema and known row
    counts: what :func:`fit_tree` passes between the steps of a composite."""

    def __init__(self, parts, schema, lengths):
        self.parts, self.schema, self.lengths = parts, schema, tuple(lengths)
        self.columns = schema.columns
        self._meta = schema
        self.shape = (int(sum(self.lengths)), len(schema.columns))

    def __getitem__(self, names):
        import dask

        return Partitions([dask.delayed(_select)(p, list(names)) for p in self.parts],
                          self.schema[list(names)], self.lengths)

    def map(self, func, schema):
        """``func`` (a fitted step's ``transform``) on every partition, on its worker."""
        import dask

        return Partitions([dask.delayed(_apply_to_partition)(func, p) for p in self.parts],
                          schema, self.lengths)

    def to_frame(self):
        """A Dask DataFrame of these partitions (for a DP transformer's Dask path)."""
        import dask.dataframe as dd

        return dd.from_delayed(list(self.parts), meta=self.schema, verify_meta=False)

    def to_array(self, refusal=None):
        """The float64 values as a Dask array with these row chunks (no pass); a value
        that is not a number raises ``ValueError(refusal)`` on its worker
        (:func:`_float_values`)."""
        import dask
        import dask.array as da

        from ._dask import NOT_A_NUMBER

        width = len(self.columns)
        return da.concatenate([
            da.from_delayed(dask.delayed(_float_values)(p, refusal or NOT_A_NUMBER),
                            shape=(m, width), dtype=np.float64)
            for p, m in zip(self.parts, self.lengths)], axis=0)

    def to_delayed(self):
        return list(self.parts)


def _select(frame, names):
    return frame[names]


@silent_floating_point_task
def _apply_to_partition(func, frame):
    return func(frame)


@silent_floating_point_task
def _float_values(frame, refusal):
    """A partition's values as float64 (a missing value as NaN), or ``ValueError(refusal)``
    -- never pandas' conversion error, which quotes the private cell that is not a number
    (:func:`skdp._dask.float64_or_refuse`)."""
    from ._dask import float64_or_refuse

    return float64_or_refuse(
        lambda: np.asarray(frame.to_numpy(dtype=np.float64, na_value=np.nan),
                           dtype=np.float64), refusal)


def _partition_profile(frame):
    return len(frame), tuple(str(t) for t in frame.dtypes)


def inspect_frame(X, y=None):
    """One pass over ``X``'s partitions (and ``y``'s): the rows of each and the checks a
    fit needs before it plans.  Returns :class:`FrameRows`.

    Raises ``ValueError`` when a partition's dtypes differ from the declared schema (a
    ``read_csv`` block that parsed a column differently; the schema decides what is
    released, so it must be one for all rows), when ``y`` is not a 1-d Dask Series/array
    or array-like with as many rows, and ``TypeError`` for a ``y`` given as a DataFrame of
    several columns.  Partitions without rows are allowed (they contribute nothing)."""
    import dask

    schema = X._meta
    names = [str(c) for c in schema.columns]
    if len(names) == 0:
        raise ValueError("X has no columns: a private pipeline needs at least one")
    x_parts = list(X.to_delayed())
    tasks = [dask.delayed(_partition_profile)(p) for p in x_parts]
    y_lengths = y_parts = None
    if y is not None and is_dask_collection(y):
        if getattr(y, "ndim", 1) == 2 and len(getattr(y, "columns", [])) != 1:
            raise TypeError("y must be a Dask Series (or a one-column DataFrame)")
        if hasattr(y, "to_delayed") and hasattr(y, "_meta"):
            y_parts = list(y.to_delayed())
            tasks += [dask.delayed(len)(p) for p in y_parts]
            y_lengths = len(y_parts)
    out = _first_pass(tasks, schema)
    parts = out[:len(out) - (y_lengths or 0)]
    declared = tuple(str(t) for t in schema.dtypes)
    for k, (m, dtypes) in enumerate(parts):
        if m and dtypes != declared:
            bad = [(c, d, e) for c, d, e in zip(names, declared, dtypes) if d != e]
            c, d, e = bad[0] if bad else ("?", declared, dtypes)
            raise ValueError(
                f"partition {k} of the Dask DataFrame has dtype {e} in column {c!r} where "
                f"the frame declares {d}: the schema (which decides what the pipeline "
                "releases) must be the same in every partition; cast the column (e.g. "
                "ddf.astype({...}) or read_csv(dtype={...}))")
    lengths = [m for m, _ in parts]
    rows = FrameRows(schema, lengths, x_parts, y)
    if y is not None:
        if y_lengths is not None:
            n_y = int(sum(out[len(parts):]))
            # pinned as counted (a projection of read_parquet may regroup its partitions)
            rows.y = _pinned_vector(y_parts, out[len(parts):], y._meta)
        elif is_dask_collection(y):
            n_y = int(y.shape[0]) if not np.isnan(y.shape[0]) else None
            if n_y is None:
                n_y = int(y.compute_chunk_sizes().shape[0])
        else:
            n_y = len(y)
        if n_y != rows.n:
            raise ValueError(f"X has {rows.n} rows and y has {n_y}: they must match")
    return rows


def _first_pass(tasks, schema):
    """``dask.compute(*tasks)``: the first read of the partitions (their profiles and
    ``y``'s lengths), whose reading errors name no value.

    Reading a partition parses its rows, and a parse error's text quotes the entry that
    failed: dask's ``read_csv`` raises "Mismatched dtypes found" when a later block holds
    an entry that does not parse as the dtype inferred from the first block, and lists
    the conversion's ``could not convert string to float: '<the entry>'``; pandas' and
    pyarrow's parsers quote it likewise.  Which of the texts of a ``ValueError`` or
    ``TypeError`` raised while rows are read quote one cannot be told from outside, so
    each is replaced by :func:`_unreadable_partitions`, which names the exception's type
    and, from dask's table of mismatched dtypes, the columns of ``schema`` whose block
    parsed as another dtype -- what the dtype check below reports of a partition that was
    read -- and nothing chained.  This pass comes before the plan: nothing is reserved or
    released."""
    import dask

    try:
        return dask.compute(*tasks)
    except (TypeError, ValueError) as exc:
        kind = type(exc).__name__
        mismatched = _mismatched_dtypes(str(exc), schema)
    raise ValueError(_unreadable_partitions(kind, mismatched)) from None


def _mismatched_dtypes(text, schema):
    """``[(column, found, declared)]`` from the table of dask's ``read_csv`` error "Mismatched
    dtypes found" (``| column | found | expected |`` rows, before the section quoting the
    conversion errors), for the columns of ``schema`` whose declared dtype is the expected
    one; ``[]`` for any other text."""
    if not text.startswith("Mismatched dtypes found"):
        return []
    declared = {str(c): str(t) for c, t in zip(schema.columns, schema.dtypes)}
    table = text.split("The following columns also raised exceptions")[0]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and declared.get(cells[0]) == cells[2]:
            rows.append(tuple(cells))
    return rows


def _unreadable_partitions(kind, mismatched=()):
    """The refusal of a frame whose partitions could not be read (a ``kind`` error;
    ``mismatched``: the ``(column, found, declared)`` dtypes of dask's read_csv table)."""
    where = "".join(f"; a block of column {c!r} parsed as {f} where the frame declares {d}"
                    for c, f, d in mismatched)
    return (f"reading the partitions of the Dask DataFrame failed with a {kind}{where} "
            "(the error's message is not shown: a parse error quotes the entry that "
            "failed, a private value). Usually dask.dataframe.read_csv inferred a column's "
            "dtype from the first block and a later block holds an entry that does not "
            "parse as it: give read_csv the dtype of every column (dd.read_csv(..., "
            "dtype={...}); a column of strings as str, for a DP one-hot encoder), or cast "
            "the columns before the fit. To see the error, compute the partitions outside "
            "the private fit")


def _vector_values(part):
    values = np.asarray(part)
    return values.reshape(-1) if values.ndim == 2 and values.shape[1] == 1 else values


def _pinned_vector(parts, lengths, meta):
    import dask
    import dask.array as da

    dtype = np.asarray(meta).dtype
    blocks = [da.from_delayed(dask.delayed(_vector_values)(p), shape=(int(m),), dtype=dtype)
              for p, m in zip(parts, lengths)]
    return da.concatenate(blocks, axis=0)


def _select_names(columns, schema):
    """The column names a ColumnTransformer block selects, resolved on the schema."""
    from sklearn.utils._indexing import _get_column_indices

    from ._pipeline import _SchemaFromDtypes

    if isinstance(columns, _SchemaFromDtypes):
        return list(columns(schema))
    if isinstance(columns, (list, tuple)) and all(isinstance(c, str) for c in columns):
        unknown = [c for c in columns if c not in schema.columns]
        if unknown:
            raise ValueError(f"columns {unknown} are not columns of the Dask DataFrame "
                             f"(its columns: {list(schema.columns)})")
    if isinstance(columns, str) and columns not in schema.columns:
        raise ValueError(f"column {columns!r} is not a column of the Dask DataFrame (its "
                         f"columns: {list(schema.columns)})")
    if callable(columns):
        columns = columns(schema)
    idx = _get_column_indices(schema, columns)
    return [schema.columns[i] for i in idx]


def _placeholder_rows(X, m=2):
    """``m`` public rows of ``X``'s schema (in memory)."""
    from ._plan import placeholder_frame

    if hasattr(X, "columns"):
        return placeholder_frame(X._meta, m)
    return np.zeros((m, int(X.shape[1])))


def _is_releasing_leaf(step):
    from ._plan import _is_dp_transformer, _releases_nothing

    return _is_dp_transformer(step) and not _releases_nothing(step)


def _leaves(step):
    """The leaf estimators of a composite (steps of Pipelines, blocks of
    ColumnTransformers/FeatureUnions, recursively)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if isinstance(step, Pipeline):
        return [leaf for _, s in step.steps for leaf in _leaves(s)]
    if isinstance(step, ColumnTransformer):
        out = [leaf for _, s, _ in step.transformers for leaf in _leaves(s)]
        return out + _leaves(step.remainder)
    if isinstance(step, FeatureUnion):
        return [leaf for _, s in step.transformer_list for leaf in _leaves(s)]
    return [] if isinstance(step, str) or step is None else [step]


@contextlib.contextmanager
def _frozen(leaves):
    """While assembling a composite on placeholder rows: ``clone`` returns these fitted
    leaves themselves, ``fit`` keeps what they released and ``fit_transform`` only
    transforms (instance attributes, removed afterwards)."""
    names = ("__sklearn_clone__", "fit", "fit_transform")
    for leaf in leaves:
        vars(leaf)["__sklearn_clone__"] = lambda leaf=leaf: leaf
        vars(leaf)["fit"] = lambda X, y=None, leaf=leaf, **kw: leaf
        vars(leaf)["fit_transform"] = lambda X, y=None, leaf=leaf, **kw: leaf.transform(X)
    try:
        yield
    finally:
        for leaf in leaves:
            for name in names:
                vars(leaf).pop(name, None)


def fit_tree(step, X, rows):
    """Fit ``step`` (a leaf or a composite of :mod:`sklearn.pipeline`/``compose``) on the
    lazy ``X`` -- a table's :class:`Partitions` (``rows.lengths`` rows each), or a Dask
    array with known row chunks -- in place (module docstring).  Every releasing DP
    transformer reads the rows through its own Dask path; nothing else reads a row."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if step is None or isinstance(step, str):
        return
    if isinstance(step, Pipeline):
        Xi = X
        kept = [s for _, s in step.steps if not (s is None or isinstance(s, str))]
        for i, sub in enumerate(kept):
            fit_tree(sub, Xi, rows)
            if i < len(kept) - 1:
                Xi = lazy_transform(sub, Xi, rows, keep_frames=True)
        return
    if isinstance(step, ColumnTransformer):
        if not isinstance(step.remainder, str):
            raise TypeError("a ColumnTransformer remainder that is an estimator is not "
                            "supported on a Dask DataFrame: select its columns in a block")
        blocks = list(step.transformers)
        for name, sub, columns in blocks:
            if isinstance(sub, str):
                continue
            if hasattr(X, "columns"):
                names = _select_names(columns, X._meta)
                if not names:
                    continue
                fit_tree(sub, X[names], rows)
            else:
                from sklearn.utils._indexing import _get_column_indices

                idx = _get_column_indices(np.zeros((1, int(X.shape[1]))), columns)
                if not idx:
                    continue
                fit_tree(sub, X[:, idx], rows)
        _assemble(step, X)
        return
    if isinstance(step, FeatureUnion):
        for _, sub in step.transformer_list:
            fit_tree(sub, X, rows)
        _assemble(step, X)
        return
    if _is_releasing_leaf(step):
        step.fit(_leaf_input(step, X, rows))
        names = [str(c) for c in X.columns] if hasattr(X, "columns") else None
        if names is not None and all(isinstance(c, str) for c in X.columns):
            step.feature_names_in_ = np.asarray(names, dtype=object)
        return
    # data-free, or public parameters: the schema is all it reads
    step.fit(_placeholder_rows(X))


def _leaf_input(step, X, rows):
    """What a releasing DP transformer's Dask fit takes: the frame for the encoder (it
    counts values per partition), else a float64 array with the known partition lengths
    (no second pass to count them)."""
    from ._raw_input import raw_table_message

    if not isinstance(X, Partitions):
        return X
    if type(step).__name__ == "DPOneHotEncoder":
        return X.to_frame()
    # a cell that is not a number: the in-memory fit's error, from the public schema
    return X.to_array(raw_table_message(step, X.schema))


def _assemble(step, X):
    """Fit the composite ``step`` on placeholder rows, its releasing leaves frozen."""
    import warnings

    frozen = [leaf for leaf in _leaves(step) if _is_releasing_leaf(leaf)]
    with _frozen(frozen), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step.fit(_placeholder_rows(X))


def _dense(out):
    import scipy.sparse as sp

    if sp.issparse(out):
        out = out.toarray()
    return np.ascontiguousarray(out, dtype=np.float64)


@silent_floating_point_task
def _transform_block(step, block, sparse=False):
    out = step.transform(block)
    if sparse:
        import scipy.sparse as sp

        return sp.csr_matrix(out, dtype=np.float64)
    return _dense(out)


def lazy_transform(step, X, rows, keep_frames=False, sparse=False):
    """The fitted ``step``'s output on ``X``, built per partition on the workers: a Dask
    array of dense float64 blocks with known row chunks (one per non-empty partition);
    ``keep_frames``: a step whose output is a pandas DataFrame (``FrameToPandas``, a
    ``set_output`` step) gives a Dask DataFrame of the same partitions instead;
    ``sparse``: CSR blocks (a sparse basis kept sparse: what DP-SGD samples rows of)."""
    import dask
    import dask.array as da

    if keep_frames and hasattr(X, "columns"):
        probe = step.transform(_placeholder_rows(X))
        if hasattr(probe, "columns") and hasattr(probe, "iloc"):
            return X.map(step.transform, probe.iloc[:0])
    probe = _transform_block(step, _placeholder_rows(X), sparse)
    width = probe.shape[1]
    if hasattr(X, "columns"):
        meta = probe[:0]
        blocks = [da.from_delayed(dask.delayed(_transform_block)(step, part, sparse),
                                  shape=(m, width), dtype=np.float64, meta=meta)
                  for part, m in zip(X.to_delayed(), rows.lengths) if m > 0]
        return da.concatenate(blocks, axis=0)
    X = X.rechunk({1: -1})
    return X.map_blocks(lambda b: _transform_block(step, b) if b.shape[0] else
                        np.zeros((0, width)), chunks=(X.chunks[0], (width,)),
                        dtype=np.float64)


@silent_floating_point_task
def _encode_block(recipe, part):
    return recipe.encode(part)


@silent_floating_point_task
def _expand_block(recipe, rows):
    return recipe.expand(rows)


def rebuilt_basis(step, X, rows):
    """The fitted ``step``'s CSR basis on ``X`` (:class:`Partitions`) as a Dask array whose
    blocks are rebuilt on every pass, or None when ``step`` is not a basis that
    :class:`~skdp.preprocessing._compact_basis.CompactBasis` can keep compact.

    Each partition is read and encoded once, its compact rows (70 bytes a row on an
    Adult-shaped table, against 220 for its CSR) kept on its worker (``persist``); every
    task that reads a block expands it there from those rows (bitwise the block of
    :func:`lazy_transform`), so a worker holds its compact rows and, while a task runs, the
    basis of one partition.  The blocks' names start with
    :data:`skdp._dask.REBUILT_PREFIX`: the model's solvers do not persist them
    (:func:`skdp._dask.keep_rows`)."""
    import dask
    import dask.array as da
    import scipy.sparse as sp

    from ._dask import REBUILT_PREFIX
    from .preprocessing._compact_basis import CompactBasis

    recipe = CompactBasis.of(step)
    if recipe is None:
        return None
    kept = [(dask.delayed(_encode_block)(recipe, part), m)
            for part, m in zip(X.to_delayed(), rows.lengths) if m > 0]
    kept = list(zip(dask.persist(*[c for c, _ in kept]), [m for _, m in kept]))
    width = recipe.n_features_out
    meta = sp.csr_matrix((0, width), dtype=np.float64)
    token = dask.base.tokenize(*[c for c, _ in kept])
    Xt = da.concatenate([
        da.from_delayed(dask.delayed(_expand_block)(recipe, c), shape=(m, width),
                        dtype=np.float64, meta=meta, name=f"{REBUILT_PREFIX}-{token}-{k}")
        for k, (c, m) in enumerate(kept)], axis=0)
    # for the passes that expand a block inside the task reading it (block_tasks)
    Xt._skdp_rebuilt = (recipe, [c for c, _ in kept])
    return Xt


def _method_block(pipeline, method, block):
    if len(block) == 0:
        return None
    out = getattr(pipeline, method)(block)
    if method == "transform":
        out = _dense(out)
    return np.asarray(out)


def lazy_method(pipeline, method, X):
    """``pipeline.<method>(X)`` for a Dask DataFrame ``X``, lazily: a Dask array whose
    blocks are the in-memory method on each partition (row chunks of unknown size until
    computed; nothing is computed here)."""
    import dask
    import dask.array as da

    probe = np.asarray(_method_block(pipeline, method, _placeholder_rows(X)))
    if method == "transform":
        probe = _dense(probe)
    shape_tail, dtype = probe.shape[1:], probe.dtype
    blocks = [da.from_delayed(dask.delayed(_method_or_empty)(pipeline, method, part,
                                                               shape_tail, dtype),
                              shape=(np.nan,) + shape_tail, dtype=dtype)
              for part in X.to_delayed()]
    return da.concatenate(blocks, axis=0, allow_unknown_chunksizes=True)


def _method_or_empty(pipeline, method, block, shape_tail, dtype):
    out = _method_block(pipeline, method, block)
    return np.empty((0,) + tuple(shape_tail), dtype=dtype) if out is None else out


def lazy_score(pipeline, X, y):
    """The final estimator's default score of ``pipeline`` on Dask ``X`` and ``y``
    (accuracy for a classifier, R^2 for a regressor), from sums over the partitions:
    :func:`inspect_frame` counts the rows of both (their partitions need not match: ``y``
    is aligned by position), the predictions are made per partition on the workers,
    without dask's low-level fusion (:func:`skdp._dask.without_low_level_fusion`: it fails
    on a ``dd.from_delayed`` frame)."""
    from ._dask import without_low_level_fusion

    if not is_dask_collection(y):
        raise TypeError("score on a Dask DataFrame needs y as a Dask Series (or array)")
    with without_low_level_fusion():
        return _score_partitions(pipeline, X, y)


def _score_partitions(pipeline, X, y):
    import dask
    import dask.array as da
    from sklearn.base import is_classifier

    from ._dask_predict import score_of

    rows = inspect_frame(X, y)
    target = rows.y if hasattr(rows.y, "chunks") else y
    pred = da.concatenate([
        da.from_delayed(dask.delayed(_method_or_empty)(pipeline, "predict", part, (),
                                                       target.dtype),
                        shape=(m,), dtype=target.dtype)
        for part, m in zip(rows.parts, rows.lengths)], axis=0)
    target = target.rechunk((pred.chunks[0],))
    return score_of(pred, target, rows.n, is_classifier(pipeline.steps[-1][1]))


def placeholder(schema, n_rows, spread=False):
    """A lazy Dask DataFrame of ``n_rows`` public rows of ``schema``
    (:func:`skdp._plan.placeholder_frame` per partition of
    :data:`PLACEHOLDER_PARTITION_ROWS`; ``spread``: numeric columns ``0 .. n_rows - 1``),
    as :class:`Partitions`: the plan's probes fit on it without holding ``n`` rows on the
    client."""
    import dask

    lengths = placeholder_lengths(n_rows).lengths
    starts = np.cumsum((0,) + lengths[:-1])
    return Partitions([dask.delayed(_placeholder_partition)(int(s), m, schema, spread)
                       for s, m in zip(starts, lengths)], schema, lengths)


def _placeholder_partition(start, m, schema, spread):
    import pandas as pd

    from ._plan import placeholder_frame

    frame = placeholder_frame(schema, m, spread=spread)
    if spread:
        for name, dtype in zip(schema.columns, schema.dtypes):
            if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(
                    dtype):
                frame[name] = pd.Series(np.arange(start, start + m, dtype=np.float64)
                                        ).astype(dtype)
    return frame


def placeholder_lengths(n_rows):
    """Rows of every partition of :func:`placeholder`."""
    step = PLACEHOLDER_PARTITION_ROWS
    return FrameRows(None, [min(step, n_rows - s) for s in range(0, int(n_rows), step)])
