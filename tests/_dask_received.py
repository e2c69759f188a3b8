"""What a Dask client receives: every value ``distributed.Client.gather`` returns while a
block runs, to show that a fit brings back sums and counts, never rows."""

import contextlib

import numpy as np


@contextlib.contextmanager
def received_sizes(per_call=False):
    """Yield a list that, once the block ends, holds the size of every array the client
    gathered inside it (``per_call``: the total size of each gather, whose values may be
    the pieces of one result, one per partition)."""
    import distributed

    received = []
    original = distributed.Client.gather

    def spy(self, futures, *args, **kwargs):
        out = original(self, futures, *args, **kwargs)
        received.append(out)
        return out

    sizes = []
    distributed.Client.gather = spy
    try:
        yield sizes
    finally:
        distributed.Client.gather = original
        if per_call:
            sizes += [_size(out) for out in received]
        else:
            sizes += [_size(v) for out in received
                      for v in (out if isinstance(out, (list, tuple)) else [out])]


def _size(value):
    """The numbers in ``value``: an array's or frame's size, a tuple's leaves summed (a
    partition's profile: its row count and dtype names)."""
    if isinstance(value, (list, tuple)):
        return sum(_size(v) for v in value)
    if isinstance(value, str):
        return 1
    return int(np.asarray(value).size)
