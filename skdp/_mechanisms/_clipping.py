"""Row clipping: the step that makes the public bound ``data_norm`` true.

Every solver works on the array returned here and never on the user's ``X``, so no code
path can see an unclipped row.  The estimators' ``data_norm`` bounds the *features* (as
users and diffprivlib mean it); with an intercept the row is augmented with the constant
``b = intercept_scaling`` afterwards, so the augmented row obeys the **row bound**

    R = row_bound(data_norm, fit_intercept, b) = sqrt(data_norm^2 + b^2)

(rounded up by one ulp), which is the constant every sensitivity proof uses.  The solvers
receive ``R`` (their ``data_norm`` argument is the bound on the augmented row) and clip

    x_i <- x_i * min(1, r / ||x_i||_2),   r = sqrt(R^2 - b^2) * (1 - 1e-12),

so ``||[x_i, b]||_2 <= R`` while the intercept column stays exactly ``b``, and
``r <= data_norm`` (the round trip through ``R`` errs by about ``1e-16 b^2/data_norm``,
below the ``1e-12 data_norm`` margin unless ``data_norm < 1e-2 b``; privacy rests on ``R``
alone, which always holds).  The factor
``1 - 1e-12`` absorbs the rounding of the norm and of the product, so the bound holds for
the floating-point result too.  Norms are computed with max-abs scaling, so huge finite
entries cannot overflow to ``inf`` and zero the wrong row.
"""

import numpy as np

SAFETY = 1.0 - 1e-12
UNIT_ROUNDOFF = 2.0 ** -53


def clip_safety(n_features):
    """The factor ``S`` of the clip radius ``r S`` for rows of ``n_features`` entries:
    ``min(SAFETY, 1 - (n_features + 8) u)``.

    The computed norm ``fl(||x||)`` is a sum of at most ``d`` squares (relative error
    ``<= d u``, halved by the square root), and the clipped entries ``fl(x_j s)`` and the
    factor ``s = fl(r S / fl(||x||))`` add a few roundings more, so
    ``||fl(s x)|| <= r S (1 + (d/2 + 3) u + O(u^2)) <= r`` when ``1 - S >= (d + 8) u``.
    ``SAFETY = 1 - 1e-12`` covers every ``d <= 8990`` (the factor is then exactly
    ``SAFETY``, so the clipped bits do not change); wider designs (one-hot and TF-IDF
    columns) get the larger margin.  ``n_features`` is public, so the radius is too: a
    data-dependent margin would let one row change how every other row is clipped."""
    return min(SAFETY, 1.0 - (int(n_features) + 8) * UNIT_ROUNDOFF)

#: the numba kernels, re-exported lazily (:func:`__getattr__`): importing this module (every
#: estimator does) must not import numba, which the numpy paths below never call
_KERNELS = frozenset({"clip_rows", "clip_scalar", "_row_norm", "_row_norms_kernel"})


