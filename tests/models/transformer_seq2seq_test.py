import pathlib

import keras
import numpy as np
import pytest

from keras_attention.data import make_task, sequence_accuracy
from keras_attention.decoding import (
    BEAM_SLOTS,
    SOURCE_STATE,
    BeamSampler,
    RandomSampler,
    TopKSampler,
)
from keras_attention.models import GenerationResult, Seq2SeqModel, transformer_seq2seq
from tests.models.generation_checks import (
    SOURCE,
    assert_cached_generation_equals_recomputation,
    assert_greedy_equivalences,
)
from tests.test_case import EAGER_AND_XLA, GRAPH_FIT_JIT_COMPILE, LEARNS_ON_TENSORFLOW

SMALL = dict(num_layers=2, hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0,
             max_length=32)
FIXTURES = pathlib.Path(__file__).parent.parent / "fixtures"
def small_model(**kwargs):
    keras.utils.set_random_seed(0)
    return transformer_seq2seq(20, **{**SMALL, **kwargs})


@pytest.fixture(scope="module")
def shared_models():
    """`get(key, build)`: the model `build()` made once per module under
    `key`, for the tests that only read a model, so that they share its
    construction and its compiled generation functions (on TensorFlow each
    model compiles its own; on JAX each traces its own)."""
    models = {}

    def get(key, build):
        if key not in models:
            models[key] = build()
        return models[key]

    return get


def shared_small_model(shared_models, **kwargs):
    """`small_model(**kwargs)`, shared by the module's read-only tests."""
    return shared_models(("small", tuple(sorted(kwargs.items()))),
                         lambda: small_model(**kwargs))


@pytest.fixture(scope="module")
def model(shared_models):
    """One model shared by the read-only tests: compiled functions are reused."""
    return shared_small_model(shared_models)


def assert_reload_generates_identically(model, reloaded):
    """`reloaded` gives `model`'s compiled generation: the same tokens and
    logits (the call that assert_cached_generation_equals_recomputation's
    compiled case makes, so a shared model compiles it once)."""
    expected = model.generate(SOURCE, 6, return_logits=True, jit_compile=True)
    result = reloaded.generate(SOURCE, 6, return_logits=True, jit_compile=True)
    np.testing.assert_array_equal(result.token_ids, expected.token_ids)
    np.testing.assert_array_equal(result.logits, expected.logits)


@pytest.mark.parametrize("jit_compile", EAGER_AND_XLA)
@pytest.mark.parametrize(
    "kwargs",
    [{"position": "sinusoidal"}, {"position": "rotary", "num_key_value_heads": 1},
     {"position": "learned", "norm_first": False},
     {"num_decoder_layers": 1, "decoder_num_heads": 4, "decoder_intermediate_dim": 24}],
    ids=["sinusoidal", "rotary_mqa", "learned_post_norm", "deep_encoder"],
)
@pytest.mark.large
def test_cached_generation_equals_full_recomputation(kwargs, jit_compile, shared_models):
    assert_cached_generation_equals_recomputation(shared_small_model(shared_models, **kwargs),
                                                  jit_compile)


def test_the_decoder_may_have_its_own_depth_heads_and_width(tmp_path):
    """`num_decoder_layers`, `decoder_num_heads`, `decoder_intermediate_dim`
    (None: the encoder's); saved and reloaded identically, and a `.keras`
    file saved before they existed loads with the encoder's sizes."""
    model = small_model(num_layers=2, num_decoder_layers=1, decoder_num_heads=4,
                        decoder_intermediate_dim=24)
    assert (len(model.encoder_blocks), len(model.decoder_blocks)) == (2, 1)
    encoder, decoder = model.encoder_blocks[0], model.decoder_blocks[0]
    assert (encoder.num_heads, decoder.num_heads) == (SMALL["num_heads"], 4)
    assert (encoder.intermediate_dim, decoder.intermediate_dim) == (
        SMALL["intermediate_dim"], 24)
    inputs = {"encoder_token_ids": SOURCE, "decoder_token_ids": SOURCE[:, :4]}
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_array_equal(np.asarray(reloaded(inputs)), np.asarray(model(inputs)))
    assert reloaded.config == model.config
    older = {k: v for k, v in small_model().get_config().items() if not k.startswith(
        ("num_decoder", "decoder_"))}
    symmetric = type(model).from_config(older)
    assert (symmetric.config.num_decoder_layers, symmetric.config.decoder_num_heads,
            symmetric.config.decoder_intermediate_dim) == (
        SMALL["num_layers"], SMALL["num_heads"], SMALL["intermediate_dim"])
    for name in ("num_decoder_layers", "decoder_num_heads", "decoder_intermediate_dim"):
        with pytest.raises(ValueError, match=rf"`{name}`.*Received: {name}=0"):
            small_model(**{name: 0})


