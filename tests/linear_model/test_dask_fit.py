"""Fits on Dask collections (objective perturbation for binary DPLogisticRegression and
DPHuberRegressor, DP-SGD for the multinomial model, warm_gd for DPNonconvexRegressor: their
defaults) on a real engine: LocalCluster, process workers.

The fit's event is the in-memory fit's (same public parameters), its accuracy the same
within noise, the rows never reach the client (only O(p) sums and p x p Hessians do), the
ledger records it once, and a worker killed mid-fit gives either the same release (Dask
recomputes the lost partitions from their lineage) or an error -- never a release on part
of the data.
"""

import os
import signal
import threading
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from sklearn.utils.validation import check_is_fitted  # noqa: E402

from skdp import DPHuberRegressor, DPLogisticRegression, DPNonconvexRegressor  # noqa: E402
from skdp.accounting import PrivacyLedger  # noqa: E402

from .._dask_received import received_sizes  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _classification(n=40_000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    X[:20] *= 50.0                               # beyond the bound: clipped on the workers
    y = (X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("secure_noise", [True, False])
def test_logistic_dask_fit_matches_in_memory(client, secure_noise):
    X, y = _classification()
    kw = dict(epsilon=1.0, data_norm=1.0, classes=[0, 1], random_state=4,
              secure_noise=secure_noise)
    mem = DPLogisticRegression(**kw).fit(X, y)
    dsk = DPLogisticRegression(**kw).fit(da.from_array(X, chunks=(6_000, 6)),
                                         da.from_array(y, chunks=6_000))
    assert dsk.solver_ == mem.solver_ == "objective_perturbation"
    assert dsk.dp_event_ == mem.dp_event_ and dsk.epsilon_ == mem.epsilon_ == 1.0
    assert dsk.alpha_ == mem.alpha_ and dsk.n_features_in_ == 6
    # same noise (same seed), partitioned sums: the certified points differ by rounding
    # only, far below the noise
    assert np.abs(dsk.coef_ - mem.coef_).max() <= 1e-3 * np.abs(mem.coef_).max()
    assert abs(dsk.score(X, y) - mem.score(X, y)) <= 0.005


@pytest.mark.parametrize("Est", [DPLogisticRegression, DPHuberRegressor])
def test_output_perturbation_on_dask(client, Est):
    X, y = _classification(20_000)
    kw = dict(epsilon=2.0, data_norm=1.0, solver="output_perturbation", random_state=1)
    if Est is DPLogisticRegression:
        kw["classes"] = [0, 1]
    else:
        y = X @ np.arange(1.0, 7.0) + 0.1 * np.random.default_rng(0).standard_normal(len(y))
    mem = Est(**kw).fit(X, y)
    dsk = Est(**kw).fit(da.from_array(X, chunks=(4_000, 6)), da.from_array(y, chunks=4_000))
    assert dsk.solver_ == "output_perturbation" and dsk.dp_event_ == mem.dp_event_
    assert abs(dsk.score(X, y) - mem.score(X, y)) <= 0.01


@pytest.mark.parametrize("Est", [DPLogisticRegression, DPHuberRegressor])
def test_phased_streams_partitions(client, Est):
    """phased on a Dask design: the phases stream the partitions in a public random order
    (one task per partition segment); the event is the in-memory fit's, and the accuracy
    over seeds matches the in-memory fit's within the seed-to-seed noise."""
    rng = np.random.default_rng(0)
    n, d = 40_000, 6
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    if Est is DPLogisticRegression:
        y = (X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0).astype(int)
        kw = dict(epsilon=1.0, alpha=1e-4, classes=[0, 1])
    else:
        y = X @ np.linspace(-1.0, 1.0, d) + 0.1 * rng.standard_normal(n)
        kw = dict(epsilon=2.0, alpha=1e-2)
    kw.update(data_norm=1.0, solver="phased")
    Xd, yd = da.from_array(X, chunks=(6_000, d)), da.from_array(y, chunks=6_000)
    mem, dsk = [], []
    for seed in range(4):
        a = Est(random_state=seed, **kw).fit(X, y)
        b = Est(random_state=seed, **kw).fit(Xd, yd)
        assert b.solver_ == "phased" and b.dp_event_ == a.dp_event_
        assert b.epsilon_ == a.epsilon_ and b.n_iter_ == a.n_iter_
        mem.append(a.score(X, y))
        dsk.append(b.score(X, y))
    spread = max(np.std(mem), np.std(dsk), 0.002)
    assert abs(np.mean(dsk) - np.mean(mem)) <= 3 * spread
    assert np.mean(dsk) > (0.85 if Est is DPLogisticRegression else 0.9)
    again = Est(random_state=0, **kw).fit(Xd, yd)
    np.testing.assert_array_equal(again.coef_, Est(random_state=0, **kw).fit(Xd, yd).coef_)


@pytest.mark.parametrize("secure_noise", [True, False])
def test_dpsgd_steps_reduce_over_partitions_to_the_in_memory_model(client, secure_noise):
    """dpsgd on a Dask design: the client draws the in-memory batches and noise, each
    partition sums the clipped gradients of its sampled rows, and the step is the in-memory
    one -- so the model is the in-memory model up to the rounding of the partition sums
    (exact noise: bit for bit here, the grid absorbing it), for the binary, multinomial and
    Huber losses, with the same event and work."""
    X, y = _classification(30_000)
    y3 = np.digitize(X[:, 1] * np.sqrt(6), [-0.4, 0.4])
    target = X @ np.arange(6.0) + 0.1 * np.random.default_rng(2).standard_normal(30_000)
    Xd = da.from_array(X, chunks=(7_000, 6))
    for make, labels in (
            (lambda: DPLogisticRegression(classes=[0, 1], alpha=1e-4), y),
            (lambda: DPLogisticRegression(classes=[0, 1, 2], alpha=1e-4), y3),
            (lambda: DPHuberRegressor(alpha=1e-3), target)):
        kw = dict(epsilon=1.0, data_norm=1.0, solver="dpsgd", batch_size=600, n_steps=60,
                  random_state=4, secure_noise=secure_noise)
        a = make().set_params(**kw).fit(X, labels)
        b = make().set_params(**kw).fit(Xd, da.from_array(labels, chunks=7_000))
        assert b.solver_ == "dpsgd" and b.dp_event_ == a.dp_event_ and b.n_iter_ == 60
        assert b.n_gradient_evals_ == a.n_gradient_evals_
        scale = np.abs(a.coef_).max()
        assert np.abs(b.coef_ - a.coef_).max() <= 1e-9 * scale
        if secure_noise:
            np.testing.assert_array_equal(b.coef_, a.coef_)
    assert a.score(X, target) > 0.9


def test_dpsgd_partitioned_batch_sum_sensitivity_on_adversarial_neighbours():
    """The sum a Dask dpsgd step releases (partition sums added in partition order; q = 1,
    so every row is in the batch): replacing one row by an adversarial one, rows on the clip
    bound, uneven and empty partitions, moves it by at most 2L -- the sensitivity the noise
    is calibrated for.  Huber with huge targets attains it (the test can fail); the
    multinomial loss's (d + 1) x K sums are bounded alike (Frobenius norm)."""
    import dask

    from skdp._losses import HuberLoss, LogisticLoss, MultinomialLoss
    from skdp._mechanisms import clip_and_augment
    from skdp._solvers._dask_objective import DaskDesign, partition_sum
    from skdp._solvers._dpsgd import _clip_bound, _partition_batch_sum

    rng = np.random.default_rng(3)
    n, d, R = 90, 4, float(np.sqrt(2.0))
    chunks = (0, 13, 40, 37)
    worst = {}
    multinomial = MultinomialLoss(n_classes=3)
    with dask.config.set(scheduler="synchronous"):
        for loss in (LogisticLoss(), HuberLoss(0.5), multinomial):
            K = 3 if loss is multinomial else 1
            L = float(loss.lipschitz(R))
            clip = _clip_bound(L, (d + 1) * K, n)
            worst[loss.loss_id] = 0.0
            for _ in range(20):
                X = clip_and_augment(rng.normal(size=(n, d)) * 10, R, True, 1.0)
                if loss is multinomial:
                    y = rng.integers(0, 3, size=n).astype(float)
                elif loss.loss_id == LogisticLoss().loss_id:
                    y = np.sign(rng.normal(size=n))
                else:
                    y = rng.normal(size=n) * 1e6
                X2, y2 = X.copy(), y.copy()
                j = rng.integers(n)
                X2[j] = -X[j]        # antipodal row, same target: Huber's terms flip sign
                if loss is multinomial:
                    y2[j] = (y[j] + 1) % 3      # and another class
                W = rng.normal(size=(d + 1, K)) * 10 ** rng.uniform(-3, 1)
                sums = []
                for Xs, ys in ((X, y), (X2, y2)):
                    design = DaskDesign(da.from_array(Xs, chunks=(chunks, (d + 1,))),
                                        da.from_array(ys, chunks=(chunks,)), raw_features=d)
                    every_row = [np.arange(m) for m in chunks]     # q = 1
                    s, batch = partition_sum(design, _partition_batch_sum, W,
                                             per_partition={"idx": every_row},
                                             loss_id=loss.loss_id, param=float(loss.param),
                                             clip=clip)
                    assert batch == n
                    sums.append(s)
                worst[loss.loss_id] = max(worst[loss.loss_id],
                                          np.linalg.norm(sums[0] - sums[1]) / (2 * L))
    assert all(w <= 1.0 for w in worst.values()), worst
    assert max(worst.values()) > 0.5 and worst[multinomial.loss_id] > 0.3, worst


@pytest.mark.parametrize("n, q", [(5000, 0.02), (40, 0.75)])
def test_dpsgd_client_batches_are_the_in_memory_batches(n, q):
    """The batches a Dask fit draws on its client (:class:`BatchDraws`: one byte a row,
    the permutation only for batches above n/2) are the in-memory loop's, draw for draw,
    chunk resets included -- for small batches (distinct uniform draws) and large ones
    (partial Fisher-Yates on the permutation) -- and they are Poisson(q): each row's
    frequency is q within 4.5 standard deviations."""
    from skdp._solvers._dpsgd import BatchDraws
    from skdp._solvers._dpsgd_kernel import _sample_batch

    mem_rng, dask_rng = np.random.default_rng(9), np.random.default_rng(9)
    draws = BatchDraws(n, q, dask_rng)
    hits, steps = np.zeros(n), 0
    for chunk in (300, 300, 400):          # a run in chunks of steps, as the exact noise
        idx, perm, stamp = np.empty(n, np.int64), np.arange(n), np.zeros(n, np.int64)
        draws.new_chunk()
        for t in range(steps + 1, steps + chunk + 1):
            B = _sample_batch(mem_rng, n, q, idx, perm, stamp, t)
            got = draws.draw()
            np.testing.assert_array_equal(got, idx[:B])
            hits[got] += 1
        steps += chunk
    assert not draws.seen.any()
    sd = np.sqrt(q * (1 - q) / steps)
    assert np.all(np.abs(hits / steps - q) <= 4.5 * sd)


def test_sampled_rows_reach_their_partitions_in_the_order_drawn():
    """Each partition gets its own sampled rows, as positions in it, in the order drawn
    (empty and uneven partitions included): the rows the in-memory step reads."""
    from skdp._solvers._dpsgd import partition_positions

    offsets = np.array([0, 5, 5, 12, 30], dtype=np.int64)      # an empty partition
    idx = np.array([13, 2, 29, 5, 0, 11, 20, 6])
    local = partition_positions(idx, offsets)
    assert [part.tolist() for part in local] == [[2, 0], [], [0, 6, 1], [1, 17, 8]]
    assert [p.size for p in partition_positions(idx[:0], offsets)] == [0, 0, 0, 0]


def test_huber_dataframe_fit(client):
    import pandas as pd

    rng = np.random.default_rng(1)
    X = rng.standard_normal((30_000, 4)) / 2.0
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.3 * rng.standard_normal(30_000)
    y[:300] = 1e6                                # outliers, clipped to y_bound on workers
    cols = ["a", "b", "c", "d"]
    frame = dd.from_pandas(pd.DataFrame(X, columns=cols), npartitions=5)
    target = dd.from_pandas(pd.Series(y), npartitions=5)
    kw = dict(epsilon=2.0, data_norm=1.5, y_bound=10.0, random_state=0)
    dsk = DPHuberRegressor(**kw).fit(frame, target)
    mem = DPHuberRegressor(**kw).fit(pd.DataFrame(X, columns=cols), y)
    assert list(dsk.feature_names_in_) == cols and dsk.dp_event_ == mem.dp_event_
    assert abs(dsk.score(pd.DataFrame(X[300:], columns=cols), y[300:])
               - mem.score(pd.DataFrame(X[300:], columns=cols), y[300:])) <= 0.01


def test_rows_stay_on_the_workers(client):
    """What the client receives during the fit: (p + 1)-vectors, p x p matrices and two
    booleans -- never rows."""
    X = da.random.RandomState(0).normal(size=(300_000, 5), chunks=(50_000, 5)) / 3.0
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    with received_sizes() as sizes:
        est = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1],
                                   random_state=0).fit(X, y)
    assert sizes and max(sizes) <= 6 * 6          # the data has 1.5e6 entries
    assert est.score(X[:20_000].compute(), y[:20_000].compute()) > 0.9


