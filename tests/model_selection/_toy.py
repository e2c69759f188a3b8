"""Tiny DP estimators for the model-selection tests (fast, with exact, known events)."""

import functools

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin

from skdp.accounting import calibrate_gaussian_sigma, gaussian_event, pure_dp_event


@functools.lru_cache(maxsize=None)
def _sigma(epsilon, delta, sensitivity):
    return calibrate_gaussian_sigma(epsilon, delta, sensitivity)


def _release(value, sensitivity, epsilon, delta, rng, noise_factor=1.0):
    """value + noise calibrated to (epsilon, delta) at the given replace-one sensitivity."""
    if delta > 0:
        sigma = _sigma(float(epsilon), float(delta), float(sensitivity))
        noise = rng.normal(0.0, sigma, size=np.shape(value))
        event = gaussian_event(sigma, sensitivity)
    else:
        noise = rng.laplace(0.0, sensitivity / epsilon, size=np.shape(value))
        event = pure_dp_event(epsilon)
    return value + noise_factor * noise, event


class NoisyMeanClassifier(ClassifierMixin, BaseEstimator):
    """Always predicts ``label``; ``fit`` releases the mean of ``y`` clipped to [0, 1] with
    noise calibrated to its replace-one sensitivity ``1/n`` (the released "model")."""

    def __init__(self, label=0, epsilon=1.0, delta=1e-6, random_state=None):
        self.label = label
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state

    def fit(self, X, y):
        y = np.clip(np.asarray(y, dtype=float), 0.0, 1.0)
        n = y.shape[0]
        rng = np.random.default_rng(self.random_state)
        coef, event = _release(np.array([y.mean()]), 1.0 / n, self.epsilon, self.delta, rng)
        self.coef_ = coef
        self.classes_ = np.array([0, 1])
        self.dp_event_ = event
        self.privacy_guaranteed_ = True
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        return np.full(np.asarray(X).shape[0], self.label)


class NoisyCenterer(TransformerMixin, BaseEstimator):
    """Subtracts a DP mean: rows clipped to ``data_norm``, mean released with Gaussian noise
    (replace-one sensitivity ``2 data_norm / n``)."""

    def __init__(self, epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.random_state = random_state

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=float)
        norms = np.maximum(np.linalg.norm(X, axis=1) / self.data_norm, 1.0)
        Xc = X / norms[:, None]
        rng = np.random.default_rng(self.random_state)
        self.mean_, self.dp_event_ = _release(
            Xc.mean(axis=0), 2.0 * self.data_norm / X.shape[0], self.epsilon, self.delta, rng
        )
        self.privacy_guaranteed_ = True
        return self

    def transform(self, X):
        return np.asarray(X, dtype=float) - self.mean_


class LeakyClassifier(NoisyMeanClassifier):
    """A *buggy* DP estimator: when the labels are skewed it halves its noise (its noise
    level, hence its event, depends on the data)."""

    def fit(self, X, y):
        super().fit(X, y)
        if float(np.mean(np.asarray(y, dtype=float))) > 0.6:
            z = self.dp_event_.noise_multiplier
            self.dp_event_ = type(self.dp_event_)(z / 2.0)
        return self