@pytest.mark.large
def test_beam_of_one_top_k_of_one_and_zero_temperature_equal_greedy(model):
    assert_greedy_equivalences(model)


def test_beam_search_shares_the_encoder_and_returns_sorted_n_best(model, monkeypatch):
    """The beams of a source read its cross-attention caches once (`B` rows,
    not `B * K`) and keep their self-attention caches in beam slots (`B`
    sources, `K` slots, never reordered); tokens, scores and attention are
    those of the encoder output tiled over the beams, with a cache per
    row reordered at every step."""
    def search():
        sampler = BeamSampler(num_beams=3, num_return_sequences=3, length_penalty=0.6,
                              coverage_penalty=0.2)
        return model.generate(SOURCE, 6, sampler, return_scores=True, return_attention=True,
                              jit_compile=False)

    states = []
    init = type(model).init_decoder_state
    monkeypatch.setattr(type(model), "init_decoder_state", lambda self, *a, **k: states.append(
        init(self, *a, **k)) or states[-1])
    result = search()
    assert result.token_ids.shape == (2, 3, 6)
    assert (np.diff(result.scores, axis=1) <= 1e-6).all()
    cross = states[-1][SOURCE_STATE]["cross_caches"][0]["cross_attention"][0]
    slots = states[-1][BEAM_SLOTS]["self_caches"][0][1]  # values (B, K, L * R, d)
    assert (cross.shape[0], slots.shape[0], slots.shape[2]) == (2, 2, 6 * 3)
    assert "self_caches" not in states[-1] and states[-1]["ancestry"].shape == (6, 6)
    monkeypatch.setattr(type(model), "shares_source_across_beams", False)
    tiled = search()
    assert states[-1][SOURCE_STATE]["cross_caches"][0]["cross_attention"][0].shape[0] == 6
    assert states[-1]["self_caches"][0][0].shape[0] == 6 and BEAM_SLOTS not in states[-1]
    np.testing.assert_array_equal(result.token_ids, tiled.token_ids)
    np.testing.assert_allclose(result.scores, tiled.scores, atol=1e-5)
    np.testing.assert_allclose(result.attention, tiled.attention, atol=1e-6)


def test_sampling_is_reproducible_with_a_seed(model):
    a = model.generate(SOURCE, 8, RandomSampler(seed=3))
    np.testing.assert_array_equal(a, model.generate(SOURCE, 8, RandomSampler(seed=3)))
    np.testing.assert_array_equal(a, model.generate(SOURCE, 8, RandomSampler(seed=3),
                                                    jit_compile=False))


def test_second_call_with_same_shapes_does_not_retrace(model):
    model.generate(SOURCE, max_length=5)
    traces = model.generate_trace_count()
    model.generate(SOURCE + 1 * (SOURCE > 0), max_length=5)
    model.generate(SOURCE[:, :3], max_length=5)  # same length bucket
    assert model.generate_trace_count() == traces


def test_attention_of_generated_tokens_ignores_source_padding(model):
    result = model.generate(SOURCE, 4, return_attention=True)
    assert isinstance(result, GenerationResult)
    assert result.attention.shape == (2, 4, 5)
    assert (result.attention[1, :, 2:] == 0).all()
    np.testing.assert_allclose(
        result.attention[0].sum(-1)[result.token_ids[0] != 0], 1.0, atol=1e-5
    )


@pytest.mark.large
def test_prompt_is_kept_and_batches_give_the_same_tokens(model):
    prompt = np.array([[7, 8], [9, 9]], "int32")
    out = model.generate(SOURCE, 5, decoder_prompt=prompt)
    np.testing.assert_array_equal(out[:, :2], prompt)
    np.testing.assert_array_equal(
        model.generate(SOURCE, 5, batch_size=1), model.generate(SOURCE, 5)
    )


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"max_length": 1, "decoder_prompt": np.ones((2, 3), "int32")},
         r"max_length.*prompt length.*Received: max_length=1"),
        ({"sampler": TopKSampler(k=21)}, r"vocab_size=20.*Received: k=21"),
        ({"sampler": "viterbi"}, r"`sampler`.*Received: sampler='viterbi'"),
    ],
)
def test_bad_generation_arguments(kwargs, pattern, model):
    kwargs = {"max_length": 5, **kwargs}
    with pytest.raises(ValueError, match=pattern):
        model.generate(SOURCE, **kwargs)