def test_ledger_records_the_dask_fit_once(client):
    X, y = _classification(8_000)
    ledger = PrivacyLedger(epsilon=5.0, delta=1e-5)
    est = DPLogisticRegression(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1],
                               random_state=0, privacy_ledger=ledger)
    est.fit(da.from_array(X, chunks=(2_000, 6)), da.from_array(y, chunks=2_000))
    assert len(ledger) == 1 and ledger.entries()[0].event == est.dp_event_


def test_bad_input_and_unsupported_solvers(client):
    X, y = _classification(4_000)
    Xd, yd = da.from_array(X, chunks=(1_000, 6)), da.from_array(y, chunks=1_000)
    cases = [
        (DPLogisticRegression(data_norm=1.0), "classes"),                 # label set
        (DPLogisticRegression(data_norm=None, classes=[0, 1]), "data_norm"),
        (DPLogisticRegression(data_norm=1.0, classes=[0, 1], solver="resque"),
         "cannot fit a Dask collection"),
        (DPLogisticRegression(data_norm=1.0, classes=[0, 2]), "not in classes"),
    ]
    for est, match in cases:
        with pytest.raises(ValueError, match=match):
            est.fit(Xd, yd)
        with pytest.raises(Exception):
            check_is_fitted(est)                    # no half-fitted model
    bad = X.copy()
    bad[5, 2] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        DPLogisticRegression(data_norm=1.0, classes=[0, 1]).fit(
            da.from_array(bad, chunks=(1_000, 6)), yd)
    for solver in ("spider", "rrpsgd", "zeroth_order"):
        est = DPNonconvexRegressor(data_norm=1.0, solver=solver, max_coef_norm=10.0)
        with pytest.raises(ValueError, match="cannot fit a Dask collection"):
            est.fit(Xd, yd.astype(float))
        with pytest.raises(Exception):
            check_is_fitted(est)
    with pytest.raises(ValueError, match="data_norm"):
        DPNonconvexRegressor(data_norm=None).fit(Xd, yd.astype(float))


