"""Privacy mechanisms: row clipping and the noise samplers (private module)."""

from ._clipping import clip_and_augment, max_row_norm, row_bound
from ._exact import new_word_source
from ._noise import gaussian_noise, norm_laplace_noise, release_gaussian, release_laplace

__all__ = ["clip_and_augment", "max_row_norm", "row_bound", "gaussian_noise",
           "norm_laplace_noise", "release_gaussian", "release_laplace", "new_word_source"]
