"""The two private Keras names keras_attention relies on, in one place.

Keras 3 has no public API for either need yet. Everything else in the
package uses public Keras only. A Keras upgrade that moves one of these
fails `tests/keras_internals_test.py`, which names it, before it can fail a
user's call.

- `in_symbolic_scope()`: whether Keras is inferring a functional model's
  shapes. On torch it does so with made-up lengths for unknown axes (83,
  89), which the length checks of `keras_attention.validation` must not
  judge.
- `autocast_scope(dtype)`: variables read in `dtype` inside it, as in a
  layer's `__call__` under a mixed precision policy; `Seq2SeqModel`'s
  generation hooks call layer methods directly and need the same reads.
"""

from keras.src.backend import AutocastScope as _AutocastScope
from keras.src.backend import in_symbolic_scope as _in_symbolic_scope


def in_symbolic_scope():
    """True while Keras traces a symbolic (functional) call."""
    return bool(_in_symbolic_scope())


def autocast_scope(dtype):
    """A context in which float variables are read as `dtype` (None: as
    they are)."""
    return _AutocastScope(dtype)
