"""
The floating-point precision attack, and the exact noise that stops it
======================================================================

A DP guarantee is proved for real numbers, but a fit releases float64 numbers.  Here two
neighbouring datasets differ in one row; on ``D0`` the noise-free coefficient is exactly
0, on ``D1`` it is ``W1 = -0.0198``.  With float noise the released value on ``D1`` is the
float sum ``W1 + noise``, which is *exact* near 0 (Sterbenz's lemma) and therefore a
multiple of ``ulp(W1)/2``; on ``D0`` it is the raw noise, whose low bits are free.  So the
event "small and not a multiple of ``ulp(W1)/2``" only ever happens on ``D0``: it reveals
the dataset with probability about 1 %, whatever epsilon says.

skdp's default (``secure_noise="auto"``) releases ``gamma (rint(w/gamma) + Z)`` with ``Z``
an exact discrete Gaussian on a public grid ``gamma``: every release is a multiple of
``gamma``, and the event has no bits to read.  See ``doc/floating_point.rst``.
"""

import matplotlib.pyplot as plt
import numpy as np

from skdp import DPLogisticRegression

N_FITS = 1500
X0 = np.tile([[0.6, 0.0]], (200, 1))
y = np.arange(200) % 2
X1 = X0.copy()
X1[0] = [0.0, 0.8]          # the replaced row
W1 = -0.019760030           # noise-free coefficient on D1 (0 on D0)
HALF_ULP = np.spacing(abs(W1)) / 2


def event_rate(X, secure_noise, seed0):
    est = DPLogisticRegression(solver="output_perturbation", epsilon=1.0, delta=1e-5,
                               data_norm=1.0, alpha=0.1, fit_intercept=False,
                               classes=[0, 1], secure_noise=secure_noise)
    c = np.array([est.set_params(random_state=seed0 + i).fit(X, y).coef_[0, 1]
                  for i in range(N_FITS)])
    return np.mean((np.abs(c) < abs(W1) / 2) & (c % HALF_ULP != 0.0))


rates = {}
for label, secure in (("float noise", False), ("exact noise (default)", "auto")):
    rates[label] = (event_rate(X0, secure, 0), event_rate(X1, secure, 10**6))
    print(f"{label:>22}: P(event | D0) = {rates[label][0]:.4f}, "
          f"P(event | D1) = {rates[label][1]:.4f}")

fig, ax = plt.subplots(figsize=(6, 3))
positions = np.arange(len(rates))
ax.bar(positions - 0.2, [r[0] for r in rates.values()], 0.4, label="D0")
ax.bar(positions + 0.2, [r[1] for r in rates.values()], 0.4, label="D1 (one row replaced)")
ax.set_xticks(positions, list(rates))
ax.set_ylabel("frequency of the event")
ax.set_title(f"Low-bit event over {N_FITS} fits per dataset, epsilon = 1")
ax.legend()
fig.tight_layout()
plt.show()