@pytest.mark.large
def test_save_and_reload_gives_identical_outputs_and_generations(tmp_path, shared_models):
    """Rotary positions with one key-value head: the model of
    test_cached_generation_equals_full_recomputation[rotary_mqa-*], shared."""
    model = shared_small_model(shared_models, position="rotary", num_key_value_heads=1)
    inputs = {"encoder_token_ids": SOURCE, "decoder_token_ids": SOURCE}
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(reloaded, Seq2SeqModel)
    assert reloaded.end_token_id == model.end_token_id
    assert reloaded.get_config() == model.get_config()
    np.testing.assert_array_equal(reloaded(inputs), model(inputs))
    assert_reload_generates_identically(model, reloaded)


@pytest.mark.same_path_on("jax", reason=(
    "Keras' loss with ignore_class over the model's keras.ops outputs, the same code on every "
    "backend; JAX's `fit` on padded batches is tests/recipes/backends_test.py's"))
def test_loss_ignores_padding():
    model = small_model()
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))
    inputs, labels = make_task("reverse", 8, vocab_size=20, max_length=5)
    padded = {k: np.pad(v, ((0, 0), (0, 3))) for k, v in inputs.items()}
    np.testing.assert_allclose(
        model.evaluate(padded, np.pad(labels, ((0, 0), (0, 3))), verbose=0),
        model.evaluate(inputs, labels, verbose=0), rtol=1e-5,
    )


@pytest.mark.large
@pytest.mark.same_path_on("jax", reason=(
    "which positions the start mask hides is Python over keras.ops, the same on every "
    "backend; on JAX the cached logits equal the full call's in "
    "test_cached_generation_equals_full_recomputation"))
def test_a_start_token_with_the_pad_id_is_not_masked():
    """Marian and T5 start the decoder with their pad id: the training call
    must give the logits the cached decoder gives after that start (it
    masked the start as padding, so every position attended to nothing at
    first), and the loss must count the first label."""
    model = small_model()
    prompt = np.array([[5, 6, 7], [8, 9, 0]], "int32")
    result = model.generate(SOURCE[:2], 4, decoder_prompt=prompt[:, :3],
                            decoder_start_token_id=0, return_logits=True)
    decoder = np.concatenate([np.zeros((2, 1), "int32"), prompt], axis=1)
    logits = keras.ops.convert_to_numpy(
        model({"encoder_token_ids": SOURCE[:2], "decoder_token_ids": decoder}))
    valid = decoder != 0
    valid[:, 0] = True
    np.testing.assert_allclose(logits[valid], np.asarray(result.logits)[valid], atol=1e-5)
    labels = np.array([[5, 6, 7, 2], [8, 9, 2, 0]], "int32")
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                  ignore_class=0))
    loss = model.evaluate({"encoder_token_ids": SOURCE[:2], "decoder_token_ids": decoder},
                          labels, verbose=0)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
    np.testing.assert_allclose(loss, -picked[labels != 0].mean(), rtol=1e-5)


@pytest.mark.same_path_on("jax", reason=(
    "Python maps an old file's variables, the same on every backend; files saved under "
    "TensorFlow give their outputs on JAX in tests/layers/cross_backend_test.py"))
def test_models_saved_before_the_start_mask_load_with_identical_outputs():
    """`tests/fixtures/transformer_seq2seq_before_start_mask.keras` was saved
    by the code before `masks.decoder_token_mask` (commit `2402e23`)."""
    saved = np.load(FIXTURES / "transformer_seq2seq_before_start_mask_io.npz")
    model = keras.saving.load_model(FIXTURES / "transformer_seq2seq_before_start_mask.keras")
    logits = model.predict({"encoder_token_ids": saved["source"],
                            "decoder_token_ids": saved["target"]}, verbose=0)
    np.testing.assert_allclose(logits, saved["logits"], atol=1e-6)


