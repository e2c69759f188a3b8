r"""Floating-point error of the sensitive sums, and the clip that keeps it inside the bound.

A Gaussian (or grid) release of a sum ``s(D) = sum_i t_i``, whose terms are clipped to
``||t_i||_2 <= C``, is calibrated for the replace-one sensitivity ``2C`` of the *exact* sum.
What the program releases is the *computed* sum ``s^(D)``, and rounding is data-dependent:
``s^(D) - s^(D')`` is not ``t_j - t_j'``.  At batches of a few hundred rows the difference
exceeds the ``1e-12`` clipping margin (the error grows like ``N^2 2^-53`` in the worst
case), so the margin alone does not make the claimed sensitivity true.

Bound.  Evaluate ``sum_{i=1}^N t_i`` in floating point in *any* order: the additions form a
binary tree with ``N`` leaves, whose depth ``d`` is at most ``N - 1``.  Each partial sum is
rounded at most ``d`` times on its way to the root, so (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., 2002, eq. (4.4) and Lemma 3.1), componentwise,

    |s^ - s| <= gamma_d sum_i |t_i|,        gamma_d = d u / (1 - d u),   u = 2^-53,

hence ``||s^ - s||_2 <= gamma_d sum_i ||t_i||_2 <= gamma_d N C``.  The exact sums of two
neighbours differ by at most ``2C`` (one term replaced), so

    ||s^(D) - s^(D')||_2 <= 2C + 2 gamma_d N C = 2C (1 + N gamma_d).

A division by a public count ``N`` (a mean) rounds once more:
``||fl(s^/N) - s^/N|| <= u ||s^||/N <= u (1 + gamma_d) C``, which adds at most ``N u (1 +
gamma_d)`` to the factor; ``gamma_d + u (1 + gamma_d) <= gamma_{d+1}``.  So with

    F(N, d) = 1 + N gamma_{d+1},

terms clipped to ``C/F(N, d)`` give a computed sum (or mean) whose replace-one sensitivity
is at most ``2C`` (``2C/N`` for the mean): the analysis' sensitivity holds for the float64
numbers actually released.  That is what :func:`summation_clip` returns; the callers keep
their noise at the unshrunk ``C``.

Sizes.  ``F - 1`` is ``N (d + 1) 2^-53``: ``1.1e-8`` at ``N = d = 10^4``, ``1.1e-4`` at
``10^6``, ``1.1 %`` at ``10^7`` (recursive summation).  Poisson batches use ``N = d = n``
(the realised batch size is private; ``n`` bounds it).  Sums over more than a few million
terms should be blocked (:func:`blocked_sum`: depth ``<= levels * (BLOCK - 1)``), which
:class:`~skdp.preprocessing.DPStandardScaler` does.
"""

import math

import numpy as np

__all__ = ["UNIT_ROUNDOFF", "gamma_k", "summation_factor", "summation_clip", "blocked_sum",
           "blocked_depth", "BLOCK"]

UNIT_ROUNDOFF = 2.0 ** -53
#: per-term clip safety of the per-row oracles (spider, zeroth_order, warm_gd): a term is
#: clipped to ``bound * TERM_SAFETY`` so that the floating-point term respects ``bound``
#: despite the rounding of the clip itself
TERM_SAFETY = 1.0 - 1e-9
#: rows per block of :func:`blocked_sum`
BLOCK = 4096


def gamma_k(k):
    """Higham's ``gamma_k = k u/(1 - k u)`` (``u = 2^-53``); ``inf`` when ``k u >= 1``."""
    ku = float(k) * UNIT_ROUNDOFF
    return math.inf if ku >= 1.0 else ku / (1.0 - ku)


def summation_factor(n_terms, depth=None):
    """``F(N, d) = 1 + N gamma_{d+1}`` (module docstring): the computed sum (or mean by the
    public ``N``) of ``N`` terms of norm ``<= C`` evaluated with tree depth ``<= d`` (default
    ``N - 1``, any order) has replace-one sensitivity ``<= 2 C F``."""
    n_terms = max(int(n_terms), 1)
    depth = n_terms - 1 if depth is None else int(depth)
    factor = 1.0 + n_terms * gamma_k(depth + 1)
    if not factor < 2.0:
        raise ValueError(
            f"a sum of {n_terms} terms at depth {depth} can be off by more than its "
            "sensitivity in float64; block the sum (skdp._mechanisms._summation.blocked_sum)")
    # one ulp up, so the factor itself is never rounded below its value
    return float(np.nextafter(factor, np.inf))


def summation_clip(bound, n_terms, depth=None):
    """The clip ``bound / F(N, d)`` (rounded down) that keeps the computed sum of ``N`` terms
    within the sensitivity ``2 bound`` of the exact sum (module docstring)."""
    return float(np.nextafter(float(bound) / summation_factor(n_terms, depth), 0.0))


def blocked_depth(n_terms, block=BLOCK):
    """Depth bound of :func:`blocked_sum` over ``n_terms`` rows: ``N - 1`` for one block;
    otherwise each of the ``ceil(log_block N)`` levels sums at most ``block`` terms one after
    another (depth ``block - 1``)."""
    n_terms = max(int(n_terms), 1)
    if n_terms <= block:
        return n_terms - 1
    levels, size = 0, 1
    while size < n_terms:
        size *= block
        levels += 1
    return levels * (block - 1)


def blocked_sum(A, block=BLOCK):
    """``A.sum(axis=0)`` of a 2-D array in blocks of ``block`` rows per level (depth
    :func:`blocked_depth`, whatever NumPy's own reduction order)."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError("blocked_sum expects a 2-D array")
    while A.shape[0] > 1:
        m = A.shape[0]
        full = (m // block) * block
        parts = []
        if full:
            # each block's rows are added one after another: depth block - 1
            parts.append(_add_rows(A[:full].reshape(m // block, block, A.shape[1])))
        if full < m:
            parts.append(_add_rows(A[full:][None, :, :]))
        A = np.concatenate(parts, axis=0)
    if A.shape[0] == 0:
        return np.zeros(A.shape[1])
    return A[0].copy()


def _add_rows(blocks):
    """Row-by-row accumulation inside each block (a fixed recursive order)."""
    out = blocks[:, 0, :].copy()
    for k in range(1, blocks.shape[1]):
        out += blocks[:, k, :]
    return out
