"""`MultiHeadAttention` with the signature and defaults of `keras.layers`.

Changing `keras.layers.MultiHeadAttention` to
`keras_attention.compat.keras.MultiHeadAttention` keeps a model's arguments,
weights (the same sublayers, names and layouts) and outputs; the computation
is keras_attention's (float32 softmax, the fully-masked-row rule, fused and
blocked kernels, grouped-query heads through `num_key_value_heads=`).
"""

import math

import keras
import numpy as np
from keras import ops

from keras_attention import masks
from keras_attention.layers.multi_head_attention import (
    MultiHeadAttention as AttentionLayer,
)
from keras_attention.validation import concrete_values

FLASH_IMPLEMENTATIONS = {None: "auto", True: "fused", False: "exact"}

__all__ = ["MultiHeadAttention"]


def check_keras_arguments(num_heads, key_dim, value_dim, output_shape):
    """Keras' own checks, with Keras' messages, before ours."""
    for name, value in (("num_heads", num_heads), ("key_dim", key_dim),
                        ("value_dim", value_dim)):
        if name == "value_dim" and value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(
                f"Received an invalid value for argument `{name}`, expected a "
                f"positive integer. Received: {name}={value}"
            )
    if output_shape is not None and not isinstance(output_shape, int):
        try:
            tuple(output_shape)
        except TypeError:
            raise ValueError(
                f"Invalid `output_shape`: {output_shape}. When specified, the "
                "`output_shape` should be of type tuple, list, or int. "
                f"Received: output_shape={output_shape}"
            ) from None


def check_key_and_value_shapes(value_shape, key_shape):
    """Keras' check, with its message: `key` and `value` share every
    dimension but the last."""
    key_shape = value_shape if key_shape is None else key_shape
    if tuple(value_shape[1:-1]) != tuple(key_shape[1:-1]):
        raise ValueError(
            "All dimensions of `value` and `key`, except the last one, must be "
            f"equal. Received: value_shape={value_shape} and "
            f"key_shape={key_shape}"
        )


def as_boolean_mask(mask, name="attention_mask"):
    """A Keras mask as a boolean tensor (None stays None): boolean, integer
    0 / 1, or float 0 / 1 as Keras reads it (`mask > 0.5`). A float mask
    whose values are known must hold only 0 and 1: an additive mask (0 /
    -1e9) would be misread, so it raises a ValueError naming `name`."""
    if mask is None:
        return None
    values = concrete_values(mask)
    mask = ops.convert_to_tensor(mask)
    dtype = keras.backend.standardize_dtype(mask.dtype)
    if dtype == "bool":
        return mask
    if "float" in dtype and values is not None and not np.isin(values, (0, 1)).all():
        raise ValueError(
            f"`{name}`: a float mask must hold 0 (masked) and 1 (may attend), "
            "as Keras reads it; an additive mask (0 / -1e9) would be misread: "
            f"pass `{name}=mask == 0` for one. Received: {name} with values "
            f"{np.unique(values)[:4].tolist()}"
        )
    return ops.greater(mask, 0.5) if "float" in dtype else ops.not_equal(mask, 0)


def check_attention_axes(attention_axes):
    """Keras' `attention_axes`: None (every axis but the batch and the last),
    an int, or a tuple or list of ints (negative ones count from the end);
    returned as None or a tuple."""
    if attention_axes is None:
        return None
    axes = (attention_axes,) if isinstance(attention_axes, (int, np.integer)) else attention_axes
    if (not isinstance(axes, (tuple, list)) or not axes
            or not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                       for a in axes)):
        raise ValueError(
            "`attention_axes` must be None, an int or a tuple of ints. "
            f"Received: attention_axes={attention_axes!r}")
    return tuple(int(a) for a in axes)