@pytest.mark.large
@pytest.mark.slow_on("jax", "torch", reason=LEARNS_ON_TENSORFLOW)
def test_learns_to_reverse_sequences_end_to_end():
    """Training, caching and decoding agree: near-perfect exact match."""
    keras.utils.set_random_seed(0)
    x, y = make_task("reverse", 3008, seed=0)  # 47 whole batches: one compiled step
    test_x, test_y = make_task("reverse", 100, seed=1)
    model = transformer_seq2seq(16, num_layers=2, hidden_dim=64, num_heads=4,
                                intermediate_dim=128, dropout=0.0, max_length=16)
    # Adam at 1e-3 reaches 0.97-1.0 from the fourth epoch on (1.0 greedy and
    # beam after the fifth); at 2e-3 the exact match swung between 0.8 and
    # 0.95 from epoch to epoch.
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=True,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))
    model.fit(x, y, batch_size=64, epochs=5, verbose=0)
    predicted = model.generate(test_x["encoder_token_ids"], max_length=9)
    assert sequence_accuracy(predicted, test_y) >= 0.95
    beam = model.generate(test_x["encoder_token_ids"], max_length=9, sampler="beam")
    assert sequence_accuracy(beam, test_y) >= 0.95


@pytest.mark.large
def test_mixed_precision_trains_and_generates_finite():
    model = small_model(dtype="mixed_bfloat16")
    model.compile(optimizer="adam", jit_compile=GRAPH_FIT_JIT_COMPILE,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))
    x, y = make_task("copy", 32, vocab_size=20, max_length=5)
    history = model.fit(x, y, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert model.generate(SOURCE, 4).shape == (2, 4)


def test_invalid_builder_args():
    with pytest.raises(ValueError, match=r"position.*Received: position='alibi'"):
        transformer_seq2seq(10, position="alibi")
    with pytest.raises(ValueError, match=r"must differ.*Received"):
        transformer_seq2seq(10, **SMALL, pad_token_id=1, start_token_id=1)


@pytest.mark.large
@pytest.mark.tf_only("tf.data input pipeline")
def test_fits_on_a_tf_data_dataset_of_inputs_and_labels():
    import tensorflow as tf

    model = small_model()
    # A graph, not XLA: the subject is the input pipeline (XLA's train step is
    # test_learns_to_reverse_sequences_end_to_end's, which compiles it once).
    model.compile(optimizer="adam", jit_compile=False,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))
    x, y = make_task("sort", 64, vocab_size=20, max_length=6)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(64).batch(16)
    history = model.fit(dataset, epochs=2, shuffle=False, verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]


# Pointer-generator output (See et al. 2017) ---------------------------------


def pointer_model(**kwargs):
    return small_model(pointer_generator=True, **kwargs)


@pytest.fixture(scope="module")
def shared_pointer_model(shared_models):
    """`pointer_model()`, shared by the read-only pointer-generator tests."""
    return shared_small_model(shared_models, pointer_generator=True)


@pytest.mark.large
@pytest.mark.parametrize("jit_compile", EAGER_AND_XLA)
def test_pointer_generator_cached_generation_equals_full_recomputation(jit_compile,
                                                                       shared_pointer_model):
    assert_cached_generation_equals_recomputation(shared_pointer_model, jit_compile)


@pytest.mark.same_path_on("jax", reason=(
    "the coverage loss is keras.ops arithmetic, the same on every backend; on JAX the "
    "pointer-generator's probabilities sum to one in tests/layers/pointer_generator_test.py and "
    "its full call is compared in test_pointer_generator_cached_generation_equals_full_"
    "recomputation"))
def test_pointer_generator_outputs_log_probabilities_and_a_coverage_loss():
    model = pointer_model(coverage_loss_weight=2.0)
    log_probs = model({"encoder_token_ids": SOURCE, "decoder_token_ids": SOURCE[:, :3]})
    np.testing.assert_allclose(np.exp(np.asarray(log_probs)).sum(-1), 1.0, atol=1e-5)
    assert len(model.losses) == 1 and float(model.losses[0]) > 0.0
    assert model.get_config()["pointer_generator"] is True
    assert model.get_config()["coverage_loss_weight"] == 2.0


@pytest.mark.large
@pytest.mark.same_path_on("jax", reason=(
    "the samplers' equivalences are the decoding code that JAX runs on the transformer in "
    "test_beam_of_one_top_k_of_one_and_zero_temperature_equal_greedy; the pointer-generator's "
    "compiled generation on JAX is test_pointer_generator_cached_generation_equals_full_"
    "recomputation[xla]"))
