r"""A private pipeline's basis kept compact on Dask workers and expanded on every pass.

A private pipeline's model reads its CSR basis on every pass of its solver (objective
perturbation: about 35 on 10^6 rows -- 32 evaluations and 5 Hessians).  Held on the
workers, that basis is 220 bytes a row on an Adult-shaped table (18 non-zeros: 8 bytes of
value and 4 of column index each, 6 spline columns of degree 1 and 8 one-hot columns), and
a worker kept it for all of its partitions.  Everything in it is a function of much less:

* a spline column's entries are a function of its value (:func:`stencil_at`: the clamp,
  the span and the Cox-de Boor recursion over the released knots), 8 bytes;
* a one-hot column's entry is its category code (:meth:`DPOneHotEncoder._basis_codes`),
  2 bytes (4 beyond 32,767 categories).

:class:`CompactBasis` keeps those -- 64 bytes a row on that table, 3.4x less -- and
:meth:`CompactBasis.expand` writes the partition's CSR from them in one numba pass
(:func:`_expand_rows`) inside each task that reads the partition
(:func:`skdp._dask.block_tasks`), so a worker holds its partitions' compact rows and the
basis of the one partition its task reads.  The expansion costs about 0.11 s per 10^6
rows (one thread, page faults of its output included) against a model pass of about
0.05 s: at 10^7 rows, where a fit makes about 35 passes, that is a few seconds of each
worker's time, measured in ``benchmarks/results/raw_dask.md``.  The CSR is the fitted transformers'
own, bit for bit: the same recursion (:func:`stencil_at`, which :func:`column_stencils`
runs too), the same entries left out (a stencil's zeros, a present value's indicator, a
missing value's stencil), the same column order as :func:`stencil_csr` and
:func:`hstack_csr` give, the same index dtype (tests compare ``data``, ``indices`` and
``indptr``).

Which pipelines: the prefix that :func:`skdp.make_private_pipeline` builds (``FrameToPandas``,
then a ``ColumnTransformer`` with sparse output whose blocks are
:class:`DPSplineTransformer` and :class:`DPOneHotEncoder` with ``sparse_output=True``;
dropped columns allowed).  Any other prefix returns ``None`` from :meth:`CompactBasis.of`
and its basis is kept as built.

Pure post-processing of released quantities (knots and categories): no privacy cost, no
data-dependent choice -- the layout is fixed by the fitted transformers.
"""

import numpy as np

from .._numba_cache import ensure_cache_locator, kernel
from ._spline_kernels import clamped, knot_span, span_stencil

__all__ = ["CompactBasis", "CompactRows"]

ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)

#: segment kinds of :func:`_expand_rows`
SPLINE, ONE_HOT = 0, 1


@kernel
def _knot_spans(values, knots, knot_ptr, spans):
    """``spans[i, j]``: :func:`knot_span` of ``values[i, j]`` clamped to column ``j``'s
    knots (0 for a missing value: never read)."""
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            x = values[i, j]
            if x != x:
                spans[i, j] = 0
            else:
                k = knots[knot_ptr[j]:knot_ptr[j + 1]]
                spans[i, j] = knot_span(clamped(x, k), k)


@kernel
def _expand_rows(values, spans, codes, kind, source, start, width, degree, knots,
                 knot_ptr, extended, ext_ptr, data, indices, indptr):
    """Row ``i``'s entries, segment by segment in increasing column order: a one-hot
    segment writes ``1.0`` at ``start + code``; a spline segment writes the non-zero values
    of its value's stencil (:func:`span_stencil` from the kept span) at ``start + first +
    r``, or, for a missing value (NaN), ``1.0`` at its indicator ``start + width``.
    ``data``/``indices`` hold at least the largest possible count; ``indptr`` receives the
    row ends.  Returns the number of entries."""
    n = values.shape[0] if values.shape[1] > 0 else codes.shape[0]
    n_segments = kind.shape[0]
    top = 1
    for s in range(n_segments):
        top = max(top, degree[s] + 1)
    left = np.zeros(top)
    right = np.zeros(top)
    out = np.zeros(top)
    t = 0
    indptr[0] = 0
    for i in range(n):
        for s in range(n_segments):
            j = source[s]
            if kind[s] == ONE_HOT:
                data[t] = 1.0
                indices[t] = start[s] + codes[i, j]
                t += 1
                continue
            x = values[i, j]
            if x != x:
                data[t] = 1.0
                indices[t] = start[s] + width[s]
                t += 1
                continue
            d = degree[s]
            k = knots[knot_ptr[j]:knot_ptr[j + 1]]
            first = span_stencil(clamped(x, k), spans[i, j], k.shape[0],
                                 extended[ext_ptr[j]:ext_ptr[j + 1]], d, left, right, out)
            for r in range(d + 1):
                v = out[r]
                if v != 0.0:
                    data[t] = v
                    indices[t] = start[s] + first + r
                    t += 1
        indptr[i + 1] = t
    return t


