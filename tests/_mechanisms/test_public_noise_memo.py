"""The memo of placeholder draws (skdp._mechanisms._exact.public_noise_memo): the same
integers and source state as fresh draws, only inside its block, and a plan that is the
same with or without it."""

import contextlib
import warnings

import numpy as np
import pandas as pd

from skdp._mechanisms import _exact
from skdp._mechanisms._exact import discrete_gaussian_noise, public_noise_memo


def _source(seed):
    return _exact.new_word_source(seed)


def test_memo_gives_the_fresh_integers_and_state():
    for size in (100, 5000):    # the Python sampler and the chunked kernel
        fresh_src = _source(3)
        fresh = [discrete_gaussian_noise(fresh_src, 1 << 20, size) for _ in range(2)]
        with public_noise_memo():
            first_src, second_src = _source(3), _source(3)
            first = [discrete_gaussian_noise(first_src, 1 << 20, size) for _ in range(2)]
            second = [discrete_gaussian_noise(second_src, 1 << 20, size) for _ in range(2)]
        for a, b, c in zip(fresh, first, second):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(fresh_src, second_src)
        assert not np.array_equal(fresh[0], fresh[1])    # the state did advance


def test_memo_only_inside_its_block(monkeypatch):
    calls = []
    original = _exact._draw_fresh
    monkeypatch.setattr(_exact, "_draw_fresh",
                        lambda *a: calls.append(1) or original(*a))
    for _ in range(2):
        discrete_gaussian_noise(_source(5), 1 << 20, 50)
    assert len(calls) == 2      # outside: every request samples
    with public_noise_memo():
        for _ in range(2):
            discrete_gaussian_noise(_source(5), 1 << 20, 50)
    assert len(calls) == 3
    assert _exact._PUBLIC_DRAWS.get() is None


def test_pipeline_fit_is_the_same_without_the_memo(monkeypatch):
    from skdp import DPLogisticRegression, make_private_pipeline

    r = np.random.default_rng(0)
    n = 2000
    X = pd.DataFrame({"a": r.normal(size=n), "b": r.uniform(0, 9, size=n),
                      "c": r.choice(["x", "y"], size=n).astype(object)})
    y = (X["a"] + r.normal(size=n) > 0).astype(int).to_numpy()

    def fit(eps):
        pipe = make_private_pipeline(DPLogisticRegression(classes=[0, 1]), epsilon=eps,
                                     delta=1e-6, numeric=["a", "b"], categorical=["c"],
                                     random_state=7)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pipe.fit(X, y)

    from skdp import _plan

    _plan._PROBES.clear()
    with_memo = fit(1.2345)
    monkeypatch.setattr(_exact, "public_noise_memo", contextlib.nullcontext)
    _plan._PROBES.clear()       # the placeholder fits run again, without the memo
    without = fit(1.2345)
    np.testing.assert_array_equal(with_memo[-1].coef_, without[-1].coef_)
    assert str(with_memo.privacy_plan_) == str(without.privacy_plan_)
