r"""The binary-tree (tree-aggregation) mechanism for private prefix sums of a stream.

Dwork et al. 2010; Chan, Shi & Song 2011; Thm 2.2 of Liu & Talwar v2.  Leaves ``M_1, M_2, ... in R^d`` arrive one at a time
(``M_i`` may depend on the earlier releases); after leaf ``t`` the mechanism releases

    X_t = sum_{j <= t} M_j + TREE(t),      TREE(t) = sum_{I in NODE(t)} zeta_I,

where ``zeta_I ~ N(0, sigma^2 I_d)`` is drawn **once** per dyadic interval ``I`` and reused by
every ``t`` whose decomposition contains ``I``.

Nodes.  With horizon ``Sigma`` (the maximum number of leaves) the tree has
``m = floor(log2 Sigma) + 1`` levels ``l = 0..m-1``.  ``NODE(t)`` has one interval per set
bit ``l`` of ``t``: ``[(k - 1) 2^l + 1, k 2^l]`` with ``k = floor(t / 2^l)`` (``k`` is odd
exactly when bit ``l`` is set).  These intervals are disjoint and cover ``[1, t]`` (binary
expansion of ``t``), so ``|NODE(t)| = popcount(t) <= m`` and, the ``zeta`` being
independent, every coordinate of ``TREE(t)`` has variance ``popcount(t) sigma^2``.  (The
literal v2 routine never uses the root interval and v1's has a typo.)

Memory ``O(m d)``: per level the current block index ``k`` and its noise vector are
cached; a level's noise is redrawn when its block index changes.  Since ``t`` increases by
one per leaf, each interval's noise is drawn exactly once, in a fixed order, from the
``numpy.random.Generator`` passed in (same seed => same noise, bit for bit).

Privacy (replace-one, the skdp convention of :mod:`skdp.accounting._events`).  Suppose that
for every history and every pair of neighbouring datasets each leaf moves by at most ``s``
in L2, and that a record enters **one** leaf (disjoint data chunks, as in a single pass).
The released prefix sums are a post-processing of the noisy node sums
``sum_{j in I} M_j + zeta_I`` (each released once, at the end of its interval).  A record
in leaf ``i`` enters exactly the nodes containing ``i``: at most one per level, so at most
``m``.  Conditionally on the earlier releases each such node sum is a Gaussian mechanism
with L2 sensitivity ``<= s`` (the later leaves of the node depend on the record only through
earlier releases, fixed by the conditioning); every other node has sensitivity 0.  Adaptive
composition of ``m`` Gaussian mechanisms with ``mu_i = s/sigma`` is exactly
``sqrt(m) s/sigma``-GDP (Dong, Roth & Su 2022), i.e. the event

    SelfComposedDpEvent(gaussian_event(sigma, s), m)       (:func:`tree_dp_event`)

and the (epsilon, delta) guarantee follows from the exact GDP profile.

Restart.  A new tree (all nodes fresh, leaf index back to 1) may be started
at any time chosen from public information; trees on disjoint records compose in
parallel, so when every record is in one leaf of one tree the guarantee is one tree's
event.  :meth:`TreeAggregator.restart` does this; ``leaf index == horizon`` forces it
(:attr:`TreeAggregator.full`) so that ``m`` is a hard bound on the nodes per leaf.

Paper calibration (Thm 2.2, with ``log Sigma`` read as ``ln(max(Sigma, 2))`` so that
``Sigma = 1`` does not give ``sigma = 0``): ``sigma = 4 s sqrt(ln(max(Sigma, 2)) ln(1/delta))
/ epsilon`` (:func:`tree_sigma_paper`).
"""

import math

import dp_accounting
import numpy as np

from ..accounting import gaussian_delta, gaussian_event, gaussian_mu_for, get_delta
from .._numba_cache import ensure_cache_locator, kernel
from ._exact import grid_value

__all__ = [
    "TreeAggregator",
    "tree_height",
    "tree_nodes",
    "tree_noise",
    "tree_reset",
    "tree_exact_reset",
    "tree_exact_release",
    "tree_float_release",
    "tree_node_sensitivity",
    "tree_dp_event",
    "tree_sigma_paper",
    "tree_sigma_tight",
]


