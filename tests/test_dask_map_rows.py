"""map_rows hands each row block to its function as is: CSR blocks of a pipeline's basis
are not copied through Dask's concatenation of a dropped axis (scipy.sparse.hstack)."""

import numpy as np
import pytest
import scipy.sparse as sp

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from skdp._dask import map_rows  # noqa: E402


def _csr_array(n_blocks=3, rows=50, width=7):
    rng = np.random.default_rng(0)
    blocks = [sp.random(rows, width, density=0.3, format="csr", random_state=rng)
              for _ in range(n_blocks)]
    arr = da.concatenate([da.from_delayed(dask.delayed(b), shape=b.shape, dtype=np.float64,
                                          meta=sp.csr_matrix((0, width)))
                          for b in blocks], axis=0)
    return arr, sp.vstack(blocks).tocsr()


def _row_sums(block):
    return np.asarray(block.sum(axis=1)).ravel()


def test_map_rows_equals_the_rows_of_the_whole(monkeypatch):
    X, whole = _csr_array()
    out = map_rows(X, _row_sums)
    assert out.chunks == (X.chunks[0],)
    calls = []
    real = sp.hstack
    monkeypatch.setattr(sp, "hstack", lambda *a, **k: calls.append(1) or real(*a, **k))
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_array_equal(out.compute(), _row_sums(whole))
        assert calls == []                     # no block was copied
        # what it replaces: map_blocks(drop_axis=1) stacks each block (a copy)
        X.map_blocks(_row_sums, drop_axis=1, dtype=np.float64,
                     meta=np.zeros(0)).compute()
    assert len(calls) == X.numblocks[0]


def test_map_rows_passes_arguments_and_dtype():
    X, whole = _csr_array(2)
    w = np.arange(7.0)
    out = map_rows(X, lambda b, v: np.asarray(b @ v).ravel() > 1.0, w, dtype=bool)
    assert out.dtype == bool
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_array_equal(out.compute(), np.asarray(whole @ w).ravel() > 1.0)
