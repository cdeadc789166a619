import keras
import numpy as np
import pytest

from keras_attention.decoding import BeamSampler
from keras_attention.models import RNNSeq2Seq, rnn_seq2seq
from tests.models.generation_checks import (
    SOURCE,
    assert_cached_generation_equals_recomputation,
    assert_greedy_equivalences,
)
from tests.test_case import EAGER_AND_XLA

ATTENTIONS = ["bahdanau", "luong_dot", "luong_general", "luong_concat"]


def small_model(**kwargs):
    keras.utils.set_random_seed(0)
    return rnn_seq2seq(20, **{"embedding_dim": 8, "units": 16, **kwargs})


@pytest.mark.large
@pytest.mark.parametrize("jit_compile", EAGER_AND_XLA)
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_cached_generation_equals_full_recomputation(attention, jit_compile):
    cell = "lstm" if attention == "luong_general" else "gru"
    model = small_model(attention=attention, cell=cell)
    assert_cached_generation_equals_recomputation(model, jit_compile)


@pytest.mark.large
def test_greedy_equivalences_and_beam_search():
    model = small_model(input_feeding=False)
    assert_greedy_equivalences(model)
    sampler = BeamSampler(num_beams=3, num_return_sequences=2, coverage_penalty=0.3)
    result = model.generate(SOURCE, 6, sampler, return_attention=True)
    assert result.token_ids.shape == (2, 2, 6)
    assert (result.attention[1, :, :, 2:] == 0).all()  # source padding


def test_save_and_reload(tmp_path):
    model = small_model(attention="luong_concat", cell="lstm")
    inputs = {"encoder_token_ids": SOURCE, "decoder_token_ids": SOURCE}
    model.save(tmp_path / "rnn.keras")
    reloaded = keras.saving.load_model(tmp_path / "rnn.keras")
    assert isinstance(reloaded, RNNSeq2Seq)
    np.testing.assert_array_equal(reloaded(inputs), model(inputs))
    np.testing.assert_array_equal(reloaded.generate(SOURCE, 5), model.generate(SOURCE, 5))


def test_invalid_builder_args():
    with pytest.raises(ValueError, match=r"attention.*Received: attention='luong'"):
        rnn_seq2seq(10, attention="luong")
    with pytest.raises(ValueError, match=r"cell.*Received: cell='rnn'"):
        rnn_seq2seq(10, cell="rnn")
    with pytest.raises(ValueError, match=r"units.*even.*Received: units=15"):
        rnn_seq2seq(10, units=15)