def tree_height(horizon):
    """``m = floor(log2 horizon) + 1``: levels of a tree over ``horizon >= 1`` leaves.

    Examples
    --------
    >>> from skdp._mechanisms._tree import tree_height
    >>> [tree_height(s) for s in (1, 2, 3, 4, 7, 8, 1000)]
    [1, 2, 2, 3, 3, 4, 10]
    """
    horizon = int(horizon)
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    return horizon.bit_length()


def tree_nodes(t):
    """``NODE(t)``: the dyadic intervals ``(u, v)`` (1-based, inclusive) summing to ``[1, t]``.

    One per set bit ``l`` of ``t``, from the highest level down.

    Examples
    --------
    >>> from skdp._mechanisms._tree import tree_nodes
    >>> tree_nodes(6), tree_nodes(8), tree_nodes(7)
    ([(1, 4), (5, 6)], [(1, 8)], [(1, 4), (5, 6), (7, 7)])
    """
    t = int(t)
    if t < 1:
        raise ValueError(f"t must be >= 1, got {t}")
    out = []
    for level in range(t.bit_length() - 1, -1, -1):
        if (t >> level) & 1:
            k = t >> level
            out.append(((k - 1) * (1 << level) + 1, k * (1 << level)))
    return out


ensure_cache_locator(__file__)  # before the cached kernels (read-only installs)


@kernel
def tree_reset(block):
    """Start a new tree: forget every cached node (``block[l] = -1``)."""
    for level in range(block.shape[0]):
        block[level] = -1


@kernel
def tree_noise(t, block, nodes, sigma, rng, out):
    """Write ``TREE(t)`` into ``out`` (length d), drawing nodes not yet drawn.

    ``block`` (int64, length m) and ``nodes`` (m x d) are the per-level cache; call
    :func:`tree_reset` to start a tree.  Requires ``1 <= t < 2^m`` and calls with
    non-decreasing ``t`` within a tree (each node is then drawn exactly once).  Levels are
    visited from 0 upwards and each new node draws its ``d`` coordinates in order.
    """
    d = out.shape[0]
    for j in range(d):
        out[j] = 0.0
    for level in range(block.shape[0]):
        if (t >> level) & 1:
            k = t >> level
            if block[level] != k:
                for j in range(d):
                    nodes[level, j] = sigma * rng.standard_normal()
                block[level] = k
            for j in range(d):
                out[j] += nodes[level, j]


@kernel
def tree_exact_reset(acc, released):
    """Start a new exact tree (:func:`tree_exact_release`): zero both per-level arrays."""
    for level in range(acc.shape[0]):
        for j in range(acc.shape[1]):
            acc[level, j] = 0.0
            released[level, j] = 0.0


@kernel
def _tree_push(t, leaf, acc):
    """Add leaf ``t`` to every level's accumulator; return the level ``v_2(t)`` of the one
    node of ``NODE(t)`` that ends at ``t`` (the caller releases ``acc[level]``)."""
    levels, d = acc.shape
    for level in range(levels):
        for j in range(d):
            acc[level, j] += leaf[j]
    low = 0
    while not (t >> low) & 1:
        low += 1
    return low


@kernel
def _tree_close(t, low, acc, released, out):
    """After node ``low`` is released: restart the accumulators of levels ``<= low``
    (their intervals end at ``t``) and write into ``out`` the sum of the released nodes of
    ``NODE(t)``."""
    levels, d = acc.shape
    for level in range(low + 1):
        for j in range(d):
            acc[level, j] = 0.0
    for j in range(d):
        tot = 0.0
        for level in range(levels):
            if (t >> level) & 1:
                tot += released[level, j]
        out[j] = tot


