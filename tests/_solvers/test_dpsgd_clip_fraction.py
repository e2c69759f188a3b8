"""dpsgd's per-example clip below the Lipschitz bound (``clip_fraction``): noise and
sensitivity scale with the clip, a one-step release moves by at most ``2 c L`` between
adversarial neighbours, rows classified right (and every row at W = 0) are left unclipped
at ``c = 1/2`` for the logistic loss, and the fit plan sets it for the logistic and
multinomial losses (not Huber)."""

import numpy as np
import pytest

import skdp._solvers._dpsgd as dpsgd
from skdp import DPLogisticRegression
from skdp._losses import HuberLoss, LogisticLoss, MultinomialLoss
from skdp._mechanisms import clip_and_augment
from skdp._solvers._dpsgd import STEP_CAP_FACTOR, solve_dpsgd
from skdp.linear_model._auto import DPSGD_CLIP_FRACTION, resolve_fit_plan


@pytest.fixture
def noise_multiplier(monkeypatch):
    def set_value(z):
        monkeypatch.setattr(dpsgd, "_noise_multiplier", lambda *args: float(z))
    return set_value


def _rows(n=40, d=3, seed=0, C=2.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= (0.99 * np.sqrt(C * C - 1.0) / np.linalg.norm(X, axis=1))[:, None]  # on the bound
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return X, y


def _one_full_step(X, y, c, C=2.0, alpha=0.5):
    """W_1 of one noise-free full-batch step (q = 1): -eta (s/m + 0) from W_0 = 0."""
    return solve_dpsgd(X, y, LogisticLoss(), epsilon=1.0, delta=1e-5, alpha=alpha,
                       data_norm=C, rng=np.random.default_rng(0), batch_size=X.shape[0],
                       n_steps=1, clip_fraction=c, tail_average=0.0)


@pytest.mark.parametrize("c", [1.0, 0.5, 0.2])
def test_noise_and_sensitivity_scale_with_the_clip(c):
    X, y = _rows(n=200)
    ref = solve_dpsgd(X, y, LogisticLoss(), epsilon=1.0, delta=1e-5, alpha=0.1,
                      data_norm=2.0, rng=np.random.default_rng(1), batch_size=20,
                      n_steps=30)
    res = solve_dpsgd(X, y, LogisticLoss(), epsilon=1.0, delta=1e-5, alpha=0.1,
                      data_norm=2.0, rng=np.random.default_rng(1), batch_size=20,
                      n_steps=30, clip_fraction=c)
    L = LogisticLoss().lipschitz(2.0)        # data_norm bounds the augmented row here
    assert res.dp_event == ref.dp_event                       # same z, same event
    assert res.details["noise_multiplier"] == ref.details["noise_multiplier"]
    assert res.noise_scale == pytest.approx(c * ref.noise_scale, rel=1e-12)
    assert ref.sensitivity == pytest.approx(2.0 * L, rel=1e-12)
    assert res.sensitivity == pytest.approx(2.0 * c * L, rel=1e-12)
    assert res.details["clip_bound"] <= c * ref.details["lipschitz"]
    assert res.details["clip_fraction"] == c


def test_rows_at_w0_are_not_clipped_at_half(noise_multiplier):
    """At W = 0 every logistic gradient is -y x/2, of norm ||x||/2 <= L/2: the clip at
    L/2 changes nothing (a clip at L/4 does)."""
    noise_multiplier(0.0)
    X, y = _rows()
    full, half, quarter = (_one_full_step(X, y, c) for c in (1.0, 0.5, 0.25))
    np.testing.assert_allclose(half.coef, full.coef, rtol=1e-12)
    assert not np.allclose(quarter.coef, full.coef)
    # the quarter clip by hand: contributions -y x/2 scaled to norm <= L/4
    Xa = clip_and_augment(X, 2.0, True, 1.0)
    g = -(y[:, None] * Xa) / 2.0
    L = float(LogisticLoss().lipschitz(2.0))
    limit = quarter.details["clip_bound"]
    assert limit <= L / 4
    norms = np.linalg.norm(g, axis=1)
    g_clipped = g * np.minimum(1.0, limit / norms)[:, None]
    eta = min(1.0 / 0.5, STEP_CAP_FACTOR / (quarter.details["smoothness"] + 0.5))
    W = -eta * g_clipped.sum(axis=0) / X.shape[0]
    np.testing.assert_allclose(np.r_[quarter.coef.ravel(), quarter.intercept], W,
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("c", [1.0, 0.5, 0.25])
def test_one_step_moves_at_most_2cL_between_adversarial_neighbours(c, noise_multiplier):
    """Flip one row's label: at W = 0 its gradient ``-y [x, 1]/2`` turns into its
    antipode, a move of ``||[x, 1]|| ~ 0.99 L`` before clipping.  The released sum moves by
    at most the sensitivity ``2 c L``; at ``c = 1/4`` the clip binds on both rows and the
    bound is attained."""
    noise_multiplier(0.0)
    X, y = _rows(n=30)
    y2 = y.copy()
    y2[0] = -y[0]
    a, b = _one_full_step(X, y, c), _one_full_step(X, y2, c)
    eta = min(1.0 / 0.5, STEP_CAP_FACTOR / (a.details["smoothness"] + 0.5))
    moved = np.linalg.norm(np.r_[a.coef.ravel(), a.intercept]
                           - np.r_[b.coef.ravel(), b.intercept]) * X.shape[0] / eta
    assert moved <= a.sensitivity * (1 + 1e-9)
    unclipped = np.hypot(np.linalg.norm(X[0]), 1.0)
    if c >= 0.5:
        assert moved == pytest.approx(unclipped, rel=1e-9)
    else:
        assert moved < unclipped and moved >= 0.99 * a.sensitivity


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5, float("nan")])
def test_clip_fraction_out_of_range_refused(bad):
    X, y = _rows()
    with pytest.raises(ValueError, match="clip_fraction"):
        solve_dpsgd(X, y, LogisticLoss(), epsilon=1.0, delta=1e-5, alpha=0.1,
                    data_norm=2.0, rng=np.random.default_rng(0), batch_size=20,
                    clip_fraction=bad)


