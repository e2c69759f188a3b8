"""Synthetic data with bounded rows for differentially private learning.

The privacy proofs of skdp's estimators need ``||x||_2 <= data_norm`` for every
row (and ``|y| <= y_bound`` for regression). The generators here produce data
that satisfies these bounds *by construction*, so examples and tests do not
depend on the estimator's clipping.
"""

# Authors: skdp developers
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, validate_params

__all__ = ["make_private_classification", "make_private_regression"]


def _check_generator(random_state):
    """Return a :class:`numpy.random.Generator` for ``random_state``.

    None gives fresh OS entropy, an int seeds a new Generator, a Generator is
    used as is, and a legacy :class:`~numpy.random.RandomState` seeds a new
    Generator with one 32-bit draw from it.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    return np.random.default_rng(random_state)


def _bound_rows(X, radius):
    """Radially project the rows of ``X`` onto the ball of ``radius``, in place.

    Rows inside the ball are unchanged; rows outside are rescaled to norm
    ``radius``. A final pass shrinks any row whose *computed* norm still
    exceeds ``radius`` through rounding by one ulp of the factor, so that
    ``np.linalg.norm(X, axis=1) <= radius`` holds exactly in floating point.
    Returns the number of rows that were projected.
    """
    norms = np.linalg.norm(X, axis=1)
    over = norms > radius
    n_projected = int(over.sum())
    if n_projected:
        X[over] *= (radius / norms[over])[:, None]
    for _ in range(64):
        norms = np.linalg.norm(X, axis=1)
        over = norms > radius
        if not over.any():
            break
        X[over] *= np.nextafter(radius / norms[over], 0.0)[:, None]
    return n_projected


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "n_classes": [Interval(Integral, 2, None, closed="left")],
        "data_norm": [Interval(Real, 0, None, closed="neither")],
        "class_sep": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def make_private_classification(
    n_samples=1000,
    n_features=10,
    *,
    n_classes=2,
    data_norm=1.0,
    class_sep=1.0,
    random_state=None,
):
    """Generate Gaussian classes whose rows satisfy ``||x||_2 <= data_norm``.

    Construction, in units of the within-class noise:

    1. Labels are balanced: ``y = arange(n_samples) % n_classes``, randomly
       permuted (class sizes differ by at most one).
    2. Class means ``m_k``: for two classes ``m_0 = -class_sep * u`` and
       ``m_1 = +class_sep * u`` with ``u`` a random unit vector; for more
       classes ``m_k = class_sep * v_k`` with ``v_k`` orthonormal random
       directions if ``n_classes <= n_features``, else independent random
       unit vectors.
    3. ``z_i = m_{y_i} + g_i`` with ``g_i ~ N(0, I)``.
    4. ``x_i = data_norm * z_i / R`` with the fixed radius
       ``R = sqrt(n_features + class_sep**2) + 2`` (about 3 standard
       deviations above the typical norm of ``z``), then every row still
       outside the ball of radius ``data_norm`` (typically below 1% of
       the rows) is radially projected onto it, and rounding is corrected, so
       ``np.linalg.norm(X, axis=1) <= data_norm`` holds exactly.

    Both scaling steps multiply a row by a positive number, so the sign of
    ``u . x`` is that of ``u . z``: for two classes the linear rule
    ``sign(u . x)`` has error ``Phi(-class_sep)`` (about 16% at the default
    ``class_sep=1``, 2.3% at ``class_sep=2``).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of rows.
    n_features : int, default=10
        Number of features.
    n_classes : int, default=2
        Number of classes; labels are ``0, ..., n_classes - 1``.
    data_norm : float, default=1.0
        Bound on the Euclidean norm of every row (``> 0``).
    class_sep : float, default=1.0
        Distance of each class mean from the origin, in units of the noise
        standard deviation (``>= 0``; 0 makes the classes indistinguishable).
    random_state : int, RandomState, Generator or None, default=None
        Seed or generator; the same int gives the same data.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        float64, C-contiguous, every row of norm at most ``data_norm``.
    y : ndarray of shape (n_samples,)
        int64 class labels.

    See Also
    --------
    make_private_regression : Bounded-row regression data.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.datasets import make_private_classification
    >>> X, y = make_private_classification(200, 5, data_norm=2.0, random_state=0)
    >>> X.shape, y.shape
    ((200, 5), (200,))
    >>> bool(np.linalg.norm(X, axis=1).max() <= 2.0)
    True
    >>> np.bincount(y).tolist()
    [100, 100]
    """
    rng = _check_generator(random_state)
    n_samples, n_features, n_classes = int(n_samples), int(n_features), int(n_classes)
    data_norm, class_sep = float(data_norm), float(class_sep)

    y = np.arange(n_samples, dtype=np.int64) % n_classes
    y = rng.permutation(y)

    if n_classes == 2:
        u = rng.standard_normal(n_features)
        u /= np.linalg.norm(u)
        means = np.vstack([-u, u])
    elif n_classes <= n_features:
        q, _ = np.linalg.qr(rng.standard_normal((n_features, n_classes)))
        means = q.T.copy()
    else:
        means = rng.standard_normal((n_classes, n_features))
        means /= np.linalg.norm(means, axis=1, keepdims=True)
    means *= class_sep

    Z = means[y] + rng.standard_normal((n_samples, n_features))
    radius = np.sqrt(n_features + class_sep**2) + 2.0
    X = np.ascontiguousarray(Z * (data_norm / radius), dtype=np.float64)
    _bound_rows(X, data_norm)
    return X, y


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "data_norm": [Interval(Real, 0, None, closed="neither")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "outlier_fraction": [Interval(Real, 0, 1, closed="both")],
        "y_bound": [Interval(Real, 0, None, closed="neither"), None],
        "coef": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def make_private_regression(
    n_samples=1000,
    n_features=10,
    *,
    data_norm=1.0,
    noise=0.1,
    outlier_fraction=0.0,
    y_bound=None,
    coef=False,
    random_state=None,
):
    """Generate a linear regression problem with ``||x||_2 <= data_norm``.

    Construction:

    1. Rows are uniform in the Euclidean ball of radius ``data_norm``:
       ``x_i = data_norm * U_i**(1/n_features) * g_i / ||g_i||`` with
       ``g_i ~ N(0, I)`` and ``U_i ~ Uniform(0, 1)``; rounding is corrected so
       that ``np.linalg.norm(X, axis=1) <= data_norm`` holds exactly.
    2. The true coefficient ``w`` is a random unit vector, so the clean
       signal satisfies ``|x_i . w| <= data_norm``.
    3. ``y_i = x_i . w + noise * e_i`` with ``e_i ~ N(0, 1)``.
    4. Outliers: ``round(outlier_fraction * n_samples)`` rows, chosen at
       random, get the gross error ``y_i = x_i . w + s_i * a_i`` instead, with
       a random sign ``s_i`` and ``a_i ~ Uniform(5, 10) * (data_norm + noise)``,
       far outside the range of the clean targets.
    5. If ``y_bound`` is given, targets are clipped to ``[-y_bound, y_bound]``.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of rows.
    n_features : int, default=10
        Number of features.
    data_norm : float, default=1.0
        Bound on the Euclidean norm of every row (``> 0``).
    noise : float, default=0.1
        Standard deviation of the Gaussian noise on the clean targets.
    outlier_fraction : float, default=0.0
        Fraction of rows, in [0, 1], whose target carries a gross error.
    y_bound : float or None, default=None
        If given (``> 0``), every target is clipped to ``[-y_bound, y_bound]``.
    coef : bool, default=False
        If True, also return the true coefficient ``w``.
    random_state : int, RandomState, Generator or None, default=None
        Seed or generator; the same int gives the same data.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        float64, C-contiguous, every row of norm at most ``data_norm``.
    y : ndarray of shape (n_samples,)
        float64 targets, within ``[-y_bound, y_bound]`` if ``y_bound`` is set.
    coef : ndarray of shape (n_features,)
        The unit-norm true coefficient; only returned if ``coef`` is True.

    See Also
    --------
    make_private_classification : Bounded-row classification data.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.datasets import make_private_regression
    >>> X, y, w = make_private_regression(
    ...     100, 3, y_bound=1.0, outlier_fraction=0.1, coef=True, random_state=0
    ... )
    >>> X.shape, y.shape, w.shape
    ((100, 3), (100,), (3,))
    >>> bool(np.linalg.norm(X, axis=1).max() <= 1.0), bool(np.abs(y).max() <= 1.0)
    (True, True)
    """
    rng = _check_generator(random_state)
    n_samples, n_features = int(n_samples), int(n_features)
    data_norm, noise = float(data_norm), float(noise)

    G = rng.standard_normal((n_samples, n_features))
    norms = np.linalg.norm(G, axis=1)
    norms[norms == 0.0] = 1.0  # probability zero; keeps the row at the origin
    radii = data_norm * rng.uniform(size=n_samples) ** (1.0 / n_features)
    X = np.ascontiguousarray(G * (radii / norms)[:, None], dtype=np.float64)
    _bound_rows(X, data_norm)

    w = rng.standard_normal(n_features)
    w /= np.linalg.norm(w)

    clean = X @ w
    y = clean + noise * rng.standard_normal(n_samples)
    n_outliers = int(round(float(outlier_fraction) * n_samples))
    if n_outliers:
        idx = rng.choice(n_samples, size=n_outliers, replace=False)
        signs = rng.choice(np.array([-1.0, 1.0]), size=n_outliers)
        sizes = rng.uniform(5.0, 10.0, size=n_outliers) * (data_norm + noise)
        y[idx] = clean[idx] + signs * sizes
    if y_bound is not None:
        np.clip(y, -float(y_bound), float(y_bound), out=y)
    if coef:
        return X, y, w
    return X, y