def test_pointer_generator_greedy_equivalences_and_beam_attention(shared_pointer_model):
    model = shared_pointer_model
    # A beam of one over the mixture's log-probabilities is greedy; top-k of
    # one and temperature zero are the samplers' code over any scores, the
    # transformer's test_beam_of_one_top_k_of_one_and_zero_temperature_equal_greedy.
    np.testing.assert_array_equal(model.generate(SOURCE, 6, BeamSampler(num_beams=1)),
                                  model.generate(SOURCE, max_length=6))
    result = model.generate(SOURCE, 6, BeamSampler(num_beams=3), return_attention=True)
    assert result.attention.shape == (2, 6, 5)
    assert (result.attention[1, :, 2:] == 0).all()  # copy attention skips padding


@pytest.mark.large
@pytest.mark.same_path_on("jax", reason=(
    "Keras' saving, the same on every backend: on JAX a reloaded model generates identically "
    "in test_save_and_reload_gives_identical_outputs_and_generations, and the pointer-generator "
    "layer saved under TensorFlow loads in tests/layers/cross_backend_test.py"))
def test_pointer_generator_save_and_reload(tmp_path, shared_pointer_model):
    model = shared_pointer_model
    inputs = {"encoder_token_ids": SOURCE, "decoder_token_ids": SOURCE}
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_array_equal(reloaded(inputs), model(inputs))
    assert_reload_generates_identically(model, reloaded)


@pytest.mark.large
@pytest.mark.slow_on("jax", "torch", reason=LEARNS_ON_TENSORFLOW)
def test_pointer_generator_learns_to_copy_under_xla():
    keras.utils.set_random_seed(0)
    x, y = make_task("copy", 1536, vocab_size=40, max_length=8, seed=0)  # 24 whole batches
    test_x, test_y = make_task("copy", 100, vocab_size=40, max_length=8, seed=1)
    model = transformer_seq2seq(40, num_layers=1, hidden_dim=32, num_heads=2,
                                intermediate_dim=64, dropout=0.0, max_length=16,
                                pointer_generator=True)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=True,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))
    model.fit(x, y, batch_size=64, epochs=4, verbose=0)
    predicted = model.generate(test_x["encoder_token_ids"], max_length=10)
    assert sequence_accuracy(predicted, test_y) >= 0.9


def test_pointer_generator_needs_one_vocabulary():
    with pytest.raises(ValueError, match=r"same.*Received: vocabulary_size=10, "
                                         r"target_vocabulary_size=12"):
        transformer_seq2seq(10, target_vocabulary_size=12, pointer_generator=True)
    with pytest.raises(TypeError, match=r"pointer_generator.*Received: pointer_generator=1"):
        transformer_seq2seq(10, pointer_generator=1)


# Each checkpoint family's options in combination (the
# relative position bias of T5 aside: its stand-in here is learned positions).
FAMILY_OPTIONS = {
    "bart": dict(norm_first=False, activation="gelu", position="learned",
                 position_offset=2, scale_embeddings=False, embedding_norm=True,
                 share_embeddings=True, tie_embeddings=True, layer_norm_epsilon=1e-5),
    "mbart": dict(norm_first=True, activation="gelu", position="learned",
                  position_offset=2, embedding_norm=True, final_norm=True,
                  share_embeddings=True, tie_embeddings=True, layer_norm_epsilon=1e-5),
    "marian": dict(norm_first=False, activation="swish", position="sinusoidal_halves",
                   share_embeddings=True, tie_embeddings=True),
    "t5": dict(norm_first=True, activation="relu", normalization="rms_norm",
               use_bias=False, output_bias=False, scale_embeddings=False,
               position="learned", share_embeddings=True, tie_embeddings=True,
               output_scale=16 ** -0.5, layer_norm_epsilon=1e-6),
    "t5_v1_1": dict(norm_first=True, activation="gelu_approximate",
                    gated_feed_forward=True, normalization="rms_norm", use_bias=False,
                    output_bias=False, scale_embeddings=False, position="learned",
                    share_embeddings=True, layer_norm_epsilon=1e-6),
}


def family_model(family, **kwargs):
    model = small_model(**FAMILY_OPTIONS[family], **kwargs)
    if model.output_projection.bias is not None:  # a non-zero final logits bias
        model.output_projection.bias.assign(
            np.random.default_rng(0).normal(size=model.output_projection.bias.shape))
    return model


def shared_family_model(shared_models, family):
    """`family_model(family)`, shared by the module's read-only tests."""
    return shared_models(("family", family), lambda: family_model(family))


