"""Quantization, LoRA and saved-weight support for layers built of sublayers.

Keras quantizes (`model.quantize("int8" | "float8" | "int4")`) and adapts
(`enable_lora(rank)`) its own `Dense` and `EinsumDense` layers only, and only
the leaves of a model: a layer holding raw `add_weight` kernels would be
skipped without a word. So every projection of keras_attention is a Keras
`EinsumDense` or `Dense` sublayer, and:

- `QuantizableSublayers` (a mixin of the layers made of such sublayers) lets
  `layer.quantize(mode)` and `layer.enable_lora(rank)` be called on the layer
  itself, records which sublayers are quantized in `get_config()`
  (`quantized_sublayers`), so that a quantized model round-trips through
  `.keras` (Keras' own `MultiHeadAttention` does not: its quantized
  sublayers are rebuilt in float and the load fails), and maps the weights of
  files saved before the projections were sublayers onto the sublayers.
- `NotQuantizable` (a mixin of the layers that keep raw weights) makes
  `quantize` raise an error naming the layer, rather than do nothing.
"""

import keras

__all__ = [
    "NotQuantizable",
    "QuantizableSublayers",
    "check_quantized_sublayers",
    "dense_projection",
    "einsum_projection",
    "quantized_sublayers",
    "refuse_quantization",
    "restore_quantization",
]


def dense_projection(units, input_shape, name, kernel_initializer, dtype):
    """A bias-free Keras `Dense` `(..., D) -> (..., units)`, built."""
    projection = keras.layers.Dense(
        units,
        use_bias=False,
        kernel_initializer=kernel_initializer,
        dtype=dtype,
        name=name,
    )
    projection.build(tuple(input_shape))
    return _passes_masks_through(projection)


def einsum_projection(equation, output_shape, bias_axes, name, **kwargs):
    """A Keras `EinsumDense` sublayer (bias only when `bias_axes`)."""
    return _passes_masks_through(keras.layers.EinsumDense(
        equation, output_shape=output_shape, bias_axes=bias_axes, name=name, **kwargs
    ))


def _passes_masks_through(projection):
    """`projection`, marked as passing Keras masks through: our layers read
    the Keras mask of their inputs themselves and leave it on the tensors
    (Keras' MultiHeadAttention strips it instead, R1), so a projection sees
    masked inputs; without this Keras warns that it "will destroy the mask
    information" at every call. Its outputs stay inside our layer."""
    projection.supports_masking = True
    return projection


def _descendants(layer, prefix=""):
    """`(relative path, sublayer)` of every sublayer of `layer`, depth first;
    the path joins sublayer names with "/" ("self_attention/query")."""
    for sublayer in layer._flatten_layers(include_self=False, recursive=False):
        path = f"{prefix}{sublayer.name}"
        yield path, sublayer
        yield from _descendants(sublayer, path + "/")


def _is_leaf(layer):
    return not list(layer._flatten_layers(include_self=False, recursive=False))


def _own_variables(layer):
    return list(layer._trainable_variables) + list(layer._non_trainable_variables)


def quantized_sublayers(layer):
    """`{sublayer path: serialized dtype policy}` of the quantized leaf
    sublayers of `layer` (paths join sublayer names with "/"): what a layer
    or model rebuilt from its constructor arguments records in its config so
    that `restore_quantization` can quantize the same sublayers on load."""
    return {
        path: keras.dtype_policies.serialize(sublayer.dtype_policy)
        for path, sublayer in _descendants(layer)
        if _is_leaf(sublayer) and sublayer.quantization_mode is not None
    }


def restore_quantization(layer, saved):
    """Quantizes the sublayers of `layer` that `saved` (a
    `quantized_sublayers` dict) lists, so that their variables match a saved
    file's; call it before they are loaded. A sublayer quantized already (a
    table shared by two paths) is left as it is.

    Raises:
        ValueError: `saved` names a sublayer `layer` does not have.
    """
    if not saved:
        return
    by_path = dict(_descendants(layer))
    for path, policy in saved.items():
        sublayer = by_path.get(path)
        if sublayer is None:
            raise ValueError(
                f"Layer '{layer.name}' has no sublayer '{path}' to quantize; "
                f"its sublayers are {sorted(by_path)}. Received: "
                f"quantized_sublayers={saved}"
            )
        policy = keras.dtype_policies.deserialize(policy)
        if sublayer.quantization_mode is None:
            sublayer.quantize(policy.quantization_mode, type_check=False)


