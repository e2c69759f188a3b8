"""The integer ids the loss kernels dispatch on, and the fixed chunking of the row passes.

Kept apart from :mod:`skdp._losses._kernels` so that code needing only the ids (the loss
specs, the numpy objectives of :mod:`skdp._losses._vectorised`, the ``auto`` rules) does
not import numba.
"""

__all__ = ["LOGISTIC", "MULTINOMIAL", "HUBER", "TUKEY", "WELSCH", "CAUCHY", "CAPPED_ABSOLUTE",
           "ABSOLUTE", "TRUNCATED_SQUARED", "SMOOTHED_ABSOLUTE", "SMOOTHED_HINGE", "N_CHUNKS",
           "BLOCK"]

LOGISTIC = 0
MULTINOMIAL = 1
HUBER = 2
TUKEY = 3
WELSCH = 4
CAUCHY = 5
# nonsmooth losses of the zeroth-order solver (skdp._losses._nonsmooth); scale tau = param
CAPPED_ABSOLUTE = 6    # min(|r|, tau)
ABSOLUTE = 7           # |r|
TRUNCATED_SQUARED = 8  # min(r^2, tau^2)
# the Lipschitz nonsmooth losses smoothed by Gaussian convolution for the phased solver
# (skdp._losses._smoothed, where they are called ABSOLUTE and HINGE)
SMOOTHED_ABSOLUTE = 20
SMOOTHED_HINGE = 21

#: fixed number of row chunks of every parallel pass (results independent of the threads)
N_CHUNKS = 16
#: rows per block of the kernels' gradient accumulation
BLOCK = 4096