@pytest.mark.parametrize("secure_noise", [True, False])
def test_nonconvex_default_dask_fit_matches_in_memory(client, secure_noise):
    """DPNonconvexRegressor's default (warm_gd: Huber objective perturbation, then noisy
    gradient steps on the Welsch loss) on partitions: same event, same noise, the same
    release up to the rounding of partitioned sums; gross outliers ignored alike."""
    rng = np.random.default_rng(5)
    n, d = 60_000, 6
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = X @ np.arange(1.0, 7.0) + 0.1 * rng.standard_normal(n)
    y[:6_000] = 25.0                                       # 10 % gross outliers
    kw = dict(epsilon=1.0, data_norm=1.0, y_bound=30.0, random_state=3,
              secure_noise=secure_noise)
    mem = DPNonconvexRegressor(**kw).fit(X, y)
    dsk = DPNonconvexRegressor(**kw).fit(da.from_array(X, chunks=(7_000, d)),
                                         da.from_array(y, chunks=7_000))
    assert dsk.solver_ == mem.solver_ == "warm_gd" and mem.n_iter_ > 0  # refinement ran
    assert dsk.dp_event_ == mem.dp_event_ and dsk.epsilon_ == mem.epsilon_ == 1.0
    np.testing.assert_allclose(dsk.coef_, mem.coef_, rtol=0, atol=1e-6)
    clean = slice(6_000, None)
    assert dsk.score(X[clean], y[clean]) > 0.95
    assert abs(dsk.score(X[clean], y[clean]) - mem.score(X[clean], y[clean])) <= 1e-6