class AxesLayout:
    """How inputs of rank > 3 (or attention over an axis other than 1) map to
    the `(B, T, D)` the layer computes on: the free axes (neither batch,
    features nor attention axes) join the batch, the attention axes become
    one sequence axis, in the order `attention_axes` gives them.

    Args:
        rank: the inputs' rank.
        free_axes, attention_axes: tuples of axes in `[1, rank - 1)`.
        free_sizes, query_sizes, key_sizes: their static sizes (the query's
            and the key's attention axes may differ in size).
    """

    def __init__(self, rank, free_axes, attention_axes, free_sizes, query_sizes, key_sizes):
        self.rank, self.free_axes, self.attention_axes = rank, free_axes, attention_axes
        self.free_sizes, self.query_sizes, self.key_sizes = free_sizes, query_sizes, key_sizes

    @classmethod
    def of(cls, attention_axes, query_shape, value_shape, key_shape=None):
        """The layout of these shapes, or `None` for `(B, T, D)` inputs over
        axis 1 (the layer's own path).

        Raises:
            ValueError: naming `attention_axes` for an axis out of range, or
                the input whose rank, free axes or sizes do not fit.
        """
        rank = len(query_shape)
        inner = tuple(range(1, rank - 1))
        axes = inner if attention_axes is None else tuple(a % rank for a in attention_axes)
        if rank == 3 and axes == (1,):
            return None
        if not axes or not set(axes) <= set(inner) or len(set(axes)) != len(axes):
            raise ValueError(
                f"`attention_axes` must name distinct axes of the query other than the batch "
                f"(0) and the features (-1): within [1, {rank - 1}) for a query of rank {rank}. "
                f"Received: attention_axes={attention_axes!r}, query shape {tuple(query_shape)}")
        free = tuple(a for a in inner if a not in axes)
        for name, shape in (("value", value_shape), ("key", key_shape)):
            if shape is None:
                continue
            if len(shape) != rank or any(shape[a] != query_shape[a] for a in free):
                raise ValueError(
                    f"`{name}` must have the query's rank and the query's sizes on the axes "
                    f"that are not attended over ({list(free)}). Received: query shape "
                    f"{tuple(query_shape)}, {name} shape {tuple(shape)}")
        sizes = [query_shape[a] for a in inner] + [value_shape[a] for a in axes]
        if any(size is None for size in sizes):
            raise ValueError(
                "Attention over several axes needs the sizes of every axis but the batch "
                f"and the features. Received: query shape {tuple(query_shape)}, value shape "
                f"{tuple(value_shape)}")
        return cls(rank, free, axes, tuple(query_shape[a] for a in free),
                   tuple(query_shape[a] for a in axes), tuple(value_shape[a] for a in axes))

    def flat_shape(self, shape):
        """`(B * free..., attention..., D)` of an input shape."""
        batch = None if shape[0] is None else shape[0] * math.prod(self.free_sizes)
        return (batch, math.prod(shape[a] for a in self.attention_axes), shape[-1])

    def _order(self, with_last):
        return (0, *self.free_axes, *self.attention_axes) + ((self.rank - 1,) if with_last else ())

    def flatten(self, x):
        """An input `(B, ..., D)` as `(B * free..., attention..., D)`."""
        x = ops.transpose(x, self._order(True))
        length = math.prod(x.shape[1 + len(self.free_axes):-1])
        return ops.reshape(x, (-1, length, x.shape[-1]))

    def flatten_mask(self, mask):
        """A mask of an input's positions `(B, ...)` as `(B * free..., attention...)`."""
        if mask is None:
            return None
        mask = ops.transpose(mask, self._order(False))
        return ops.reshape(mask, (-1, math.prod(mask.shape[1 + len(self.free_axes):])))

    def flatten_attention_mask(self, mask):
        """`(B, query axes..., key axes...)` (the same for every free
        position) or `(B, free..., query axes..., key axes...)` as
        `(B * free..., T, S)`."""
        if mask is None:
            return None
        tq, tk = math.prod(self.query_sizes), math.prod(self.key_sizes)
        attended = self.query_sizes + self.key_sizes
        shapes = (tuple(mask.shape[1:]) == attended,
                  tuple(mask.shape[1:]) == self.free_sizes + attended)
        if not any(shapes):
            raise ValueError(
                "`attention_mask` over several axes must be (batch, query axes..., key "
                "axes...) or (batch, free axes..., query axes..., key axes...): "
                f"(B, {', '.join(map(str, attended))}) or (B, "
                f"{', '.join(map(str, self.free_sizes + attended))}). "
                f"Received: attention_mask.shape={tuple(mask.shape)}")
        if shapes[0]:
            mask = ops.reshape(mask, (-1, 1, tq, tk))
            mask = ops.broadcast_to(
                mask, (ops.shape(mask)[0], math.prod(self.free_sizes), tq, tk))
        return ops.reshape(mask, (-1, tq, tk))

    def unflatten(self, output):
        """The layer's `(B * free..., T, out...)` output in the query's axes."""
        out_dims = tuple(output.shape[2:])
        output = ops.reshape(output, (-1, *self.free_sizes, *self.query_sizes, *out_dims))
        order = self._order(False)
        back = tuple(order.index(axis) for axis in range(self.rank - 1))
        return ops.transpose(output, back + tuple(range(self.rank - 1,
                                                        self.rank - 1 + len(out_dims))))

    def unflatten_scores(self, scores):
        """`(B * free..., H, T, S)` scores as `(B, free..., H, query axes...,
        key axes...)`, Keras' layout."""
        return ops.reshape(scores, (-1, *self.free_sizes, scores.shape[1], *self.query_sizes,
                                    *self.key_sizes))


