"""keras-hub's `TransformerEncoder` / `TransformerDecoder` arguments on our blocks.

A keras-hub model swaps its blocks for ours by changing the import: the same
constructor order and names (`normalize_first` is an alias of `norm_first`),
the same call keywords, and, with the weights copied across, the same outputs
on every real (unpadded) position. Padded query rows differ on purpose: ours
attend to nothing (the fully-masked-row rule), keras-hub's attend to the real
keys.
"""

import keras
import numpy as np
import pytest

from keras_attention.compat import keras_hub as compat_hub
from keras_attention.layers import TransformerDecoderBlock, TransformerEncoderBlock
from tests.test_case import to_numpy, with_keras_mask

pytestmark = pytest.mark.keras_ops_only

keras_hub = pytest.importorskip("keras_hub")

ATOL = 1e-5
# keras-hub's positional order: intermediate_dim, num_heads, dropout, activation,
# layer_norm_epsilon, kernel_initializer, bias_initializer, normalize_first.
POSITIONAL = (32, 4, 0.0, "gelu", 1e-6, "glorot_uniform", "zeros")


def copy_keras_hub_weights(theirs, ours):
    """Copies a built keras-hub block's weights into our built block."""
    pairs = [
        (theirs._self_attention_layer, ours.self_attention),
        (theirs._self_attention_layer_norm, ours.self_attention_norm),
        (theirs._feedforward_layer_norm, ours.feed_forward_norm),
    ]
    if getattr(theirs, "_cross_attention_layer", None) is not None:
        pairs += [
            (theirs._cross_attention_layer, ours.cross_attention),
            (theirs._cross_attention_layer_norm, ours.cross_attention_norm),
        ]
    for source, target in pairs:
        target.set_weights(source.get_weights())
    ours.feed_forward.set_weights(
        theirs._feedforward_intermediate_dense.get_weights()
        + theirs._feedforward_output_dense.get_weights()
    )


