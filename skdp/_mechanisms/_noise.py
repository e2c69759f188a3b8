"""Noise of the output mechanisms: the float samplers and the floating-point-safe releases.

``gaussian_noise`` and ``norm_laplace_noise`` draw from a ``numpy.random.Generator`` passed
in by the caller (seeded from the estimator's ``random_state``), serially, so the same seed
gives the same noise bit for bit.  They are floating-point samplers, and a float sum
``v + noise`` is **not** private as computed (module docstring of
:mod:`skdp._mechanisms._exact`): they serve ``secure_noise=False`` (every solver has an
exact path, the default).

:func:`release_gaussian` and :func:`release_laplace` are the release sites: with a ChaCha20
``source`` (``secure_noise=True``) they return ``gamma (rint(v/gamma) + Z)`` with ``Z`` an exact
discrete Gaussian / Laplace, calibrated so that the release is at least as private as the
continuous mechanism the fit records (``N(0, sigma^2)`` on the L2 sensitivity; ``epsilon``
for the pure release); with ``source=None`` they add the float noise, bitwise as before.
"""

import math

import numpy as np

from ._exact import exact_gaussian_noise, exact_laplace_noise, release_on_grid

__all__ = ["gaussian_noise", "norm_laplace_noise", "release_gaussian", "release_laplace"]


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


def release_gaussian(values, sigma, sensitivity, rng, source=None, bound=None):
    """``(released, noise_std)``: ``values`` plus Gaussian noise of std ``sigma``.

    ``source=None``: ``values + sigma N(0, I)`` in float (``noise_std = sigma``).  A ChaCha20
    ``source``: the exact grid release of :func:`skdp._mechanisms._exact.gaussian_grid`, whose
    dominating continuous Gaussian has a noise multiplier at least ``sigma/sensitivity`` --
    so the event ``gaussian_event(sigma, sensitivity)`` the caller records stays valid
    (``noise_std = s gamma``, 0.1 % above ``sigma``).  ``bound``: a public bound on
    ``|values|`` that sets how coarse the grid must be (values beyond ``2^50`` grid steps
    are clamped, a 1-Lipschitz map that adds no sensitivity).
    """
    values = np.asarray(values, dtype=np.float64)
    if source is None:
        return values + gaussian_noise(rng, values.shape, sigma), float(sigma)
    gamma, z, noise_std = exact_gaussian_noise(source, sigma, sensitivity, values.size, bound)
    return release_on_grid(values, gamma, z).reshape(values.shape), noise_std


def release_laplace(values, sensitivity, epsilon, rng, source=None, bound=None):
    """``(released, noise_scale)``: an ``epsilon``-DP release of ``values`` whose L2
    sensitivity is ``sensitivity``.

    ``source=None``: norm-Laplace noise of scale ``sensitivity/epsilon`` (float).  A ChaCha20
    ``source``: per-coordinate exact discrete Laplace on a grid
    (:func:`skdp._mechanisms._exact.laplace_grid`) for the L1 sensitivity ``sqrt(p)
    sensitivity`` -- exactly ``epsilon``-DP with rounding included; its standard deviation is
    ``sqrt(2p/(p+1))`` (at most 1.41x) that of the norm-Laplace noise.  ``noise_scale`` is the
    Laplace scale in output units.  ``bound``: as in :func:`release_gaussian`.
    """
    values = np.asarray(values, dtype=np.float64)
    if source is None:
        scale = float(sensitivity) / float(epsilon)
        return values + norm_laplace_noise(rng, values.shape, scale), scale
    p = values.size
    gamma, z, scale = exact_laplace_noise(source, epsilon, math.sqrt(p) * float(sensitivity), p,
                                          bound)
    return release_on_grid(values, gamma, z).reshape(values.shape), scale