# The family options change the model, not how generation is compiled: on
# JAX its eager case (the loop compiled by lax.while_loop all the same, ops
# run one by one around it: ~5x the xla case's time) checks nothing the
# position cases above do not; on torch the xla case is the eager one.
FAMILY_COMPILE = [
    pytest.param(False, id="eager", marks=pytest.mark.same_path_on(
        "jax", reason="the same model code as the xla case; eager generation is "
        "checked by the position cases")),
    EAGER_AND_XLA[1],
]


@pytest.mark.large
@pytest.mark.parametrize("jit_compile", FAMILY_COMPILE)
@pytest.mark.parametrize("family", sorted(FAMILY_OPTIONS))
def test_family_options_cached_generation_equals_full_recomputation(family, jit_compile,
                                                                    shared_models):
    assert_cached_generation_equals_recomputation(shared_family_model(shared_models, family),
                                                  jit_compile)


@pytest.mark.large
@pytest.mark.same_path_on("jax", reason=(
    "the saving, loading and compiled generation of test_save_and_reload_gives_identical_"
    "outputs_and_generations with other options (Keras' config and weights files, the same "
    "on every backend: TensorFlow runs every family); JAX generates with each family in "
    "test_family_options_cached_generation_equals_full_recomputation"))
@pytest.mark.parametrize("family", sorted(FAMILY_OPTIONS))
def test_family_options_save_and_reload_identically(family, tmp_path, shared_models):
    model = shared_family_model(shared_models, family)
    inputs = {"encoder_token_ids": SOURCE, "decoder_token_ids": SOURCE[:, :4]}
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert reloaded.get_config() == model.get_config()
    np.testing.assert_array_equal(np.asarray(reloaded(inputs)), np.asarray(model(inputs)))
    assert_reload_generates_identically(model, reloaded)
    for option, value in FAMILY_OPTIONS[family].items():
        assert model.get_config()[option] == value


@pytest.mark.large
@pytest.mark.parametrize("family", [
    pytest.param("bart", marks=pytest.mark.same_path_on("jax", reason=(
        "JAX runs the t5_v1_1 case (relative bias, gated feed-forward, RMS norm) and fits and "
        "generates under mixed precision in test_mixed_precision_trains_and_generates_finite"))),
    "t5_v1_1",
])
def test_family_options_under_mixed_bfloat16_are_finite(family):
    model = family_model(family, dtype="mixed_bfloat16")
    logits = np.asarray(model({"encoder_token_ids": SOURCE, "decoder_token_ids": SOURCE}))
    assert logits.dtype == np.float32 and np.isfinite(logits).all()
    assert np.isfinite(model.generate(SOURCE, 6, BeamSampler(num_beams=2), return_scores=True)
                       .scores).all()


@pytest.mark.same_path_on("jax", reason=(
    "which variables a tied model holds is Python, the same on every backend; on JAX the "
    "tied logits are the full call of test_family_options_cached_generation_equals_full_"
    "recomputation[marian-xla]"))
def test_shared_and_tied_embeddings_are_one_table(shared_models):
    model = shared_family_model(shared_models, "marian")
    table = model.source_embedding.token_embedding
    assert model.target_embedding.token_embedding is table
    paths = [w.path for w in model.weights]
    assert len(paths) == len(set(paths))
    assert [p for p in paths if "token_embedding" in p] == [
        "source_embedding/token_embedding/embeddings"]
    inputs = {"encoder_token_ids": SOURCE, "decoder_token_ids": SOURCE[:, :3]}
    hidden_model = keras.Model(model.inputs, model.get_layer("logits").input)
    hidden = np.asarray(hidden_model(inputs))
    expected = hidden @ np.asarray(table.embeddings).T + np.asarray(model.output_projection.bias)
    np.testing.assert_allclose(np.asarray(model(inputs)), expected, atol=1e-4)


def test_defaults_build_the_historical_model(model):
    """No new layer or weight by default: files of earlier versions load
    (`model` is `small_model()`, shared)."""
    paths = sorted(w.path for w in model.weights)
    assert not [p for p in paths if "embedding_norm" in p or "final_logits_bias" in p]
    assert "logits/bias" in paths and "encoder_norm/gamma" in paths
    assert model.encoder_norm.epsilon == 1e-3
    assert small_model(norm_first=False).encoder_norm is None