@pytest.mark.parametrize("loss, K, expected", [(LogisticLoss(), 1, 0.5),
                                               (MultinomialLoss(3), 3, 0.5),
                                               (HuberLoss(0.5), 1, None)])
def test_plan_sets_the_clip_for_the_classification_losses(loss, K, expected):
    est = DPLogisticRegression(solver="dpsgd", data_norm=1.0, classes=[0, 1])
    plan = resolve_fit_plan(est, n_samples=5000, n_features=4, loss=loss, n_outputs=K,
                            row_bound=np.sqrt(2.0))
    assert plan.options.get("clip_fraction") == expected
    if expected is not None:
        assert expected == DPSGD_CLIP_FRACTION[loss.loss_id]


def test_estimator_reports_the_clip_and_its_planned_event():
    from skdp.linear_model._base import planned_dp_event

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)) / 4
    y = (X[:, 0] + 0.02 * rng.normal(size=3000) > 0).astype(int)
    est = DPLogisticRegression(solver="dpsgd", data_norm=1.0, classes=[0, 1], epsilon=1.0,
                               random_state=0).fit(X, y)
    assert est.solver_params_["clip_fraction"] == 0.5
    planned = planned_dp_event(DPLogisticRegression(solver="dpsgd", data_norm=1.0,
                                                    classes=[0, 1], epsilon=1.0), 3000, 4)
    assert planned == est.dp_event_
    assert est.score(X, y) > 0.8


def test_multinomial_rows_with_half_on_their_class_are_not_clipped(noise_multiplier):
    """||p - e_y|| <= sqrt(2) (1 - p_y): a row with p_y >= 1/2 has a gradient of norm
    <= ||x|| / sqrt(2) = L/2 (L = sqrt(2) R, rows of norm R = 1 here).  On the kernel's
    clipped sum at a W that gives every row p_y >= 1/2, the clip at L/2 changes nothing
    (one at L/8 does)."""
    from skdp._mechanisms._clipping import row_norms
    from skdp._solvers._dpsgd_kernel import _clipped_batch_gradient

    rng = np.random.default_rng(3)
    K, d = 3, 4
    X = rng.normal(size=(60, d))
    X /= np.linalg.norm(X, axis=1)[:, None]
    W = rng.normal(size=(d, K)) * 3.0
    y = np.argmax(X @ W, axis=1).astype(float)
    Z = X @ W
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    keep = P[np.arange(60), y.astype(int)] >= 0.5
    X, y = np.ascontiguousarray(X[keep]), y[keep]
    assert X.shape[0] >= 20
    loss = MultinomialLoss(K)
    L = float(loss.lipschitz(1.0))
    xnorm = np.empty(X.shape[0])
    row_norms(X, xnorm)
    idx = np.arange(X.shape[0], dtype=np.int64)

    def clipped_sum(clip):
        out = np.empty((d, K))
        _clipped_batch_gradient(X, y, np.ascontiguousarray(W), idx, idx.shape[0],
                                int(loss.loss_id), float(loss.param), clip, xnorm, out,
                                np.empty(K), np.empty(K))
        return out

    np.testing.assert_allclose(clipped_sum(L / 2), clipped_sum(L), rtol=1e-12)
    assert not np.allclose(clipped_sum(L / 8), clipped_sum(L))
