"""`ContinuousDecoder`: rows that join and leave between steps get exactly
what `generate` gives each of them alone."""

import keras
import numpy as np
import pytest

from keras_attention.models import ContinuousDecoder, transformer_seq2seq

MAX_LENGTH = 9


@pytest.fixture(scope="module")
def model():
    """A tiny random model whose rows end at different steps, as a trained
    model's do: larger embeddings and output weights (varied tokens), and an
    end-token bias raised until the test lines end at 3 or more lengths."""
    keras.utils.set_random_seed(3)
    model = transformer_seq2seq(vocabulary_size=24, num_layers=2, hidden_dim=16, num_heads=2,
                                intermediate_dim=32, dropout=0.0, max_length=64,
                                norm_first=False)
    table = model.target_embedding.token_embedding.embeddings
    table.assign(keras.ops.convert_to_numpy(table) * 8)
    kernel, bias = model.output_projection.kernel, model.output_projection.bias
    kernel.assign(keras.ops.convert_to_numpy(kernel) * 6)
    lines = _lines(40)
    source = np.zeros((len(lines), 14), "int32")
    for i, line in enumerate(lines):
        source[i, :len(line)] = line
    base = keras.ops.convert_to_numpy(bias).copy()
    for raised in np.arange(0.0, 30.0, 0.5):
        values = base.copy()
        values[model.end_token_id] += raised
        bias.assign(values)
        lengths = np.sum(model.generate(source, MAX_LENGTH) != model.pad_token_id, axis=1)
        if len(set(lengths.tolist())) >= 3 and (lengths < MAX_LENGTH).mean() > 0.5:
            return model
    raise AssertionError("no end-token bias gives rows of 3 lengths")


def _lines(count, seed=0, longest=14):
    rng = np.random.default_rng(seed)
    return [rng.integers(3, 24, size=int(rng.integers(1, longest + 1))).astype("int32")
            for _ in range(count)]


def _run(decoder, lines, seed=1, ended_first=None):
    """Admits 0-3 lines before each step (as many as are free); `{i: tokens}`."""
    rng = np.random.default_rng(seed)
    pending, got, steps = list(range(len(lines))), {}, 0
    while pending or decoder.running:
        count = min(decoder.free, int(rng.integers(0, 4)), len(pending))
        if count:
            keys = [pending.pop(0) for _ in range(count)]
            decoder.admit([lines[k] for k in keys], keys)
        for key, tokens in decoder.step():
            assert key not in got
            got[key] = tokens
        steps += 1
        assert steps < 1000
    return got


def _alone(model, lines, **options):
    return [model.generate(line[None], MAX_LENGTH, **options)[0] for line in lines]


def test_rows_joining_and_leaving_get_generates_tokens(model):
    lines = _lines(40)
    decoder = ContinuousDecoder(model, max_length=MAX_LENGTH, batch_buckets=[1, 2, 4, 8],
                                source_buckets=[4, 8, 16])
    got = _run(decoder, lines)
    want = _alone(model, lines)
    assert sorted(got) == list(range(len(lines)))
    for i, tokens in enumerate(want):
        np.testing.assert_array_equal(got[i], tokens, err_msg=f"line {i}")
    # 40 lines of up to 9 steps through at most 8 slots: the cache (18
    # positions) was moved back many times, and rows ended at several lengths.
    assert len({int(np.sum(t != model.pad_token_id)) for t in want}) >= 3


def test_an_empty_source_is_all_padding_as_in_generate(model):
    decoder = ContinuousDecoder(model, max_length=MAX_LENGTH, batch_buckets=[2],
                                source_buckets=[8])
    line = _lines(1, seed=4)[0][:8]
    decoder.admit([np.zeros((0,), "int32"), line], ["empty", "line"])
    ended = {}
    while decoder.running:
        ended.update(decoder.step())
    np.testing.assert_array_equal(
        ended["empty"], model.generate(np.full((1, 8), model.pad_token_id), MAX_LENGTH)[0])
    np.testing.assert_array_equal(ended["line"], _alone(model, [line])[0])


