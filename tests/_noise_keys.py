"""Record the ChaCha20 keys that fits derive, to test that two release sites never share
one.

Every exact release draws from a state made by :func:`skdp._mechanisms.new_word_source`;
its key words (``state[4:12]``) fix the whole stream.  :func:`record_keys` wraps that
function in every skdp module that holds it (module-level imports bind the name), so a
test sees the key of every stream a fit opens.
"""

import sys

import skdp.linear_model  # noqa: F401  (imported before the patch: they bind the name)
import skdp.model_selection  # noqa: F401
import skdp.preprocessing  # noqa: F401
from skdp._mechanisms import _exact


def record_keys(monkeypatch, states=None):
    """A list that receives the key (a tuple of 8 words) of every ChaCha20 state created
    while ``monkeypatch`` is active; clear it between fits.  ``states``: a list that
    receives a copy of each new state too (its stream from the first word)."""
    keys = []
    original = _exact.new_word_source

    def recording(random_state=None):
        state = original(random_state)
        keys.append(tuple(int(w) for w in state[4:12]))
        if states is not None:
            states.append(state.copy())
        return state

    for name, module in list(sys.modules.items()):
        if name.startswith("skdp") and getattr(module, "new_word_source", None) is original:
            monkeypatch.setattr(module, "new_word_source", recording)
    return keys