def test_invalid_family_options():
    with pytest.raises(ValueError, match=r"share_embeddings.*Received: vocabulary_size=20, "
                                         r"target_vocabulary_size=30"):
        small_model(target_vocabulary_size=30, share_embeddings=True)
    with pytest.raises(ValueError, match=r"Received: pointer_generator=True, tie_embeddings=True"):
        small_model(pointer_generator=True, tie_embeddings=True)
    with pytest.raises(ValueError, match=r"Received: output_scale=0"):
        small_model(output_scale=0)
    with pytest.raises(ValueError, match=r"Received: normalization='batch'"):
        small_model(normalization="batch")
    with pytest.raises(ValueError, match=r"Received: position='sinusoidal_split'"):
        small_model(position="sinusoidal_split")
    with pytest.raises(TypeError, match=r"Received: final_norm='yes'"):
        small_model(final_norm="yes")
    with pytest.raises(ValueError, match=r"Received: layer_norm_epsilon=-1"):
        small_model(layer_norm_epsilon=-1)


# Marian: pad = decoder start = the last id, end = 0; BART: pad 1, start = end = 2
# (and no embedding scale, `transformers`' default).
SPECIAL_TOKENS = {
    "marian": lambda vocab: dict(pad_token_id=vocab - 1, eos_token_id=0,
                                 decoder_start_token_id=vocab - 1,
                                 scale_embedding=True),  # as in the OPUS-MT configs
    "bart": lambda vocab: dict(pad_token_id=1, eos_token_id=2, decoder_start_token_id=2),
}


def _transformers_model(family, vocab):
    """A random two-layer `MarianMTModel` or `BartForConditionalGeneration`
    (layer norms and `final_logits_bias` random too; Marian's sinusoidal
    table kept)."""
    import torch
    import transformers

    from tests.layers.hf_reference import bart_style_config

    config = bart_style_config(
        family, encoder_layers=2, decoder_layers=2, max_position_embeddings=32,
        activation_function="swish" if family == "marian" else "gelu",
        vocab_size=vocab, **SPECIAL_TOKENS[family](vocab),
    )
    model_class = {"marian": transformers.MarianMTModel,
                   "bart": transformers.BartForConditionalGeneration}[family]
    torch.manual_seed(0)
    hf = model_class(config).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, parameter in hf.named_parameters():
            if "embed_positions" not in name or family != "marian":
                parameter.copy_(0.5 * torch.randn(parameter.shape, generator=generator))
        hf.final_logits_bias.copy_(torch.randn(hf.final_logits_bias.shape, generator=generator))
    return hf


@pytest.mark.same_path_on("jax", reason=(
    "tests/pretrained/bart_test.py converts Marian and BART models of transformers onto "
    "these blocks on JAX and compares their logits and generated tokens"))
@pytest.mark.parametrize("family", ["marian", "bart"])
def test_family_options_rebuild_transformers_models(family):
    """A whole Marian / BART model of `transformers` rebuilt on our blocks
    with its weights copied: the same logits on padded inputs, in a full
    pass and through cached generation (greedy tokens included)."""
    import torch

    from tests.layers.hf_reference import numpy_of, set_bart_layer, set_norm

    vocab = 24
    hf = _transformers_model(family, vocab)
    options = dict(FAMILY_OPTIONS[family])
    pad = hf.config.pad_token_id
    if family == "bart":
        options["scale_embeddings"] = False
    # Our models need three different special ids and mask the pad id in the
    # decoder too, where Marian starts the decoder with its pad id and BART
    # with its end id: the decoder starts here with id 3 in both models (the
    # `transformers` models give any start id no special treatment).
    model = transformer_seq2seq(
        vocab, num_layers=2, hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0,
        max_length=32, pad_token_id=pad, start_token_id=3,
        end_token_id=hf.config.eos_token_id, **options,
    )
    model.source_embedding.token_embedding.embeddings.assign(numpy_of(hf.model.shared.weight))
    for ours, theirs in ((model.encoder_blocks, hf.model.encoder.layers),
                         (model.decoder_blocks, hf.model.decoder.layers)):
        for block, layer in zip(ours, theirs):
            set_bart_layer(block, layer)
    if family == "bart":
        for side in ("encoder", "decoder"):
            side_model = getattr(hf.model, side)
            embedding = model.source_embedding if side == "encoder" else model.target_embedding
            embedding.position_encoding.embedding.embeddings.assign(
                numpy_of(side_model.embed_positions.weight))
            norm = model.source_embedding_norm if side == "encoder" else model.target_embedding_norm
            set_norm(norm, side_model.layernorm_embedding)
    model.output_projection.bias.assign(numpy_of(hf.final_logits_bias)[0])

    source = np.array([[5, 6, 7, 8, 9], [10, 11, 12, pad, pad]])
    target = np.array([[model.start_token_id, 4, 5, 6], [model.start_token_id, 7, 8, 3]])
    with torch.no_grad():
        expected = hf(input_ids=torch.as_tensor(source),
                      attention_mask=torch.as_tensor(source != pad),
                      decoder_input_ids=torch.as_tensor(target)).logits.numpy()
    logits = np.asarray(model({"encoder_token_ids": source, "decoder_token_ids": target}))
    np.testing.assert_allclose(logits, expected, atol=1e-4)
    result = model.generate(source, max_length=5, return_logits=True)
    with torch.no_grad():
        full = hf(input_ids=torch.as_tensor(source), attention_mask=torch.as_tensor(source != pad),
                  decoder_input_ids=torch.as_tensor(np.concatenate(
                      [target[:, :1], result.token_ids[:, :-1]], 1))).logits.numpy()
    ends = (result.token_ids == model.end_token_id) | (result.token_ids == pad)
    for row in range(2):
        upto = np.flatnonzero(ends[row])[0] + 1 if ends[row].any() else 5
        np.testing.assert_allclose(result.logits[row, :upto], full[row, :upto], atol=1e-4)


