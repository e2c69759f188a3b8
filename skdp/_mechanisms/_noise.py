"""Noise samplers of the output mechanisms.

Both draw from a ``numpy.random.Generator`` passed in by the caller (seeded from the
estimator's ``random_state``), serially, so the same seed gives the same noise bit for bit.
They use floating-point samplers that are **not hardened against floating-point attacks**
(Mironov, CCS 2012): an adversary who sees the exact bits of the output may learn more
than epsilon predicts.  This is a documented limitation shared by all mainstream DP
libraries.
"""

import numpy as np

__all__ = ["gaussian_noise", "norm_laplace_noise"]


def gaussian_noise(rng, shape, sigma):
    """``N(0, sigma^2 I)`` of the given shape."""
    return sigma * rng.standard_normal(shape)


def norm_laplace_noise(rng, shape, scale):
    """Sample the d-dimensional norm-Laplace law with density ``p(z) ∝ exp(-||z||_2 / scale)``.

    Exact sampler: in polar coordinates the density of the radius is
    ``∝ r^(d-1) exp(-r/scale)`` (the surface of the sphere grows like ``r^(d-1)``), i.e.
    ``r ~ Gamma(shape=d, scale=scale)``, independent of a uniform direction ``u = g/||g||``,
    ``g ~ N(0, I_d)``.  With ``scale = Delta/epsilon`` this is epsilon-DP for an L2
    sensitivity ``Delta``: ``p(z - a)/p(z - b) <= exp(||a - b||/scale) <= e^epsilon``.
    Per-coordinate Laplace would need the L1 sensitivity (up to ``sqrt(d) Delta``) instead.
    ``E||z||^2 = d (d + 1) scale^2``.
    """
    d = int(np.prod(shape))
    g = rng.standard_normal(d)
    nrm = np.linalg.norm(g)
    while nrm == 0.0:  # probability zero; keeps the direction well defined
        g = rng.standard_normal(d)
        nrm = np.linalg.norm(g)
    radius = rng.gamma(shape=d, scale=scale)
    return (radius * g / nrm).reshape(shape)