def check_quantized_sublayers(quantized_sublayers):
    """`quantized_sublayers` as a dict (None: empty), validated."""
    if quantized_sublayers is not None and not isinstance(quantized_sublayers, dict):
        raise ValueError(
            "`quantized_sublayers` must be None or a dict {sublayer path: "
            f"dtype policy}}. Received: quantized_sublayers={quantized_sublayers!r}"
        )
    return dict(quantized_sublayers or {})


def _table_or_kernel_and_bias(sublayer):
    """The float variables a sublayer's parent once held: an `Embedding`'s
    table, or a projection's kernel and bias (None without a bias)."""
    if isinstance(sublayer, keras.layers.Embedding):
        return (sublayer.embeddings,)
    return (sublayer.kernel, getattr(sublayer, "bias", None))


class _SkipOneEmptyLoad:
    """Stands in for a sublayer's `load_own_variables` for one call, after
    its parent loaded the sublayer's weights from a legacy layout (the file
    has no entry for the sublayer, so Keras hands it an empty store)."""

    def __init__(self, layer):
        self.layer = layer

    def __call__(self, store):
        del self.layer.load_own_variables  # back to the class's method
        if len(store.keys()):
            self.layer.load_own_variables(store)


class QuantizableSublayers:
    """Mixin of layers whose projections are Keras sublayers.

    Place it before the Keras base class (`class L(QuantizableSublayers,
    keras.layers.Layer)`). It adds the constructor argument
    `quantized_sublayers` (a dict `{sublayer path: dtype policy}`, written by
    `get_config()`; users leave it None) and the methods `quantize` and
    `enable_lora`. Subclasses may override `_legacy_projections()` to load
    files saved when the layer held raw kernels.
    """

    def __init__(self, *args, quantized_sublayers=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._saved_quantization = check_quantized_sublayers(quantized_sublayers)

    # ------------------------------------------------------------ quantize
    def quantize(self, mode=None, type_check=True, config=None):
        """Quantizes every `Dense`/`EinsumDense`/`Embedding` sublayer (as
        `keras.Model.quantize` does for the leaves of a model).

        Args:
            mode: `"int8"`, `"float8"` or `"int4"` (as Keras).
            type_check: passed to the sublayers' `quantize`.
            config: optional `keras.quantizers.QuantizationConfig`.

        Raises:
            ValueError: the layer is not built, or holds a sublayer that
                keeps raw weights (`NotQuantizable`).
        """
        if not self.built:
            raise ValueError(
                f"Cannot quantize layer '{self.name}' before it is built: call it "
                f"once (or `build` it) first. Received: mode={mode!r}"
            )
        quantized = 0
        for _, sublayer in _descendants(self):
            if not _is_leaf(sublayer):
                continue
            try:
                sublayer.quantize(mode, type_check=type_check, config=config)
                quantized += 1
            except NotImplementedError:
                continue  # Dropout, LayerNormalization: no weights to quantize
        if not quantized:
            raise ValueError(
                f"Layer '{self.name}' ({type(self).__name__}) has no sublayer that "
                f"Keras can quantize. Received: mode={mode!r}"
            )

    def enable_lora(self, rank, lora_alpha=None, a_initializer="he_uniform",
                    b_initializer="zeros"):
        """Enables LoRA (`EinsumDense.enable_lora`) on every `Dense` and
        `EinsumDense` sublayer and freezes every other weight of the layer
        (biases, norms): only the LoRA weights train, as keras-hub's
        `Backbone.enable_lora`.

        For some projections only, call `enable_lora` on them instead
        (`layer.query_dense`, `layer.value_dense`, ...): Keras then freezes
        their kernels and leaves the rest trainable.
        """
        projections = [
            sublayer
            for _, sublayer in _descendants(self)
            if isinstance(sublayer, (keras.layers.Dense, keras.layers.EinsumDense))
        ]
        if not projections:
            raise ValueError(
                f"Layer '{self.name}' ({type(self).__name__}) has no Dense or "
                f"EinsumDense sublayer to adapt. Received: rank={rank}"
            )
        for variable in self.weights:
            variable.trainable = False
        for projection in projections:
            projection.enable_lora(
                rank,
                lora_alpha=lora_alpha,
                a_initializer=a_initializer,
                b_initializer=b_initializer,
            )

    def _quantized_descendants(self):
        """`{path: serialized policy}` of the quantized sublayers."""
        return quantized_sublayers(self)

    def _restore_quantization(self):
        """Quantizes the sublayers the saved config lists, so that their
        variables match the file's (called before they are loaded)."""
        restore_quantization(self, self._saved_quantization)
        self._saved_quantization = {}

    # --------------------------------------------------------------- saving
    def _legacy_projections(self):
        """The projection sublayers whose kernels (and biases) the layer held
        as its own variables before they were sublayers; the default is
        none."""
        return []

    def _legacy_variables(self):
        """Today's variables in the order the layer held them as its own
        before the projections were sublayers. The default: the kernel and
        bias of each `_legacy_projections()` sublayer, then today's own
        variables; a layer whose old order interleaved them overrides it."""
        projection_variables = [
            variable
            for sublayer in self._legacy_projections()
            for variable in _table_or_kernel_and_bias(sublayer)
            if variable is not None
        ]
        return projection_variables + _own_variables(self)

    def load_own_variables(self, store):
        """Loads the layer's own variables; quantizes the sublayers recorded
        as quantized first, and maps a legacy file's raw kernels (stored as
        this layer's own variables) onto the projection sublayers."""
        self._restore_quantization()
        saved = len(store.keys())
        if self._legacy_projections() and saved != len(_own_variables(self)):
            legacy = self._legacy_variables()
            if saved == len(legacy):
                for index, variable in enumerate(legacy):
                    variable.assign(store[str(index)])
                for sublayer in self._legacy_projections():
                    sublayer.load_own_variables = _SkipOneEmptyLoad(sublayer)
                return
        super().load_own_variables(store)

    def get_config(self):
        config = super().get_config()
        config["quantized_sublayers"] = self._quantized_descendants() or None
        return config


class NotQuantizable:
    """Mixin of layers that keep raw (`add_weight`) weights: `quantize` says
    so rather than leave them in float without a word.

    Layers with raw kernels (matrix products Keras could quantize were they
    `Dense` layers) raise a ValueError, which stops `model.quantize`; layers
    whose raw weights are tables, gains or scalars that Keras leaves in float
    too (as `LayerNormalization`) set `_kept_in_float = True` and raise
    `NotImplementedError`, which `model.quantize` turns into a warning
    naming the layer. Place the mixin before the Keras base class.
    """

    # Why the layer's weights stay raw (said in the message).
    _not_quantizable_reason = "its kernels are raw variables, not Keras Dense layers"
    _kept_in_float = False

    def quantize(self, mode=None, type_check=True, config=None):
        """Raises: ValueError (raw kernels) or NotImplementedError (tables
        kept in float; `model.quantize` warns)."""
        refuse_quantization(
            self, mode, self._not_quantizable_reason, self._kept_in_float
        )


def refuse_quantization(layer, mode, reason, kept_in_float=False):
    """Raises the error of a layer that keeps raw weights (`NotQuantizable`):
    NotImplementedError (a warning in `model.quantize`) for a layer with no
    weights or with weights Keras keeps in float too, else ValueError."""
    name = f"Layer '{layer.name}' ({type(layer).__name__})"
    if not layer.weights or kept_in_float:
        raise NotImplementedError(
            f"{name} is not quantized: {reason if layer.weights else 'it has no weights'}; "
            f"its weights stay {layer.variable_dtype}. Received: mode={mode!r}"
        )
    raise ValueError(
        f"{name} cannot be quantized: {reason}. Leave it out with "
        "`model.quantize(mode, filters=...)` (a regex or callable that does not "
        f"match its path '{layer.path}'). Received: mode={mode!r}"
    )