@pytest.mark.large
@pytest.mark.same_path_on("jax", reason=(
    "tests/models/seq2seq_model_test.py::test_a_quantized_model_round_trips_through_a_keras_"
    "file[transformer_tied] quantizes a shared, tied model to int8 on JAX and generates"))
def test_shared_tied_model_quantizes_to_int8():
    model = family_model("marian")
    inputs = {"encoder_token_ids": SOURCE, "decoder_token_ids": SOURCE[:, :4]}
    before = np.asarray(model(inputs))
    model.quantize("int8")
    tables = {w.path: w.dtype for w in model.weights if "token_embedding" in w.path}
    assert tables["source_embedding/token_embedding/embeddings"] == "int8"
    np.testing.assert_allclose(np.asarray(model(inputs)), before, atol=0.05)
    # Eagerly: compiled int8 generation is seq2seq_model_test's int8 round trip
    # (a shared, tied model) and the converted families' int8 checks.
    assert model.generate(SOURCE, 6, jit_compile=False).shape == (2, 6)


def test_generate_refuses_positions_past_a_learned_position_table():
    """Issue 22: `generate(..., max_length=L)` past the table's rows used to
    read clamped positions under XLA and JAX (silently; zeros on a GPU),
    and a short source was padded past the table (a TensorFlow error
    without XLA). The decoder reads positions 0 .. L - 1 (the start token
    at 0), so L = max_length is the last that fits; BART's offset rows do
    not count."""
    model = small_model(position="learned", max_length=6, position_offset=2, num_layers=1)
    assert model.max_sequence_length() == 6
    source = np.array([[5, 6, 7, 0]])
    # TensorFlow without XLA is where the padding failed (XLA and JAX
    # clamped it, unseen); JAX compiles (its op-by-op loop is slow).
    jit_compile = keras.config.backend() == "jax"
    assert model.generate(source, max_length=6, jit_compile=jit_compile).shape == (1, 6)
    with pytest.raises(ValueError, match=r"`max_length` must be at most 6.*"
                                         r"Received: max_length=7$"):
        model.generate(source, max_length=7)
    with pytest.raises(ValueError, match=r"`max_length` must be at most 6"):
        model.search(source, "greedy", 7)
    with pytest.raises(ValueError, match=r"`encoder_token_ids` may hold at most 6 tokens.*"
                                         r"Received: encoder_token_ids of length 7$"):
        model.generate(np.full((1, 7), 5), max_length=3)
    with pytest.raises(ValueError, match=r"`token_ids` may hold at most 6 positions"):
        model({"encoder_token_ids": source, "decoder_token_ids": np.ones((1, 7), "int32")})
    # Sinusoidal (and rotary) positions need no table: no limit.
    unlimited = small_model(max_length=6, num_layers=1)
    assert unlimited.max_sequence_length() is None
    assert unlimited.generate(np.full((1, 9), 5), max_length=10,
                              jit_compile=jit_compile).shape == (1, 10)