class CompactRows:
    """A partition's compact rows: ``values`` (n, spline columns) float64 with their knot
    ``spans`` (int8 below 127 knots), and ``codes`` (n, one-hot columns) int16/int32.
    ``nbytes``: what a worker keeps."""

    def __init__(self, values, spans, codes):
        self.values, self.spans, self.codes = values, spans, codes
        self.shape = (int(max(values.shape[0], codes.shape[0])),)

    @property
    def nbytes(self):
        return int(self.values.nbytes + self.spans.nbytes + self.codes.nbytes)

    def __sizeof__(self):
        # what Dask's memory manager counts (dask.sizeof falls back to sys.getsizeof):
        # without it a worker would take its compact rows for a few bytes and never spill
        return object.__sizeof__(self) + self.nbytes


class CompactBasis:
    """The layout of a fitted pipeline prefix's CSR basis (module docstring): ``encode`` a
    raw partition into :class:`CompactRows`, ``expand`` them into the basis.

    Use :meth:`of`; ``n_features_out``: the basis's width."""

    def __init__(self, prefix, blocks, n_features_out):
        from ._spline import _extended_knots

        self.prefix = prefix                  # data-free steps before the column transformer
        self.blocks = blocks                  # [(kind, transformer, columns, offset)]
        self.n_features_out = int(n_features_out)
        segments, knots, extended = [], [], []   # (kind, source, start, width, degree)
        n_codes = 0
        for kind, step, _, start in blocks:
            if kind == SPLINE:
                for k in step.knots_:
                    k = np.ascontiguousarray(k, dtype=np.float64)
                    width = step._width(k)
                    segments.append((SPLINE, len(knots), start, width, int(step.degree)))
                    knots.append(k)
                    extended.append(np.asarray(_extended_knots(k, int(step.degree)),
                                               dtype=np.float64))
                    start += width + 1            # the column's basis, then its indicator
            else:
                for index in step._index:
                    width = len(index) + 2        # its categories, "other", "missing"
                    segments.append((ONE_HOT, n_codes, start, width, 0))
                    n_codes += 1
                    start += width
        # in output column order (the order of the transformer's blocks need not be it)
        table = np.array(sorted(segments, key=lambda seg: seg[2]),
                         dtype=np.int64).reshape(-1, 5)
        self._segments = tuple(np.ascontiguousarray(table[:, c]) for c in range(5))
        self._knots = _flat(knots)
        self._extended = _flat(extended)
        widest = max((seg[3] for seg in segments if seg[0] == ONE_HOT), default=0)
        self.code_dtype = np.int16 if widest <= np.iinfo(np.int16).max else np.int32
        most = max((k.shape[0] for k in knots), default=0)
        self.span_dtype = np.int8 if most < np.iinfo(np.int8).max else np.int32
        # a spline value's stencil has degree + 1 entries (or its indicator), a code one
        self.max_row_entries = int(np.sum(self._segments[4] + 1))

    @classmethod
    def of(cls, prefix):
        """The layout of the fitted ``prefix`` (a ``Pipeline`` of transformers, or one
        transformer), or None when its output is not the basis described in the module
        docstring (another step, a dense output, a DataFrame output)."""
        from sklearn.compose import ColumnTransformer
        from sklearn.pipeline import Pipeline

        from ._categorical import DPOneHotEncoder
        from ._common import dense_container_requested
        from ._rowwise import FrameToPandas
        from ._spline import DPSplineTransformer

        steps = [s for _, s in prefix.steps] if isinstance(prefix, Pipeline) else [prefix]
        steps = [s for s in steps if not (s is None or isinstance(s, str))]
        if not steps or not isinstance(steps[-1], ColumnTransformer):
            return None
        if not all(type(s) is FrameToPandas for s in steps[:-1]):
            return None
        ct = steps[-1]
        if not getattr(ct, "sparse_output_", False) or dense_container_requested(ct):
            return None
        blocks = []
        for name, step, columns in ct.transformers_:
            if isinstance(step, str):
                if step == "drop":
                    continue
                return None                    # passthrough
            piece = ct.output_indices_[name]
            if piece.stop == piece.start:
                continue
            kind = {DPSplineTransformer: SPLINE, DPOneHotEncoder: ONE_HOT}.get(type(step))
            if kind is None or dense_container_requested(step) or not step.sparse_output:
                return None                    # another step, or its dense output
            blocks.append((kind, step, columns, piece.start))
        if not blocks:
            return None
        width = max(ct.output_indices_[n].stop for n in ct.output_indices_)
        return cls(steps[:-1], blocks, width)

    def encode(self, frame):
        """A raw partition (a pandas DataFrame of the fitted schema) as
        :class:`CompactRows`: each spline block's validated float64 columns
        (:meth:`DPSplineTransformer._basis_input`) and each one-hot block's codes
        (:meth:`DPOneHotEncoder._basis_codes`), as the fitted transform reads them."""
        from sklearn.utils._indexing import _safe_indexing

        X = frame
        for step in self.prefix:
            X = step.transform(X)
        values, codes = [], []
        for kind, step, columns, _ in self.blocks:
            part = _safe_indexing(X, columns, axis=1)
            if kind == SPLINE:
                values.append(step._basis_input(part))
            else:
                codes.append(step._basis_codes(part, self.code_dtype))
        n = len(X)
        values = (np.ascontiguousarray(np.hstack(values)) if values
                  else np.empty((n, 0), dtype=np.float64))
        codes = (np.ascontiguousarray(np.hstack(codes)) if codes
                 else np.empty((n, 0), dtype=self.code_dtype))
        spans = np.empty(values.shape, dtype=self.span_dtype)
        _knot_spans(values, self._knots[0], self._knots[1], spans)
        return CompactRows(values, spans, codes)

    def expand(self, rows):
        """The partition's basis (a canonical ``scipy.sparse.csr_matrix``, the fitted
        prefix's ``transform`` bit for bit) from its :class:`CompactRows`."""
        import scipy.sparse as sp

        from ._csr_assembly import _index_dtype

        n = rows.shape[0]
        room = n * self.max_row_entries
        dtype = _index_dtype(self.n_features_out, room)
        data = np.empty(room)
        indices = np.empty(room, dtype=dtype)
        indptr = np.empty(n + 1, dtype=np.int64)
        kind, source, start, width, degree = self._segments
        nnz = int(_expand_rows(rows.values, rows.spans, rows.codes, kind, source, start, width, degree,
                               self._knots[0], self._knots[1], self._extended[0],
                               self._extended[1], data, indices, indptr))
        final = _index_dtype(self.n_features_out, nnz)
        indices = indices[:nnz] if final == dtype else indices[:nnz].astype(final)
        out = sp.csr_matrix((data[:nnz], indices, indptr.astype(final, copy=False)),
                            shape=(n, self.n_features_out))
        out.has_sorted_indices = True
        return out


def _flat(arrays):
    """``(concatenation, pointers)`` of 1-d float64 arrays."""
    ptr = np.zeros(len(arrays) + 1, dtype=np.int64)
    if arrays:
        np.cumsum([a.shape[0] for a in arrays], out=ptr[1:])
        return np.concatenate(arrays), ptr
    return np.zeros(0), ptr