def test_worker_killed_mid_fit(client):
    """Kill a worker while L-BFGS is running: Dask recomputes its partitions from the
    lineage and the release is the undisturbed one, or the fit raises; a release computed
    on part of the rows would differ."""
    # the rows are generated on the workers (a lineage Dask can replay), not sent from
    # the client
    d = 10
    gen = da.random.default_rng(2)
    Xd = gen.standard_normal((400_000, d), chunks=(25_000, d)) / np.sqrt(d)
    noise = gen.standard_normal(400_000, chunks=25_000)
    yd = (Xd @ np.random.default_rng(2).standard_normal(d) + 0.3 * noise > 0).astype(int)
    Xd, yd = client.persist([Xd, yd])             # a lost partition is recomputed
    kw = dict(epsilon=1.0, data_norm=1.0, classes=[0, 1], random_state=7)
    reference = DPLogisticRegression(**kw).fit(Xd, yd)
    outcome = {}

    def fit():
        try:
            outcome["model"] = DPLogisticRegression(**kw).fit(Xd, yd)
        except Exception as exc:                  # a clear error is acceptable
            outcome["error"] = exc

    pids = client.run(os.getpid)                  # worker address -> process id
    worker = threading.Thread(target=fit)
    worker.start()
    time.sleep(0.5)
    os.kill(pids[sorted(pids)[0]], signal.SIGKILL)  # the nanny starts a fresh worker
    worker.join(timeout=300)
    assert not worker.is_alive()
    if "model" in outcome:
        np.testing.assert_array_equal(outcome["model"].coef_, reference.coef_)
        assert outcome["model"].dp_event_ == reference.dp_event_
    else:
        assert isinstance(outcome["error"], Exception)
    client.wait_for_workers(2, timeout=60)