@kernel
def tree_exact_release(t, leaf, acc, released, gamma, z, out):
    """The exact (floating-point-safe) form of the tree: add leaf ``M_t`` and write the
    private prefix sum into ``out``.

    Instead of adding cached float node noise to a running sum, the node sums themselves
    are released: every level ``l`` accumulates in ``acc[l]`` the leaves of its current
    dyadic interval; at leaf ``t`` exactly one node of ``NODE(t)`` is new, the one at level
    ``v = v_2(t)`` (the lowest set bit) that ends at ``t``, and it is released as
    ``gamma (rint(S/gamma) + z)`` (:func:`~skdp._mechanisms._exact.grid_value`, ``z`` one
    row of pre-drawn discrete Gaussian integers) into ``released[v]``; the accumulators of
    levels ``<= v`` restart (their intervals end at ``t``).  ``out`` is the sum of the
    released nodes of ``NODE(t)`` -- post-processing of node releases, each a grid release
    of a sum the record enters at most once per level, so the analysis of the module
    docstring holds node by node with the grid mechanism's dominating Gaussian.  Call
    :func:`tree_exact_reset` to start a tree; ``1 <= t < 2^m``, ``t`` increasing by one.
    """
    low = _tree_push(t, leaf, acc)
    for j in range(acc.shape[1]):
        released[low, j] = grid_value(acc[low, j], gamma, z[j])
    _tree_close(t, low, acc, released, out)


@kernel
def tree_float_release(t, leaf, acc, released, sigma, rng, out):
    """:func:`tree_exact_release` with float noise: the node of ``NODE(t)`` that ends at
    ``t`` is released as its computed sum plus ``N(0, sigma^2 I)`` (``p`` draws from
    ``rng``, in order), and ``out`` is the sum of the released nodes of ``NODE(t)``.

    This is the ``secure_noise=False`` form of the solvers' trees.  Each released node is
    computed from its own leaves only, so the sensitivity of a computed node sum,
    rounding included, is :func:`tree_node_sensitivity`, and the solvers scale ``sigma``
    by it, as on the exact path.  A running prefix sum plus :func:`tree_noise`, the form
    used before, carries every leaf's rounding into all later releases, which the tree's
    analysis (a record enters one node per level) does not cover.  The float addition of
    the noise itself is not floating-point safe (:mod:`skdp._mechanisms._exact`).
    Call :func:`tree_exact_reset` to start a tree; ``1 <= t < 2^m``, ``t`` increasing by
    one."""
    low = _tree_push(t, leaf, acc)
    for j in range(acc.shape[1]):
        released[low, j] = acc[low, j] + sigma * rng.standard_normal()
    _tree_close(t, low, acc, released, out)


def tree_node_sensitivity(sensitivity, leaf_rows, leaf_norm, n_leaves):
    """Replace-one sensitivity of a *computed* node sum of :func:`tree_exact_release`.

    A leaf is a float64 mean of at most ``leaf_rows`` clipped terms, so its sensitivity is
    ``s F(leaf_rows)`` (:func:`~skdp._mechanisms._summation.summation_factor`); a node adds
    at most ``n_leaves`` leaves of norm ``<= leaf_norm`` in order (depth ``< n_leaves``),
    which errs by at most ``gamma_{n_leaves} n_leaves leaf_norm`` on each side.  Hence
    ``s F(leaf_rows) + 2 gamma_{n_leaves} n_leaves leaf_norm`` (rounded up)."""
    from ._summation import gamma_k, summation_factor

    value = (float(sensitivity) * summation_factor(leaf_rows)
             + 2.0 * gamma_k(n_leaves) * n_leaves * float(leaf_norm))
    return float(np.nextafter(value, np.inf))


def tree_dp_event(sigma, sensitivity, horizon):
    """Event of one tree with node noise ``sigma`` and leaf sensitivity ``s`` (module doc).

    ``SelfComposedDpEvent(gaussian_event(sigma, s), m)``, ``m = tree_height(horizon)``:
    ``sqrt(m) s / sigma``-GDP.

    Examples
    --------
    >>> from skdp.accounting import get_epsilon
    >>> from skdp._mechanisms._tree import tree_dp_event
    >>> round(get_epsilon(tree_dp_event(2.0, 1.0, 7), 1e-5), 3)   # mu = sqrt(3)/2
    3.709
    """
    return dp_accounting.SelfComposedDpEvent(
        gaussian_event(sigma, sensitivity), tree_height(horizon)
    )


