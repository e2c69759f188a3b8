"""Privacy loss distributions built from memoised parts: the same PLD as dp-accounting's
``PLDAccountant``, bit for bit, without rebuilding the parts a search has built before.

Why.  A private pipeline at a new epsilon searches the model's share: every point of the
search calibrates DP-SGD's noise (several PLDs of its ``T`` Poisson-sampled Gaussian steps)
and then composes the model's event with the transformers' releases
(:func:`skdp.linear_model._budget.largest_model_epsilon`).  The composition's PLD is built
from the same parts as the calibration's last evaluation -- DP-SGD's ``T``-fold
self-composed step at the same noise multiplier and, on the grid the width rule picks,
often the same grid -- plus the transformers' Gaussian releases, which are the same at
every point.  ``PLDAccountant`` rebuilds each part on every call; the ``T``-fold
self-composition is most of the cost (profiled on 3,000 Adult rows: 13-40 ms a build,
16 builds for a new epsilon).

How.  :func:`pld_of` walks an event exactly as ``PLDAccountant._maybe_compose`` does
(dp-accounting 0.6: ``ComposedDpEvent`` in order, ``SelfComposedDpEvent`` multiplying the
count, ``NoOpDpEvent`` skipped, a ``NonPrivateDpEvent`` or zero noise marking the result
non-private) into a list of leaves ``(leaf event, count)``, builds every leaf's PLD with the
accountant's own call (``from_gaussian_mechanism`` with its arguments, then
``self_compose(count)`` for a Poisson-sampled step) and composes them in the accountant's
order starting from ``PLD.identity``.  The leaves' PLDs and the composed prefixes are kept
in small LRU caches keyed by ``(leaves, grid width)`` -- public quantities only: the events
are functions of parameters and public sizes, never of the rows.  The operations and their
order are the accountant's, so the result is the same floating-point PLD (pinned by
``tests/accounting/test_pld_memo.py``): every epsilon reported is the same upper bound as
before, only cheaper to reach.  Any other leaf (randomized response, Laplace, truncated
sampling...) falls back to ``PLDAccountant`` itself.
"""

import collections
import math
import threading

from . import _lazy_dp_accounting as dp_accounting

__all__ = ["pld_of"]

#: leaves' PLDs kept (a T-fold self-composed DP-SGD step is up to ~1e5 floats, 1 MB)
LEAF_CACHE_SIZE = 48
#: composed prefixes kept
PREFIX_CACHE_SIZE = 48


class _LRU:
    """A small thread-safe least-recently-used map."""

    def __init__(self, size):
        self.size = size
        self._data = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key, value):
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def clear(self):
        with self._lock:
            self._data.clear()


_LEAVES = _LRU(LEAF_CACHE_SIZE)
_PREFIXES = _LRU(PREFIX_CACHE_SIZE)


def clear_caches():
    """Forget every memoised PLD (tests; memory)."""
    _LEAVES.clear()
    _PREFIXES.clear()


class _Unsupported(Exception):
    """A leaf this module does not build: the caller falls back to the accountant."""


def _leaves(event, count, out):
    """Append ``(leaf, count)`` to ``out['leaves']`` in ``PLDAccountant._maybe_compose``'s
    order; set ``out['nonprivate']`` where the accountant sets ``_contains_non_dp_event``."""
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        out["nonprivate"] = True
        return
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        _leaves(event.event, event.count * count, out)
        return
    if isinstance(event, dp_accounting.ComposedDpEvent):
        for e in event.events:
            _leaves(e, count, out)
        return
    if isinstance(event, dp_accounting.GaussianDpEvent):
        if event.noise_multiplier == 0:
            out["nonprivate"] = True
        else:
            out["leaves"].append((event, count))
        return
    if isinstance(event, dp_accounting.PoissonSampledDpEvent) and isinstance(
            event.event, dp_accounting.GaussianDpEvent):
        if event.sampling_probability == 0:
            return
        if event.event.noise_multiplier == 0:
            out["nonprivate"] = True
        else:
            out["leaves"].append((event, count))
        return
    raise _Unsupported(type(event).__name__)


def _leaf_pld(leaf, count, interval, relation):
    """The PLD ``PLDAccountant._maybe_compose`` composes for ``(leaf, count)``.  Cached on
    everything it depends on, the neighbouring relation included (a Poisson leaf's PLD
    under add/remove is not the one under replace-one)."""
    from dp_accounting.pld.privacy_loss_distribution import from_gaussian_mechanism

    key = (leaf, count, interval, relation)
    pld = _LEAVES.get(key)
    if pld is not None:
        return pld
    if isinstance(leaf, dp_accounting.GaussianDpEvent):
        pld = from_gaussian_mechanism(
            standard_deviation=leaf.noise_multiplier / math.sqrt(count),
            value_discretization_interval=interval, neighboring_relation=relation)
    else:
        # the library's self_compose, the same PLD, its truncation bounds vectorised
        from ._self_compose import self_compose

        pld = self_compose(from_gaussian_mechanism(
            standard_deviation=leaf.event.noise_multiplier,
            value_discretization_interval=interval,
            sampling_prob=leaf.sampling_probability,
            neighboring_relation=relation), count)
    _LEAVES.put(key, pld)
    return pld


class MemoisedPld:
    """What :func:`skdp.accounting._accountant._pld` returns: ``get_epsilon(delta)`` and
    ``get_delta(epsilon)`` as ``PLDAccountant``'s."""

    def __init__(self, pld, nonprivate):
        self._pld = pld
        self._nonprivate = nonprivate

    def get_epsilon(self, target_delta):
        if self._nonprivate:
            return math.inf
        return self._pld.get_epsilon_for_delta(target_delta)

    def get_delta(self, target_epsilon):
        if self._nonprivate:
            return 1
        return self._pld.get_delta_for_epsilon(target_epsilon)


def pld_of(event, interval, relation):
    """The PLD of ``event`` on a grid of width ``interval`` under ``relation``, as
    ``PLDAccountant(relation, interval).compose(event)`` builds it (module docstring), or
    None when ``event`` holds a leaf this module does not build or cannot be hashed."""
    from dp_accounting.pld.privacy_loss_distribution import identity

    out = {"leaves": [], "nonprivate": False}
    try:
        _leaves(event, 1, out)
        leaves = tuple(out["leaves"])
        hash(leaves)
    except (_Unsupported, TypeError):
        return None
    if out["nonprivate"]:
        return MemoisedPld(None, True)
    # the longest prefix built before, then the rest, each prefix remembered
    k = len(leaves)
    pld = None
    while k > 0:
        pld = _PREFIXES.get((leaves[:k], interval, relation))
        if pld is not None:
            break
        k -= 1
    if pld is None:
        pld = identity(value_discretization_interval=interval)
    for i in range(k, len(leaves)):
        leaf, count = leaves[i]
        pld = pld.compose(_leaf_pld(leaf, count, interval, relation))
        _PREFIXES.put((leaves[:i + 1], interval, relation), pld)
    return MemoisedPld(pld, False)