def padding(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


@pytest.mark.parametrize("normalize_first", [False, True], ids=["post_norm", "pre_norm"])
def test_encoder_equals_keras_hub_with_copied_weights(normalize_first, rng):
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    mask = padding([6, 4], 6)
    theirs = keras_hub.layers.TransformerEncoder(*POSITIONAL, normalize_first)
    ours = TransformerEncoderBlock(*POSITIONAL, normalize_first)
    theirs(x)
    ours(x)
    copy_keras_hub_weights(theirs, ours)
    assert ours.norm_first is normalize_first

    np.testing.assert_allclose(to_numpy(ours(x)), to_numpy(theirs(x)), atol=ATOL)
    y_ours, w_ours = ours(x, padding_mask=mask, return_attention_scores=True)
    y_theirs, w_theirs = theirs(x, padding_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(y_ours)[mask], to_numpy(y_theirs)[mask], atol=ATOL)
    real_rows = np.broadcast_to(mask[:, None, :], w_ours.shape[:3])
    np.testing.assert_allclose(
        to_numpy(w_ours)[real_rows], to_numpy(w_theirs)[real_rows], atol=ATOL
    )
    # The documented difference: a padded query row attends to nothing here.
    assert (to_numpy(w_ours)[1, :, 4:] == 0).all()
    assert not np.allclose(to_numpy(w_theirs)[1, :, 4:], 0)


@pytest.mark.parametrize("normalize_first", [False, True], ids=["post_norm", "pre_norm"])
def test_decoder_equals_keras_hub_with_copied_weights(normalize_first, rng):
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    memory = rng.normal(size=(2, 7, 16)).astype("float32")
    x_mask, memory_mask = padding([5, 3], 5), padding([7, 2], 7)
    theirs = keras_hub.layers.TransformerDecoder(*POSITIONAL, normalize_first=normalize_first)
    ours = TransformerDecoderBlock(*POSITIONAL, normalize_first=normalize_first)
    theirs(x, memory)
    ours(x, memory)
    copy_keras_hub_weights(theirs, ours)

    np.testing.assert_allclose(to_numpy(ours(x, memory)), to_numpy(theirs(x, memory)), atol=ATOL)
    masks = {"decoder_padding_mask": x_mask, "encoder_padding_mask": memory_mask}
    np.testing.assert_allclose(
        to_numpy(ours(x, memory, **masks))[x_mask],
        to_numpy(theirs(x, memory, **masks))[x_mask],
        atol=ATOL,
    )
    np.testing.assert_allclose(
        to_numpy(ours(x, memory, use_causal_mask=False)),
        to_numpy(theirs(x, memory, use_causal_mask=False)),
        atol=ATOL,
    )
    window = np.tril(np.ones((5, 5), bool)) & ~np.tril(np.ones((5, 5), bool), -2)
    cross = rng.random((2, 5, 7)) < 0.7
    cross[..., 0] = True  # no fully masked row: there keras-hub and we differ on purpose
    attention_masks = {"decoder_attention_mask": np.broadcast_to(window, (2, 5, 5)),
                       "encoder_attention_mask": cross}
    np.testing.assert_allclose(
        to_numpy(ours(x, memory, **attention_masks)),
        to_numpy(theirs(x, memory, **attention_masks)),
        atol=ATOL,
    )


def test_decoder_only_block_equals_keras_hub(rng):
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    theirs = keras_hub.layers.TransformerDecoder(32, 4)
    ours = TransformerDecoderBlock(32, 4, normalize_first=False)
    theirs(x)
    ours(x)
    copy_keras_hub_weights(theirs, ours)
    np.testing.assert_allclose(to_numpy(ours(x)), to_numpy(theirs(x)), atol=ATOL)


def test_keras_hub_padding_mask_wins_over_the_keras_mask(rng):
    """As in keras-hub, an explicit `padding_mask` replaces the input's Keras mask."""
    block = TransformerEncoderBlock(16, 2)
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    keras_mask, explicit = padding([4, 1], 4), padding([3, 2], 4)
    np.testing.assert_allclose(
        to_numpy(block(with_keras_mask(x, keras_mask), padding_mask=explicit)),
        to_numpy(block(x, x_mask=explicit)),
        atol=ATOL,
    )
    decoder = TransformerDecoderBlock(16, 2)
    np.testing.assert_allclose(
        to_numpy(decoder(with_keras_mask(x, keras_mask), decoder_padding_mask=explicit)),
        to_numpy(decoder(x, x_mask=explicit)),
        atol=ATOL,
    )


@pytest.mark.parametrize("block", [TransformerEncoderBlock, TransformerDecoderBlock])
def test_keras_hub_positional_order_and_canonical_config(block):
    layer = block(64, 8, 0.1, "gelu", 1e-6, "glorot_uniform", "zeros", False)
    assert (layer.intermediate_dim, layer.num_heads, layer.dropout) == (64, 8, 0.1)
    assert (layer.layer_norm_epsilon, layer.norm_first) == (1e-6, False)
    assert layer.activation is keras.activations.gelu
    config = layer.get_config()
    assert "normalize_first" not in config and config["norm_first"] is False
    assert block.from_config(config).get_config() == config
    aliased = block(intermediate_dim=64, num_heads=8, normalize_first=True)
    assert aliased.norm_first is True and aliased.get_config()["norm_first"] is True
    assert block(64, 8).norm_first is True  # our default: pre-norm


@pytest.mark.parametrize("block", [TransformerEncoderBlock, TransformerDecoderBlock])
def test_both_spellings_are_refused(block):
    with pytest.raises(ValueError, match=r"`norm_first`.*`normalize_first`.*Received: "
                                         r"norm_first=True, normalize_first=True"):
        block(16, 2, norm_first=True, normalize_first=True)


def test_both_spellings_of_a_call_mask_are_refused(rng):
    x = rng.normal(size=(1, 3, 8)).astype("float32")
    mask = np.ones((1, 3), bool)
    with pytest.raises(ValueError, match=r"`x_mask`.*`padding_mask`.*Received: x_mask="):
        TransformerEncoderBlock(16, 2)(x, x_mask=mask, padding_mask=mask)
    decoder = TransformerDecoderBlock(16, 2)
    for ours, theirs in [("x_mask", "decoder_padding_mask"),
                         ("memory_mask", "encoder_padding_mask"),
                         ("attention_mask", "decoder_attention_mask"),
                         ("memory_attention_mask", "encoder_attention_mask")]:
        with pytest.raises(ValueError, match=rf"`{ours}`.*`{theirs}`.*Received: {ours}="):
            decoder(x, x, **{ours: mask, theirs: mask})


def projection_kernels(block):
    """Every kernel of a built block's attention and feed-forward projections."""
    return {v.path: to_numpy(v) for v in block.weights
            if v.path.endswith("kernel") and "norm" not in v.path}


@pytest.mark.parametrize("Block", [TransformerEncoderBlock, TransformerDecoderBlock])
def test_initializers_reach_every_projection_a_copy_each(Block, tmp_path):
    x = np.ones((1, 3, 16), "float32")
    block = Block(32, 4, kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
                  bias_initializer="ones")
    block(x) if Block is TransformerEncoderBlock else block(x, x)
    kernels = projection_kernels(block)
    expected = 6 if Block is TransformerEncoderBlock else 10  # q, k, v, o (x2), hidden, out
    assert len(kernels) == expected
    for path, kernel in kernels.items():
        assert np.abs(kernel).max() <= 0.04 + 1e-6, path  # truncated at 2 standard deviations
        assert 0.01 < kernel.std() < 0.025, path
    biases = [to_numpy(v) for v in block.weights
              if v.path.endswith("bias") and "norm" not in v.path]
    assert biases and all(np.all(b == 1.0) for b in biases)
    # A seeded initializer is kept in the config: the same weights again from it.
    seeded = Block(32, 4, kernel_initializer=keras.initializers.GlorotUniform(seed=3))
    seeded(x) if Block is TransformerEncoderBlock else seeded(x, x)
    again = Block.from_config(seeded.get_config())
    again(x) if Block is TransformerEncoderBlock else again(x, x)
    for (path, a), b in zip(projection_kernels(seeded).items(),
                            projection_kernels(again).values()):
        np.testing.assert_array_equal(a, b, err_msg=path)  # the config keeps the seed
    config = keras.initializers.serialize(keras.initializers.GlorotUniform(seed=3))
    assert seeded.get_config()["kernel_initializer"] == config


def test_default_initializers_are_keras_defaults_in_every_form():
    block = TransformerDecoderBlock(
        16, 2, kernel_initializer=keras.initializers.GlorotUniform(),
        bias_initializer={"class_name": "Zeros", "config": {}},
    )
    assert isinstance(block.kernel_initializer, keras.initializers.GlorotUniform)
    assert isinstance(block.bias_initializer, keras.initializers.Zeros)
    assert isinstance(TransformerEncoderBlock(16, 2).kernel_initializer,
                      keras.initializers.GlorotUniform)


def test_keras_hub_cache_arguments_point_to_call_cached_and_the_compat_decoder(rng):
    x = rng.normal(size=(1, 3, 8)).astype("float32")
    block = TransformerDecoderBlock(16, 2)
    cache = np.zeros((1, 2, 3, 2, 4), "float32")
    with pytest.raises(ValueError, match=(
        r"keras_attention\.compat\.keras_hub\.TransformerDecoder.*call_cached.*"
        r"Received: self_attention_cache=<tensor of shape \(1, 2, 3, 2, 4\)>, "
        r"self_attention_cache_update_index=0$"
    )):
        block(x, self_attention_cache=cache, self_attention_cache_update_index=0)
    # The class the message names takes them: keras-hub's cached call form.
    y, new_cache = compat_hub.TransformerDecoder(16, 2)(
        x[:, :1], self_attention_cache=cache, self_attention_cache_update_index=0)
    assert (tuple(y.shape), tuple(new_cache.shape)) == ((1, 1, 8), (1, 2, 3, 2, 4))
    # keras-hub's "no cache" (None) is accepted.
    assert tuple(block(x, self_attention_cache=None).shape) == (1, 3, 8)


def keras_hub_classifier(TransformerEncoder):
    """A keras-hub text classifier, written once for either block class."""
    token_ids = keras.Input(shape=(12,), dtype="int32")
    x = keras_hub.layers.TokenAndPositionEmbedding(
        vocabulary_size=50, sequence_length=12, embedding_dim=16, mask_zero=True
    )(token_ids)
    x = TransformerEncoder(intermediate_dim=32, num_heads=2, dropout=0.1)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(token_ids, keras.layers.Dense(2)(x))


def keras_hub_language_model(TransformerDecoder):
    """A keras-hub decoder-only language model, written once for either block class."""
    token_ids = keras.Input(shape=(12,), dtype="int32")
    x = keras_hub.layers.TokenAndPositionEmbedding(50, 12, 16, mask_zero=True)(token_ids)
    x = TransformerDecoder(32, 2, normalize_first=True)(x, decoder_padding_mask=token_ids != 0)
    return keras.Model(token_ids, keras.layers.Dense(50)(x))


@pytest.mark.parametrize("build, block", [
    (keras_hub_classifier, TransformerEncoderBlock),
    (keras_hub_language_model, TransformerDecoderBlock),
], ids=["encoder_classifier", "decoder_language_model"])
def test_keras_hub_model_with_the_import_swapped_trains_and_saves(build, block, rng, tmp_path):
    model = build(block)
    assert any(isinstance(layer, block) for layer in model.layers)
    tokens = rng.integers(1, 50, size=(4, 12)).astype("int32")
    tokens[:, 9:] = 0
    targets = rng.integers(0, 2, size=(4,)) if build is keras_hub_classifier else tokens
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    loss = model.train_on_batch(tokens, targets)
    assert np.isfinite(loss)
    assert any(not np.allclose(b, to_numpy(w)) for b, w in zip(before, model.trainable_weights))
    path = tmp_path / "model.keras"
    model.save(path)
    np.testing.assert_allclose(
        to_numpy(keras.saving.load_model(path)(tokens)), to_numpy(model(tokens)), atol=ATOL
    )