def tree_sigma_paper(epsilon, delta, sensitivity, horizon):
    """Thm 2.2's node noise ``4 s sqrt(ln(max(Sigma, 2)) ln(1/delta)) / epsilon``."""
    if not (epsilon > 0 and 0 < delta < 1 and sensitivity > 0):
        raise ValueError("need epsilon > 0, 0 < delta < 1 and sensitivity > 0")
    return 4.0 * sensitivity * math.sqrt(math.log(max(horizon, 2)) * math.log(1.0 / delta)) \
        / epsilon


def tree_sigma_tight(epsilon, delta, sensitivity, horizon):
    """Smallest node noise with which one tree is (epsilon, delta)-DP (exact GDP):
    ``sigma = sqrt(m) s / mu*``, ``mu*`` the largest GDP parameter within the budget."""
    m = tree_height(horizon)
    sigma = math.sqrt(m) * float(sensitivity) / gaussian_mu_for(float(epsilon), float(delta))
    # the event stores 2 sigma / s and the accountant recomputes mu from it: step up by a
    # few ulps until the reported event itself certifies the target
    while gaussian_delta(float(epsilon), math.sqrt(m) * float(sensitivity) / sigma) > delta or \
            get_delta(tree_dp_event(sigma, sensitivity, horizon), epsilon) > delta:
        sigma *= 1.0 + 1e-12
    return sigma


class TreeAggregator:
    """Private running sums of a vector stream (binary-tree mechanism, module docstring).

    Parameters
    ----------
    dim : int
        Dimension ``d`` of the leaves.
    sigma : float
        Standard deviation of each node's noise, per coordinate.
    horizon : int
        Maximum number of leaves per tree (``m = floor(log2 horizon) + 1`` levels).
    rng : numpy.random.Generator

    Attributes
    ----------
    t : int
        Leaves added to the current tree.
    n_trees : int
        Trees started (restarts + 1).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp._mechanisms._tree import TreeAggregator
    >>> tree = TreeAggregator(dim=2, sigma=0.1, horizon=8, rng=np.random.default_rng(0))
    >>> released = [tree.add(np.ones(2)) for _ in range(3)]
    >>> bool(np.allclose(released[2] - tree.noise(), [3.0, 3.0]))
    True
    """

    def __init__(self, dim, sigma, horizon, rng):
        if not sigma >= 0.0:
            raise ValueError(f"sigma must be >= 0, got {sigma!r}")
        self.dim = int(dim)
        self.sigma = float(sigma)
        self.horizon = int(horizon)
        self.m = tree_height(self.horizon)
        self.rng = rng
        self._block = np.empty(self.m, dtype=np.int64)
        self._nodes = np.zeros((self.m, self.dim))
        self._noise = np.zeros(self.dim)
        self.n_trees = 0
        self.restart()

    def restart(self):
        """Start a new tree: exact sum, leaf index and node cache reset."""
        tree_reset(self._block)
        self._sum = np.zeros(self.dim)
        self._noise = np.zeros(self.dim)
        self.t = 0
        self.n_trees += 1

    @property
    def full(self):
        """True when the tree holds ``horizon`` leaves (restart before adding more)."""
        return self.t >= self.horizon

    def add(self, leaf):
        """Add leaf ``M_{t+1}`` and return the private prefix sum ``sum M + TREE(t+1)``."""
        if self.full:
            raise RuntimeError("the tree is full (horizon reached): call restart() first")
        leaf = np.asarray(leaf, dtype=np.float64)
        if leaf.shape != (self.dim,):
            raise ValueError(f"leaf must have shape ({self.dim},), got {leaf.shape}")
        self.t += 1
        self._sum = self._sum + leaf
        tree_noise(self.t, self._block, self._nodes, self.sigma, self.rng, self._noise)
        return self._sum + self._noise

    def noise(self):
        """``TREE(t)`` of the last release (for tests; never release it separately)."""
        return self._noise.copy()

    def dp_event(self, sensitivity):
        """Event of one tree whose leaves have replace-one sensitivity ``sensitivity``."""
        return tree_dp_event(self.sigma, sensitivity, self.horizon)