def test_the_objective_keeps_clip_factors_not_a_clipped_copy(client):
    """The default Dask fit keeps the user's rows and n clip factors on the workers (no
    clipped, augmented copy of the partitions), and its sums are bitwise the copy's."""
    from skdp._losses import LogisticLoss
    from skdp._solvers._dask_objective import DaskDesign, DaskObjective, clipped_design

    X, y = _classification()
    design = DaskDesign(da.from_array(X, chunks=(6_000, 6)).persist(),
                        da.from_array(np.where(y == 1, 1.0, -1.0), chunks=6_000).persist())
    R = float(np.hypot(1.0, 1.0))
    lazy = DaskObjective(design, LogisticLoss(), 1e-3, R, True, 1.0)
    copy = DaskObjective(clipped_design(design, R, True, 1.0), LogisticLoss(), 1e-3, R,
                         True, 1.0)
    assert lazy.design.scale is not None and lazy.design.X.shape == X.shape
    assert lazy.design.X.name == design.X.name           # the persisted rows, as given
    assert copy.design.X.shape == (X.shape[0], 7)
    W = np.random.default_rng(0).normal(size=(7, 1))
    v1, g1 = lazy.value_grad(W)
    v2, g2 = copy.value_grad(W)
    assert v1 == v2 and np.array_equal(g1, g2)
    np.testing.assert_allclose(lazy.hessian(W), copy.hessian(W), rtol=1e-12, atol=1e-15)
    sub = lazy.subsample(3)
    assert sub.design.scale is not None and sub.n == copy.subsample(3).n


