"""Nonsmooth losses (capped absolute, absolute, truncated squared) and user losses:
values, subgradients, Lipschitz constants in the prediction, ids and dispatch."""

import math

import numpy as np
import pytest

from skdp._losses import CAUCHY, TUKEY, WELSCH, CauchyLoss, TukeyLoss, WelschLoss
from skdp._losses._kernels import (
    ABSOLUTE,
    CAPPED_ABSOLUTE,
    TRUNCATED_SQUARED,
    margin_derivatives,
    robust_derivatives,
)
from skdp._losses._nonsmooth import (
    NONSMOOTH_LOSSES,
    AbsoluteLoss,
    CappedAbsoluteLoss,
    TruncatedSquaredLoss,
    UserLoss,
    prediction_lipschitz,
)

TAU = 0.7
R = np.linspace(-3.0, 3.0, 6001)


def _closed_forms(name, r, tau):
    a = np.abs(r)
    if name == "capped_absolute":
        return np.minimum(a, tau), np.where(a < tau, np.sign(r), 0.0)
    if name == "absolute":
        return a, np.sign(r)
    return np.minimum(r * r, tau * tau), np.where(a < tau, 2.0 * r, 0.0)


def test_ids_are_new_and_existing_ids_unchanged():
    assert (TUKEY, WELSCH, CAUCHY) == (3, 4, 5)
    assert len({CAPPED_ABSOLUTE, ABSOLUTE, TRUNCATED_SQUARED, 0, 1, 2, 3, 4, 5}) == 9
    assert {k: v().loss_id for k, v in NONSMOOTH_LOSSES.items()} == {
        "capped_absolute": CAPPED_ABSOLUTE, "absolute": ABSOLUTE,
        "truncated_squared": TRUNCATED_SQUARED}


@pytest.mark.parametrize("name", sorted(NONSMOOTH_LOSSES))
def test_values_and_subgradients(name):
    loss = NONSMOOTH_LOSSES[name](TAU)
    out = np.empty((R.size, 4))
    robust_derivatives(R, loss.loss_id, loss.param, out)
    v, g = _closed_forms(name, R, TAU)
    np.testing.assert_allclose(out[:, 0], v, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(out[:, 1], g, rtol=1e-15, atol=1e-15)
    assert np.all(out[:, 2:] == 0.0)
    # the margin pass of the linear models dispatches them too (used by solver="dpsgd")
    G = np.empty((R.size, 1))
    total = margin_derivatives(R[:, None], np.zeros(R.size), loss.loss_id, loss.param, G)
    np.testing.assert_allclose(G[:, 0], g, atol=1e-15)
    assert math.isclose(total, v.sum(), rel_tol=1e-12)


@pytest.mark.parametrize("loss", [CappedAbsoluteLoss(TAU), AbsoluteLoss(),
                                  TruncatedSquaredLoss(TAU), TukeyLoss(1.3), WelschLoss(1.3),
                                  CauchyLoss(1.3)])
def test_prediction_lipschitz_is_sharp(loss):
    """max |l(r) - l(r')|/|r - r'| on a fine grid is <= Lip_l and attains it (to 0.5 %)."""
    out = np.empty((R.size, 4))
    robust_derivatives(R, loss.loss_id, loss.param, out)
    slopes = np.abs(np.diff(out[:, 0])) / np.diff(R)
    lip = prediction_lipschitz(loss)
    assert slopes.max() <= lip * (1 + 1e-9)
    assert slopes.max() >= 0.995 * lip
    assert loss.lipschitz(2.5) == pytest.approx(2.5 * lip, rel=1e-15)


def test_constants_and_bounds():
    assert CappedAbsoluteLoss(TAU).sup_loss_at_zero() == TAU
    assert TruncatedSquaredLoss(TAU).sup_loss_at_zero() == pytest.approx(TAU * TAU)
    assert AbsoluteLoss().sup_loss_at_zero() == math.inf
    assert AbsoluteLoss().sup_loss_at_zero(3.0) == 3.0
    assert TruncatedSquaredLoss(TAU).prediction_lipschitz() == 2 * TAU
    for cls in NONSMOOTH_LOSSES.values():
        assert cls(TAU).smoothness(1.0) == math.inf
        assert not hasattr(cls(TAU), "hessian_lipschitz")  # solver='spider' refuses them


def test_user_loss_spec():
    def f(z, y):
        return abs(z - y)

    spec = UserLoss(f, 2.0)
    assert spec.lipschitz(3.0) == 6.0 and spec.loss_id < 0
    assert prediction_lipschitz(spec) == 2.0
    with pytest.raises(ValueError, match="Lipschitz"):
        prediction_lipschitz(object())


def test_dpsgd_kernel_uses_the_subgradient():
    """The (cached) dpsgd kernel dispatches the new ids to the subgradient.  Also catches a
    stale numba cache of skdp/_solvers/_dpsgd_kernel.py compiled before the ids existed
    (numba's cache key is the calling file's content, not its callees')."""
    from skdp._solvers._dpsgd_kernel import _clipped_batch_gradient

    X = np.array([[1.0, 0.0]])
    W = np.zeros((2, 1))
    idx = np.zeros(1, dtype=np.int64)
    out, z, g = np.zeros((2, 1)), np.zeros(1), np.zeros(1)
    for loss_id, y, expected in ((CAPPED_ABSOLUTE, -0.5, 1.0), (CAPPED_ABSOLUTE, -2.0, 0.0),
                                 (ABSOLUTE, 2.0, -1.0), (TRUNCATED_SQUARED, -0.25, 0.5)):
        _clipped_batch_gradient(X, np.array([y]), W, idx, 1, loss_id, TAU, 10.0,
                                np.ones(1), out, z, g)
        assert out[0, 0] == pytest.approx(expected, abs=1e-15), loss_id