@keras.saving.register_keras_serializable(package="keras_attention.compat.keras")
class MultiHeadAttention(AttentionLayer):
    """`keras.layers.MultiHeadAttention`'s arguments, in its order, on
    keras_attention's `MultiHeadAttention`.

    Shapes: `query` `(B, T, Dq)`, `value` `(B, S, Dv)`, `key` `(B, S, Dk)` ->
    `(B, T) + output_shape` (default `(Dq,)`); scores `(B, H, T, S)`. As in
    Keras, inputs of higher rank attend over `attention_axes` (default: every
    axis but the batch and the features): `(B, free..., query axes..., Dq)`
    -> scores `(B, free..., H, query axes..., key axes...)`, computed as the
    `(B, T, D)` call with the free axes in the batch (`AxesLayout`); the
    `attention_mask` is then `(B, query axes..., key axes...)` or
    `(B, free..., query axes..., key axes...)`.

    Masks may be boolean, or 0 / 1 numbers as in Keras (a float mask with
    other values, such as an additive 0 / -1e9 one, raises a ValueError).
    A `(B, H, T, S)` mask holds one mask per head (`(B, 1, T, S)` or `(B, T,
    S)`: one for all). Difference kept on purpose: a query row whose keys
    are all masked outputs the output bias (Keras' layer averages all the
    values there).
    `flash_attention=True` picks keras_attention's fused kernel
    (`implementation="fused"`), `False` the exact path; the layer's own
    arguments (`num_key_value_heads`, `rotary`, `implementation`, ...) are
    accepted as keywords.

    Args: those of `keras.layers.MultiHeadAttention` (`num_heads, key_dim,
        value_dim, dropout, use_bias, output_shape, attention_axes,
        sliding_window, flash_attention, kernel_initializer, bias_initializer,
        kernel_regularizer, bias_regularizer, activity_regularizer,
        kernel_constraint, bias_constraint, use_gate, seed`), then
        `keras_attention.layers.MultiHeadAttention` keywords.

    Call arguments: as `keras.layers.MultiHeadAttention`: `query, value,
        key=None, query_mask=None, value_mask=None, key_mask=None,
        attention_mask=None, return_attention_scores=False, training=None,
        use_causal_mask=False`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.compat.keras import MultiHeadAttention
    >>> layer = MultiHeadAttention(2, 4, None, 0.1)  # keras' positional order
    >>> x = np.ones((2, 3, 8), "float32")
    >>> out, scores = layer(x, x, attention_mask=np.tril(np.ones((3, 3))),
    ...                     return_attention_scores=True)
    >>> layer.dropout, tuple(out.shape), tuple(scores.shape)
    (0.1, (2, 3, 8), (2, 2, 3, 3))
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_shape=None,
        attention_axes=None,
        sliding_window=None,
        flash_attention=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        use_gate=False,
        seed=None,
        **kwargs,
    ):
        check_keras_arguments(num_heads, key_dim, value_dim, output_shape)
        self._keras_attention_axes = check_attention_axes(attention_axes)
        if flash_attention not in FLASH_IMPLEMENTATIONS:
            raise ValueError(
                "`flash_attention` must be None, True or False. "
                f"Received: flash_attention={flash_attention!r}"
            )
        if flash_attention and dropout > 0:
            raise ValueError(
                "Dropout is not supported when flash attention is enabled. "
                f"Received: dropout={dropout}, flash_attention=True"
            )
        if flash_attention is not None:
            implementation = FLASH_IMPLEMENTATIONS[flash_attention]
            given = kwargs.pop("implementation", implementation)
            if given not in ("auto", implementation):
                raise ValueError(
                    f"`flash_attention={flash_attention}` means "
                    f"implementation={implementation!r}; pass one of the two. "
                    f"Received: flash_attention={flash_attention}, "
                    f"implementation={given!r}"
                )
            kwargs["implementation"] = implementation
        super().__init__(
            num_heads=num_heads,
            key_dim=key_dim,
            value_dim=value_dim,
            dropout=dropout,
            use_bias=use_bias,
            output_shape=output_shape,
            sliding_window=sliding_window,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint,
            use_gate=use_gate,
            seed=seed,
            **kwargs,
        )
        self.flash_attention = flash_attention

    # Keras' names of the projection sublayers and options, read by code
    # written for `keras.layers.MultiHeadAttention`.
    _query_dense = property(lambda self: self.query_dense)
    _key_dense = property(lambda self: self.key_dense)
    _value_dense = property(lambda self: self.value_dense)
    _output_dense = property(lambda self: self.output_dense)
    _gate_dense = property(lambda self: self.gate_dense)
    _sliding_window = property(lambda self: self.sliding_window)
    _flash_attention = property(lambda self: self.flash_attention)
    # Keras' einsum equations of (B, T, D) inputs: scores from projected keys
    # and queries, contexts from scores and projected values (B, S, H, Dv).
    _dot_product_equation = "aecd,abcd->acbe"
    _combine_equation = "acbe,aecd->abcd"

    _attention_axes = property(lambda self: self._keras_attention_axes)

    def build(self, query_shape, value_shape, key_shape=None):
        check_key_and_value_shapes(value_shape, key_shape)
        layout = self._layout(query_shape, value_shape, key_shape)
        if layout is None:
            super().build(query_shape, value_shape, key_shape)
        else:
            super().build(layout.flat_shape(query_shape), layout.flat_shape(value_shape),
                          None if key_shape is None else layout.flat_shape(key_shape))

    def _layout(self, query_shape, value_shape, key_shape=None):
        """The `AxesLayout` of inputs of these shapes, or `None` for
        attention over the sequence axis of `(B, T, D)` inputs."""
        return AxesLayout.of(self._keras_attention_axes, query_shape, value_shape, key_shape)

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
    ):
        use_causal_mask = _keras_flag(use_causal_mask)
        layout = self._layout(query.shape, value.shape, None if key is None else key.shape)
        arguments = dict(query_mask=query_mask, value_mask=value_mask, key_mask=key_mask,
                         attention_mask=attention_mask, training=training,
                         return_attention_scores=return_attention_scores,
                         use_causal_mask=use_causal_mask)
        if layout is not None:
            return self._call_over_axes(layout, query, value, key, **arguments)
        return self._call_over_the_sequence(query, value, key, **arguments)

    def _call_over_the_sequence(self, query, value, key, *, query_mask, value_mask, key_mask,
                                attention_mask, return_attention_scores, training,
                                use_causal_mask):
        """`call` over axis 1 of `(B, T, D)` inputs, with Keras' mask forms."""
        if self.flash_attention and return_attention_scores:
            raise ValueError(
                "Returning attention scores is not supported when flash "
                "attention is enabled. Please disable flash attention to access"
                " attention scores. Received: return_attention_scores=True"
            )
        attention_mask, attention_bias = self._per_head_mask(as_boolean_mask(attention_mask))
        query_length, key_length = query.shape[1], (value if key is None else key).shape[1]
        if use_causal_mask and query_length != key_length:
            # Keras' causal mask between different lengths: top-left
            # aligned, query i sees keys j <= i.
            attention_mask = masks.merge_masks(
                attention_mask, masks.causal_mask(query_length, key_length, offset=0)
            )
            use_causal_mask = False
        return super().call(
            query,
            value,
            key,
            query_mask=as_boolean_mask(query_mask, "query_mask"),
            value_mask=as_boolean_mask(value_mask, "value_mask"),
            key_mask=as_boolean_mask(key_mask, "key_mask"),
            attention_mask=attention_mask,
            attention_bias=attention_bias,
            return_attention_scores=return_attention_scores,
            training=training,
            use_causal_mask=use_causal_mask,
        )

    def _per_head_mask(self, attention_mask):
        """`(attention_mask, attention_bias)` of a Keras mask: a `(B, H, T, S)`
        mask, one per head, is the keys any head may attend (`(B, T, S)`, so
        that a row no head attends follows the fully-masked-row rule) and a
        bias of -1e9 on each head's other keys (there a head that attends
        none of them spreads its weights evenly, as Keras' layer does)."""
        if attention_mask is None or len(attention_mask.shape) != 4:
            return attention_mask, None
        heads = attention_mask.shape[1]
        if heads == 1:
            return attention_mask[:, 0], None
        if heads != self.num_heads:
            raise ValueError(
                "`attention_mask` of rank 4 must be (batch, 1, target_len, source_len), the "
                "same for every head, or (batch, num_heads, target_len, source_len), one per "
                f"head ({self.num_heads}). Received: "
                f"attention_mask.shape={tuple(attention_mask.shape)}")
        bias = ops.where(attention_mask, 0.0, -1e9)
        return ops.any(attention_mask, axis=1), ops.cast(bias, "float32")

    def _call_over_axes(self, layout, query, value, key, *, query_mask, value_mask, key_mask,
                        attention_mask, return_attention_scores, use_causal_mask, **kwargs):
        """`call` over `layout.attention_axes` of higher-rank inputs: the free
        axes go into the batch and the attention axes into one sequence axis,
        the `(B, T, D)` call runs, and its outputs go back to the inputs' axes
        (scores `(B, free..., H, query axes..., key axes...)`, as Keras')."""
        if use_causal_mask and len(layout.attention_axes) > 1:
            raise ValueError(
                "`use_causal_mask`: a causal mask is defined over one attention axis; "
                "pass `attention_mask` for attention over several. Received: "
                f"use_causal_mask=True, attention_axes={self._keras_attention_axes!r}")
        outputs = self._call_over_the_sequence(
            layout.flatten(query), layout.flatten(value),
            None if key is None else layout.flatten(key),
            query_mask=layout.flatten_mask(query_mask),
            value_mask=layout.flatten_mask(value_mask),
            key_mask=layout.flatten_mask(key_mask),
            attention_mask=layout.flatten_attention_mask(as_boolean_mask(attention_mask)),
            return_attention_scores=return_attention_scores,
            use_causal_mask=use_causal_mask, **kwargs)
        if return_attention_scores:
            output, scores = outputs
            return layout.unflatten(output), layout.unflatten_scores(scores)
        return layout.unflatten(outputs)

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        check_key_and_value_shapes(value_shape, key_shape)
        layout = self._layout(query_shape, value_shape, key_shape)
        if layout is None:
            return super().compute_output_shape(query_shape, value_shape, key_shape)
        output_shape = self._output_shape or (self.output_dim or query_shape[-1],)
        return tuple(query_shape[:-1]) + tuple(output_shape)

    def get_config(self):
        config = super().get_config()
        config["attention_axes"] = self._keras_attention_axes
        config["flash_attention"] = self.flash_attention
        if self.flash_attention is not None:
            del config["implementation"]  # implied by `flash_attention`
        return config


def _keras_flag(value):
    """Keras' `MultiHeadAttention` reads `use_causal_mask` by truth value, and
    its own tests pass `0`: the integers 0 and 1 are taken as False and True
    here. Anything else (a string such as "no") goes on to our check, which
    refuses it naming the argument."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    return value
