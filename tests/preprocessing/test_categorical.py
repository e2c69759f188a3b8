"""DPOneHotEncoder: public lists cost nothing, discovery releases only frequent values, the
threshold's delta is accounted, and no input can break the output bound."""

import math

import numpy as np
import pytest

from skdp.accounting import DeltaDpEvent, get_delta, get_epsilon
from skdp.preprocessing import DPOneHotEncoder
from skdp.preprocessing._categorical import discovery_threshold


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2]).astype(object)
    b = rng.choice(["x", "y"], n).astype(object)
    b[::100] = None
    return np.column_stack([a, b])


def test_discovery_keeps_frequent_values_and_maps_the_rest():
    X = _data()
    X[0, 0] = "secret-once"
    enc = DPOneHotEncoder(epsilon=1.0, random_state=0).fit(X)
    assert enc.categories_ == [["blue", "green", "red"], ["x", "y"]]
    Z = enc.transform([["secret-once", None], ["", "x"], [float("nan"), "never seen"]])
    assert Z.tolist() == [[0, 0, 0, 1, 0, 0, 0, 0, 1], [0, 0, 0, 1, 0, 1, 0, 0, 0],
                          [0, 0, 0, 0, 1, 0, 0, 1, 0]]
    assert enc.output_norm_bound_ == math.sqrt(2)
    np.testing.assert_array_equal(np.linalg.norm(Z, axis=1), math.sqrt(2))


def test_threshold_delta_is_accounted():
    enc = DPOneHotEncoder(epsilon=1.0, delta=1e-6, random_state=0).fit(_data())
    parts = enc.dp_event_.events
    assert isinstance(parts[1], DeltaDpEvent) and parts[1].delta == pytest.approx(5e-7)
    assert enc.epsilon_ <= 1.0
    # the delta of the threshold is there at every epsilon
    assert get_delta(enc.dp_event_, 50.0) >= 5e-7
    # tau makes 2 d exp(-(tau - 1)^2 / (2 sigma^2)) = delta_T
    tau = discovery_threshold(enc.noise_scale_, 2, 5e-7)
    assert enc.threshold_ == tau
    assert 2 * 2 * math.exp(-(tau - 1) ** 2 / (2 * enc.noise_scale_ ** 2)) == \
        pytest.approx(5e-7)


def test_public_categories_cost_nothing():
    enc = DPOneHotEncoder(categories=[["red", "green", "blue"], ["x", "y"]]).fit(_data())
    assert enc.epsilon_ == 0.0 and get_epsilon(enc.dp_event_, 1e-9) == 0.0
    assert enc.categories_ == [["blue", "green", "red"], ["x", "y"]]


@pytest.mark.parametrize("replacement", ["a brand new string", "", None, float("nan"), 1e300])
def test_public_attributes_unchanged_on_neighbours(replacement):
    X = _data()
    ref = DPOneHotEncoder(epsilon=0.5, random_state=0).fit(X)
    X2 = X.copy()
    X2[5, :] = replacement
    other = DPOneHotEncoder(epsilon=0.5, random_state=0).fit(X2)
    for name in ("output_norm_bound_", "threshold_", "epsilon_", "delta_", "dp_event_",
                 "noise_scale_", "sensitivity_", "categories_"):
        assert getattr(other, name) == getattr(ref, name), name


def test_a_value_of_count_one_is_not_released():
    """Over many seeds a value that occurs once never passes the threshold (its chance is
    below delta)."""
    X = _data(500)
    X[0, 0] = "unique"
    for seed in range(30):
        enc = DPOneHotEncoder(epsilon=2.0, random_state=seed).fit(X)
        assert "unique" not in enc.categories_[0]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="0 sample"):
        DPOneHotEncoder().fit(np.empty((0, 2), dtype=object))
    with pytest.raises(ValueError, match="lists for"):
        DPOneHotEncoder(categories=[["a"]]).fit(_data())
    enc = DPOneHotEncoder(random_state=0).fit(_data())
    with pytest.raises(ValueError, match="features"):
        enc.transform([["red"]])


def test_without_pandas_the_same_release(monkeypatch):
    """pandas is optional: the dict counting and coding give the same categories and
    output as pandas' hash tables."""
    X = _data()
    ref = DPOneHotEncoder(epsilon=1.0, random_state=0).fit(X)
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)
    enc = DPOneHotEncoder(epsilon=1.0, random_state=0).fit(X)
    assert enc.categories_ == ref.categories_
    rows = np.array([["red", None], ["unseen", "x"], [float("nan"), "y"]], dtype=object)
    np.testing.assert_array_equal(enc.transform(rows), ref.transform(rows))


def _discovery_audit(monkeypatch, under_thresholded, runs=300):
    """Neighbours that differ by one row holding a value seen nowhere else: the statistic
    is whether that value is released (the event the threshold's delta covers)."""
    from skdp.audit import epsilon_lower_bound
    from skdp.preprocessing import _categorical

    if under_thresholded:
        monkeypatch.setattr(_categorical, "discovery_threshold",
                            lambda sigma, d, delta_t: 1.0 + 0.1 * sigma)
    base = np.array([["a"]] * 400 + [["b"]] * 400, dtype=object)
    other = base.copy()
    other[0, 0] = "only-here"

    def released(X, seed0):
        return np.array([float("only-here" in DPOneHotEncoder(
            epsilon=1.0, delta=1e-6, random_state=seed0 + i).fit(X).categories_[0])
            for i in range(runs)])

    return epsilon_lower_bound(released(base, 0), released(other, 10 ** 6), delta=1e-6,
                               random_state=0)


@pytest.mark.parametrize("under_thresholded", [False, True])
def test_audit_catches_a_threshold_that_ignores_delta(monkeypatch, under_thresholded):
    res = _discovery_audit(monkeypatch, under_thresholded)
    if under_thresholded:
        assert res.epsilon_lower_bound > 1.0, res
    else:
        assert res.epsilon_lower_bound <= 1.0, res