def test_the_objective_on_csr_partitions_is_the_in_memory_sparse_objective(client):
    """CSR partitions (a private pipeline's basis, kept sparse on the workers): each pass
    is the in-memory sparse pass over a partition's rows, so the Dask objective equals the
    in-memory one on the same CSR rows within the sparse path's rounding allowance (which
    it reports), and equals the dense partitions' objective likewise; the Hessian and the
    warm start's subsample keep CSR."""
    import scipy.sparse as sp

    from skdp._losses import LogisticLoss
    from skdp._mechanisms._clipped_rows import ClippedRows
    from skdp._solvers._dask_objective import DaskDesign, DaskObjective
    from skdp._solvers._objective import Objective

    rng = np.random.default_rng(4)
    n, d = 20_000, 30
    dense = np.where(rng.random((n, d)) < 0.15, rng.standard_normal((n, d)), 0.0)
    dense[:10] *= 40.0                                # beyond the bound: clipped
    y = np.where(dense[:, :5].sum(axis=1) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    R = 2.0
    blocks = [sp.csr_matrix(dense[a:a + 7_000]) for a in range(0, n, 7_000)]
    csr = da.concatenate([da.from_delayed(dask_delayed(b), shape=b.shape, dtype=float,
                                          meta=sp.csr_matrix((0, d)))
                          for b in blocks], axis=0)
    y_d = da.from_array(y, chunks=(tuple(b.shape[0] for b in blocks),))
    lazy = DaskObjective(DaskDesign(csr.persist(), y_d.persist()), LogisticLoss(), 1e-3, R,
                         True, 1.0)
    assert lazy.sparse
    dense_obj = DaskObjective(DaskDesign(da.from_array(dense, chunks=(7_000, d)).persist(),
                                         y_d.persist()), LogisticLoss(), 1e-3, R, True, 1.0)
    assert not dense_obj.sparse
    memory = Objective(ClippedRows(sp.csr_matrix(dense), R, True, 1.0), y, LogisticLoss(),
                       1e-3, 1, R)
    W = rng.normal(size=(d + 1, 1))
    v1, g1 = lazy.value_grad(W)
    v2, g2 = memory.value_grad(W)
    v3, g3 = dense_obj.value_grad(W)
    allowance = lazy.rounding_allowance(W)
    assert allowance >= memory.rounding_allowance(W)        # it adds the partitions' term
    assert np.linalg.norm(g1 - g2) <= allowance
    assert np.linalg.norm(g1 - g3) <= allowance + dense_obj.rounding_allowance(W)
    assert abs(v1 - v2) <= 1e-12 * abs(v2)
    assert not np.array_equal(g1, np.zeros_like(g1))
    np.testing.assert_allclose(lazy.hessian(W), dense_obj.hessian(W), rtol=1e-10,
                               atol=1e-14)
    sub = lazy.subsample(3)
    assert sub.sparse and sub.n == dense_obj.subsample(3).n == -(-7_000 // 3) * 2 + \
        -(-6_000 // 3)
    vs, gs = sub.value_grad(W)
    vd, gd = dense_obj.subsample(3).value_grad(W)
    assert np.linalg.norm(gs - gd) <= sub.rounding_allowance(W) + \
        dense_obj.subsample(3).rounding_allowance(W)


def dask_delayed(value):
    import dask

    return dask.delayed(value)


@pytest.mark.parametrize("Est, released", [
    (DPHuberRegressor, dict(data_norm="auto", y_bound="auto")),
    (DPNonconvexRegressor, dict(data_norm=2.0, y_bound="auto")),
    (DPLogisticRegression, dict(data_norm="auto", classes=[0, 1])),
])
def test_auto_bounds_are_released_from_the_partitions(client, Est, released):
    """data_norm="auto" and y_bound="auto" on a Dask collection: the row norms and |y| are
    histogrammed on the workers and only the leaf counts reach the client; their sums are
    the collected columns' counts, so the release, the split, the event and (up to the
    partitioned sums' rounding) the model are the in-memory fit's."""
    from skdp._mechanisms._quantiles import LEAVES

    rng = np.random.default_rng(7)
    n = 12_000
    X = rng.standard_normal((n, 4)) * [1.0, 2.0, 0.5, 1.0]
    X[:10] *= 1e6                                  # huge rows: the top bins, then clipped
    signal = X[:, 0] - 0.5 * X[:, 1] + 0.5 * rng.standard_normal(n)
    y = (signal > 0).astype(int) if Est is DPLogisticRegression else 3.0 * signal
    kw = dict(epsilon=1.0, delta=1e-6, random_state=3, **released)
    mem = Est(**kw).fit(X, y)
    with received_sizes() as sizes:
        lazy = Est(**kw).fit(da.from_array(X, chunks=(3_000, 4)),
                             da.from_array(y, chunks=3_000))
    for name in ("data_norm", "y_bound"):
        if released.get(name) == "auto":
            assert getattr(lazy, name + "_") == getattr(mem, name + "_")
            assert 0.0 < getattr(mem, name + "_") < 100.0     # the huge rows did not set it
    assert lazy.budget_split_ == mem.budget_split_
    assert lazy.dp_event_ == mem.dp_event_ and lazy.epsilon_ == mem.epsilon_ <= 1.0
    assert lazy.privacy_guaranteed_ and lazy.solver_ == mem.solver_
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=1e-5, atol=1e-5)
    assert sizes and max(sizes) <= 2 * LEAVES < n      # counts, never a column of rows


def test_multinomial_dpsgd_reduces_over_partitions(client):
    """A multinomial model (its default, DP-SGD) on a Dask collection: class indices
    encoded on the workers, every step's (d + 1) x K clipped sum reduced over the
    partitions; the event and schedule are the in-memory fit's, the accuracy the same
    within the seed-to-seed spread, and the base-rate check's counts are taken per
    partition (integers: the collected rows' counts)."""
    rng = np.random.default_rng(2)
    n = 20_000
    X = rng.standard_normal((n, 4)) / 2
    y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] + 0.5 * rng.standard_normal((n, 3)),
                                           axis=1)]
    kw = dict(epsilon=1.0, data_norm=2.0, classes=["a", "b", "c"], batch_size=500,
              n_steps=80)
    Xd, yd = da.from_array(X, chunks=(5_000, 4)), da.from_array(y, chunks=5_000)
    mem, dsk = [], []
    for seed in range(3):
        a = DPLogisticRegression(random_state=seed, **kw).fit(X, y)
        b = DPLogisticRegression(random_state=seed, **kw).fit(Xd, yd)
        assert b.solver_ == a.solver_ == "dpsgd" and b.dp_event_ == a.dp_event_
        assert b.coef_.shape == a.coef_.shape == (3, 4) and list(b.classes_) == list("abc")
        assert b.epsilon_ == a.epsilon_ <= 1.0 and b.n_iter_ == 80
        mem.append(a.score(X, y))
        dsk.append(b.score(X, y))
    assert abs(np.mean(dsk) - np.mean(mem)) <= 3 * max(np.std(mem), np.std(dsk), 0.005)
    assert np.mean(dsk) > 0.6                                 # chance is 1/3
    with pytest.raises(ValueError, match="not in classes"):
        DPLogisticRegression(**kw).fit(Xd, da.from_array(np.where(y == "c", "d", y),
                                                         chunks=5_000))
    # phased streams the partitions as for a binary model; output perturbation's
    # minimiser has no Dask path: refused before any noise, nothing fitted
    kw = dict(epsilon=1.0, data_norm=2.0, classes=["a", "b", "c"], random_state=0)
    a = DPLogisticRegression(solver="phased", **kw).fit(X, y)
    b = DPLogisticRegression(solver="phased", **kw).fit(Xd, yd)
    assert b.dp_event_ == a.dp_event_ and abs(b.score(X, y) - a.score(X, y)) <= 0.01
    for extra in (dict(solver="output_perturbation"), dict(delta=0.0)):
        est = DPLogisticRegression(**kw, **extra)
        with pytest.raises(ValueError, match="does not fit the multinomial model on a Dask"):
            est.fit(Xd, yd)
        with pytest.raises(Exception):
            check_is_fitted(est)