def __getattr__(name):
    if name in _KERNELS:
        from . import _clipping_kernels

        return getattr(_clipping_kernels, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: up to this many entries rows are clipped (and their norms computed) in numpy, with the
#: same bits as the kernels and without compiling them: a fit on a small design pays no
#: compilation
NUMPY_CLIP_MAX = 1 << 22
#: rows per block of :func:`_row_norms_numpy` (a block's transpose stays in cache)
NORM_BLOCK_ROWS = 2048
#: fewest rows of a block (:func:`block_rows`)
MIN_BLOCK_ROWS = 256
#: a block holds at most about ``1/BLOCKS_PER_DESIGN`` of the rows
BLOCKS_PER_DESIGN = 16


def block_rows(n, cap):
    """Rows per block of a blockwise pass over ``n`` rows: ``cap`` (what keeps a block in
    cache), but at most ``ceil(n/16)`` and at least ``MIN_BLOCK_ROWS``.  A block's float64
    buffer is then at most about a sixteenth of the design: with 4096-row blocks a 10^4 x
    20 fit held a buffer of 0.44x the data (0.9x a float32 design's), against issue 34's
    target of 0.25x.  Each row's result never depends on the block (rows are independent;
    sums over blocks only steer Newton's path)."""
    return max(1, min(int(cap), max(MIN_BLOCK_ROWS, -(-int(n) // BLOCKS_PER_DESIGN))))


def matmul_in_blocks(X, M, out, step):
    """``out = X @ M`` in float64, ``step`` rows at a time: each block of rows is read as
    float64 (in place for a float64 ``X``, else converted exactly), so a float32 design is
    never copied whole (``X @ M`` would cast all of it first).  One BLAS product per block;
    each row's result is its own dot products."""
    for a in range(0, X.shape[0], step):
        b = min(a + step, X.shape[0])
        np.matmul(np.asarray(X[a:b], dtype=np.float64), M, out=out[a:b])


@np.errstate(over="ignore", under="ignore", invalid="ignore")
def _row_norms_numpy(X, out=None):
    """``[_row_norm(X, i) for i]`` in numpy, bitwise: the squares of a row are added one
    column at a time from the first, exactly the kernel's loop (no pairwise summation; the
    fallback's ``cumsum`` along a row is sequential too), and the rescaled fallback runs on
    the rows that need it.  Overflow, underflow and non-finite entries give the kernel's
    IEEE results, without warnings."""
    n, d = X.shape
    s = np.zeros(n) if out is None else out      # the squares, then (in place) the norms
    if out is not None:
        s[:] = 0.0
    if d:
        # one column per pass (the kernel's j loop), on blocks of rows transposed in cache:
        # no n x d temporary (its page faults cost more than the arithmetic on a first fit)
        # np.add.reduce down axis 0 of a block of at least two rows adds the squared
        # columns one after the other, from the first (numpy's inner loop runs along the
        # rows, the contiguous axis, and adds element by element); a one-row block would be
        # summed pairwise along its column, so it takes the loop.  The column loop's bits
        # in three numpy calls a block instead of 2d (10^5 x 20: 5.0 -> 3.4 ms; accumulate,
        # sequential by definition, took 3.5x the loop's time); test_clipping pins the bits
        # against the kernel.  The block is copied into a buffer of ours: an F-ordered X's
        # transposed block is contiguous already, and squaring it in place would write into
        # the user's array.
        step = block_rows(n, NORM_BLOCK_ROWS)
        buf = np.empty((d, min(step, n)))
        for a in range(0, n, step):
            m = min(step, n - a)
            cols = buf[:, :m]
            np.copyto(cols, X[a:a + m].T)
            np.multiply(cols, cols, out=cols)
            if m > 1:
                np.add.reduce(cols, axis=0, out=s[a:a + m])
            else:
                for j in range(d):
                    s[a] += cols[j, 0]
    odd = ~((s < np.inf) & ((s > 1e-280) | (s == 0.0)))
    nrm = np.sqrt(s, out=s)
    if odd.any():
        rows = np.asarray(X[odd], dtype=np.float64)
        m = np.fmax.reduce(np.abs(rows), axis=1, initial=0.0)   # NaN skipped, as there
        safe = np.where(m == 0.0, 1.0, m)
        t = rows * (1.0 / safe)[:, None]
        nrm[odd] = np.where(m == 0.0, 0.0, m * np.sqrt(np.cumsum(t * t, axis=1)[:, -1]))
    return nrm


def row_norms(X, out):
    """``out[i] = ||X[i]||_2`` (overflow-safe; float64 or float32 ``X``, any memory order,
    its entries read as float64, so a float32 array gives the norms of its float64 copy):
    numpy up to
    ``NUMPY_CLIP_MAX`` entries, the compiled kernel beyond; the same bits either way."""
    if X.size <= NUMPY_CLIP_MAX:
        _row_norms_numpy(X, out)
    else:
        from ._clipping_kernels import _row_norms_kernel

        _row_norms_kernel(X, out)


def row_norms_at(X, rows):
    """A length-``n`` vector holding ``||X[i]||_2`` at the given ``rows`` (zeros elsewhere):
    the norms a kernel reads when it visits those rows only, bitwise those of
    :func:`row_norms` (each row's norm is computed alone)."""
    out = np.zeros(X.shape[0])
    if len(rows):
        sampled = np.empty(len(rows))
        row_norms(np.ascontiguousarray(X[rows]), sampled)
        out[rows] = sampled
    return out


@np.errstate(invalid="ignore")
def _clip_rows_numpy(X, r, intercept_scaling, out):
    """:func:`clip_rows` in numpy, bitwise identical (norms by :func:`_row_norms_numpy`;
    a non-finite row's ``inf * 0`` is the kernel's NaN, without a warning).  ``r``: the
    clip radius, safety factor included."""
    n, d = X.shape
    nrm = _row_norms_numpy(X)
    scale = np.ones(n)
    big = nrm > r
    scale[big] = r / nrm[big]
    np.multiply(X, scale[:, None], out=out[:, :d])
    if out.shape[1] == d + 1:
        out[:, d] = intercept_scaling


def clip_and_augment(X, data_norm, fit_intercept, intercept_scaling):
    """Return a new C-contiguous float64 array of clipped rows, ``||row||_2 <= data_norm``.

    Parameters
    ----------
    X : ndarray of shape (n, d), float64, finite
    data_norm : float
        Public bound ``R`` on the L2 norm of each *augmented* row (intercept column
        included): :func:`row_bound` of the estimators' feature bound.
    fit_intercept : bool
        Append the constant column ``intercept_scaling`` (counted in the norm).
    intercept_scaling : float
        Must satisfy ``intercept_scaling < data_norm`` when ``fit_intercept``.
    """
    if hasattr(X, "tocsr"):
        return _densify_clipped(X, data_norm, fit_intercept, intercept_scaling)
    n, d = X.shape
    if fit_intercept:
        if not intercept_scaling < data_norm:
            raise ValueError(
                f"intercept_scaling={intercept_scaling} must be < data_norm={data_norm}: the "
                "intercept column counts towards the row-norm bound"
            )
        radius = float(np.sqrt(data_norm**2 - intercept_scaling**2))
        out = np.empty((n, d + 1))
    else:
        radius = float(data_norm)
        out = np.empty((n, d))
    X = np.ascontiguousarray(X, dtype=np.float64)
    radius *= clip_safety(d)
    if X.size <= NUMPY_CLIP_MAX:
        _clip_rows_numpy(X, radius, float(intercept_scaling), out)
    else:
        from ._clipping_kernels import clip_rows

        clip_rows(X, radius, float(intercept_scaling), out)
    return out


def row_bound(data_norm, fit_intercept, intercept_scaling):
    """The bound ``R`` on the augmented row ``[x, intercept_scaling]`` given the feature
    bound ``data_norm``: ``sqrt(data_norm^2 + intercept_scaling^2)`` (``data_norm`` without
    an intercept), rounded up by one ulp so that it is never below the exact value.

    >>> row_bound(1.0, True, 1.0) > 2 ** 0.5, row_bound(3.0, False, 1.0)
    (True, 3.0)
    """
    data_norm = float(data_norm)
    if not fit_intercept:
        return data_norm
    return float(np.nextafter(np.hypot(data_norm, float(intercept_scaling)), np.inf))


#: the largest clipped copy (bytes) a per-step solver makes of a sparse design
DENSE_COPY_MAX_BYTES = 1 << 30


def dense_copy_refusal(n, d, fit_intercept, sparse_solvers, solver="this solver"):
    """The error message refusing a dense copy of a sparse ``(n, d)`` design larger than
    ``DENSE_COPY_MAX_BYTES`` (public sizes only), or None when the copy is allowed.
    ``sparse_solvers``: the solvers to suggest instead -- those *of the estimator at hand*
    that fit on the sparse rows without a copy (:data:`skdp._solvers.SPARSE_SOLVERS`)."""
    size = n * (d + int(bool(fit_intercept))) * 8
    if size <= DENSE_COPY_MAX_BYTES:
        return None
    names = [f"solver={s!r}" for s in sparse_solvers]
    way_out = (f"use {' or '.join(names)}, which "
               f"{'fits' if len(names) == 1 else 'fit'} on the sparse rows without a copy"
               if names else "no solver of this estimator fits sparse rows without a copy: "
               "pass fewer rows or columns, or a dense array that fits in memory")
    return (f"{solver} reads dense rows, and the dense copy of this sparse X "
            f"({n} x {d}) would take {size / 2**30:.1f} GiB (more than "
            f"{DENSE_COPY_MAX_BYTES / 2**30:.0f} GiB); {way_out}")


def _densify_clipped(X, data_norm, fit_intercept, intercept_scaling):
    """The clipped, augmented dense copy of a sparse ``X``, for the solvers whose compiled
    kernels read dense rows (every solver but objective and output perturbation and
    dpsgd, which work on the CSR arrays: :mod:`skdp._mechanisms._clipped_rows`).  Refused
    above ``DENSE_COPY_MAX_BYTES`` (public sizes only), with the way out (the estimators
    refuse earlier, naming only their own solvers)."""
    from .._solvers import SPARSE_SOLVERS
    from ._clipped_rows import ClippedRows

    n, d = X.shape
    message = dense_copy_refusal(n, d, fit_intercept, SPARSE_SOLVERS)
    if message:
        raise ValueError(message)
    return ClippedRows(X, data_norm, fit_intercept, intercept_scaling).dense()


def feature_row_norms(X):
    """``||x_i||_2`` of every row of a dense (float64 or float32, any order) or sparse
    ``X``, overflow-safe (a huge finite row has a huge finite norm)."""
    if hasattr(X, "tocsr"):
        from ._clipped_rows import sparse_row_norms

        return sparse_row_norms(X.tocsr())
    out = np.empty(X.shape[0])
    row_norms(X, out)
    return out


def max_row_norm(X):
    """Largest feature-row norm of ``X`` -- reads the private data; used only when the user
    gives no ``data_norm`` (the fit is then flagged as not differentially private)."""
    if hasattr(X, "tocsr") or X.dtype != np.float64:
        return float(feature_row_norms(X).max()) if X.shape[0] else 0.0
    sq = np.einsum("ij,ij->i", X, X)
    m = float(np.sqrt(sq.max())) if X.shape[0] else 0.0
    if not np.isfinite(m):
        m = float(_row_norms_numpy(X).max())      # overflow-safe, bitwise the kernel
    return m