def test_rules_and_suppressed_ids_per_row(model):
    lines = _lines(16, seed=5)
    options = dict(min_length=3, forced_eos_token_id=model.end_token_id,
                   suppress_token_ids=[5, 7], bad_words_ids=[[9]])
    decoder = ContinuousDecoder(model, max_length=MAX_LENGTH, batch_buckets=[2, 4],
                                source_buckets=[16], **options)
    got = _run(decoder, lines, seed=2)
    for i, tokens in enumerate(_alone(model, lines, **options)):
        np.testing.assert_array_equal(got[i], tokens, err_msg=f"line {i}")
        assert not np.isin(got[i], [5, 7, 9]).any()


def test_warm_up_compiles_every_shape_and_serving_compiles_nothing(model):
    decoder = ContinuousDecoder(model, max_length=MAX_LENGTH, batch_buckets=[1, 2, 4],
                                source_buckets=[8, 16])
    seen = []
    decoder.warm_up(lambda done, total, shape: seen.append((done, total, shape)))
    slots = (1, 2, 4) if keras.config.backend() == "torch" else (2, 4)  # one row runs as two
    assert [shape for _, _, shape in seen] == decoder.shapes() == [
        (b, s) for b in slots for s in (8, 16)]
    assert decoder.running == 0 and decoder.free == 4
    traces = model.generate_trace_count()
    _run(decoder, _lines(12, seed=7), seed=3)
    if keras.config.backend() != "torch":
        assert model.generate_trace_count() == traces


def test_drop_frees_the_slot_and_the_other_rows_go_on(model):
    decoder = ContinuousDecoder(model, max_length=MAX_LENGTH, batch_buckets=[1, 2],
                                source_buckets=[16])
    lines = _lines(3, seed=11)
    decoder.admit(lines[:2], ["kept", "gone"])
    decoder.drop(["gone", "never admitted"])
    assert decoder.running == 1 and decoder.free == 1
    decoder.admit(lines[2:], ["late"])
    ended = {}
    while decoder.running:
        ended.update(decoder.step())
    assert sorted(ended) == ["kept", "late"]
    np.testing.assert_array_equal(ended["kept"], _alone(model, lines[:1])[0])
    np.testing.assert_array_equal(ended["late"], _alone(model, lines[2:])[0])


def test_reset_drops_running_rows(model):
    decoder = ContinuousDecoder(model, max_length=MAX_LENGTH, batch_buckets=[1, 2],
                                source_buckets=[16])
    decoder.admit(_lines(2), ["a", "b"])
    assert decoder.running == 2 and decoder.free == 0
    decoder.reset()
    assert decoder.running == 0 and decoder.step() == []
    line = _lines(1, seed=9)[0]
    decoder.admit([line], ["c"])
    ended = []
    while decoder.running:
        ended += decoder.step()
    assert [key for key, _ in ended] == ["c"]
    np.testing.assert_array_equal(ended[0][1], _alone(model, [line])[0])


@pytest.mark.parametrize("arguments, named", [
    (dict(sampler="beam"), "sampler"),
    (dict(no_repeat_ngram_size=2), "no_repeat_ngram_size"),
    (dict(bad_words_ids=[[4, 5]]), "bad words"),
    (dict(batch_buckets=[4, 2]), "batch_buckets"),
    (dict(source_buckets=[]), "source_buckets"),
    (dict(max_length=0), "max_length"),
    (dict(suppress_token_ids=[2]), "suppress_token_ids"),
])
def test_refusals_name_the_argument(model, arguments, named):
    settings = dict(max_length=MAX_LENGTH, batch_buckets=[1, 2], source_buckets=[8])
    with pytest.raises(ValueError, match=named):
        ContinuousDecoder(model, **{**settings, **arguments})


def test_admit_refuses_what_does_not_fit(model):
    decoder = ContinuousDecoder(model, max_length=MAX_LENGTH, batch_buckets=[1, 2],
                                source_buckets=[8])
    with pytest.raises(ValueError, match="more rows than are free"):
        decoder.admit(_lines(3), [1, 2, 3])
    with pytest.raises(ValueError, match="at most 8 tokens. Received: a row of 9"):
        decoder.admit([np.arange(3, 12)], [1])
    assert decoder.running == 0


def test_a_model_with_a_copy_head_is_refused():
    copying = transformer_seq2seq(vocabulary_size=24, num_layers=1, hidden_dim=8, num_heads=2,
                                  intermediate_dim=16, pointer_generator=True)
    with pytest.raises(ValueError, match="Argument `model`.*Received: model=TransformerSeq2Seq"):
        ContinuousDecoder(copying, max_length=4, batch_buckets=[1], source_buckets=[8])