def test_multinomial_base_rate_counts_on_partitions_are_the_in_memory_counts(client):
    from skdp._solvers._dask_objective import DaskDesign
    from skdp.linear_model._base_rate import _training_counts

    rng = np.random.default_rng(4)
    X = rng.standard_normal((3_001, 5))
    labels = rng.integers(0, 4, size=3_001).astype(float)
    coef, intercept = rng.standard_normal((4, 5)), rng.standard_normal(4)
    design = DaskDesign(da.from_array(X, chunks=(700, 5)), da.from_array(labels, chunks=700))
    on_workers = _training_counts(design, design.y, coef, intercept)
    np.testing.assert_array_equal(on_workers, _training_counts(X, labels, coef, intercept))
    assert on_workers[:4].sum() == 3_001 and 0 < on_workers[4] < 3_001


@pytest.mark.parametrize("solver", ["objective_perturbation", "output_perturbation"])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_long_row_is_clipped_on_dask_as_in_memory(solver, sparse):
    """Review finding on the fix that stores rows longer than 2^200 times the bound
    clipped: the Dask passes took the factors of such a design (1 for those rows) and
    multiplied the *raw* partition rows by them, so a row of norm 1e100 entered unclipped
    (output perturbation's coefficients ~4e6).  The partitions' factors are now the raw
    rows' own: the Dask fit is the in-memory fit, and the fit of the row clipped first."""
    import scipy.sparse as sp

    from skdp import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (400, 3)) / np.sqrt(3)
    y = (X[:, 0] + 0.1 * rng.standard_normal(400) > 0).astype(int)
    X[5] = [-1e100, 3e99, 0.0]
    kw = dict(data_norm=1.0, fit_intercept=False, classes=[0, 1], solver=solver,
              random_state=0)
    mem = DPLogisticRegression(**kw).fit(X, y)
    Xd = da.from_array(X, chunks=(100, 3))
    if sparse:
        Xd = Xd.map_blocks(sp.csr_matrix)
    lazy = DPLogisticRegression(**kw).fit(Xd, da.from_array(y, chunks=100))
    scale = np.abs(mem.coef_).max()
    assert scale < 100          # the long row's clipped contribution only
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=0, atol=1e-6 * scale)
