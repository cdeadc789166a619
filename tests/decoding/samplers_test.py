import json

import keras
import numpy as np
import pytest

from keras_attention import decoding
from keras_attention.decoding import stateless_random
from tests.decoding.scripted import END, PAD, START, log_table, row_state, table_step_fn

V = 6

SAMPLERS = [
    decoding.GreedySampler(),
    decoding.BeamSampler(num_beams=3, length_penalty=0.6, coverage_penalty=0.2,
                         num_return_sequences=2),
    decoding.BeamSampler(num_beams=4, length_penalty=-0.5, length_penalty_form="hf",
                         early_stopping="never"),
    decoding.TopKSampler(k=3, temperature=0.7, seed=5),
    decoding.TopPSampler(p=0.8, temperature=1.5, seed=None),
    decoding.RandomSampler(temperature=0.5, seed=9),
]


@pytest.mark.parametrize("sampler", SAMPLERS, ids=lambda s: type(s).__name__)
def test_config_round_trips_through_json_and_get_sampler(sampler):
    assert type(sampler).from_config(sampler.get_config()) == sampler
    config = json.loads(json.dumps(decoding.serialize_sampler(sampler)))
    rebuilt = decoding.get_sampler(config)
    assert rebuilt == sampler and rebuilt is not sampler
    assert decoding.get_sampler(sampler) is sampler
    short = {"class_name": type(sampler).__name__, "config": sampler.get_config()}
    assert decoding.get_sampler(short) == sampler


@pytest.mark.parametrize(
    "name, cls",
    [("greedy", decoding.GreedySampler), ("beam", decoding.BeamSampler),
     ("top_k", decoding.TopKSampler), ("top_p", decoding.TopPSampler),
     ("random", decoding.RandomSampler), ("sample", decoding.RandomSampler)],
)
def test_names_give_default_samplers(name, cls):
    assert decoding.get_sampler(name) == cls()


@pytest.mark.parametrize(
    "make, pattern",
    [
        (lambda: decoding.BeamSampler(num_beams=0), r"`num_beams`.*Received: num_beams=0"),
        (lambda: decoding.BeamSampler(num_beams=2.0), r"`num_beams`.*Received: num_beams=2.0"),
        (lambda: decoding.BeamSampler(num_beams=2, num_return_sequences=3),
         r"num_return_sequences.*num_beams=2.*Received: num_return_sequences=3"),
        (lambda: decoding.BeamSampler(length_penalty=-0.1),
         r"`length_penalty`.*Received: length_penalty=-0.1"),
        (lambda: decoding.BeamSampler(coverage_penalty=float("nan")),
         r"`coverage_penalty`.*Received: coverage_penalty=nan"),
        (lambda: decoding.BeamSampler(length_penalty_form="fairseq"),
         r"`length_penalty_form`.*Received: length_penalty_form='fairseq'"),
        (lambda: decoding.BeamSampler(early_stopping=True),
         r"`early_stopping`.*length_penalty_form='hf'.*Received: early_stopping=True"),
        (lambda: decoding.BeamSampler(length_penalty_form="hf", early_stopping="sometimes"),
         r"`early_stopping`.*Received: early_stopping='sometimes'"),
        (lambda: decoding.BeamSampler(length_penalty_form="hf", coverage_penalty=0.2),
         r"`coverage_penalty`.*GNMT.*Received: coverage_penalty=0.2"),
        (lambda: decoding.BeamSampler(length_penalty_form="hf", length_penalty=float("inf")),
         r"`length_penalty`.*Received: length_penalty=inf"),
        (lambda: decoding.TopKSampler(k=0), r"`k`.*Received: k=0"),
        (lambda: decoding.TopKSampler(k=True), r"`k`.*Received: k=True"),
        (lambda: decoding.TopPSampler(p=0.0), r"`p`.*\(0.0, 1.0\].*Received: p=0.0"),
        (lambda: decoding.TopPSampler(p=1.01), r"`p`.*Received: p=1.01"),
        (lambda: decoding.RandomSampler(temperature=-1.0),
         r"`temperature`.*Received: temperature=-1.0"),
        (lambda: decoding.TopKSampler(temperature=float("inf")),
         r"`temperature`.*Received: temperature=inf"),
        (lambda: decoding.RandomSampler(seed=-1), r"`seed`.*Received: seed=-1"),
        (lambda: decoding.TopPSampler(seed=2**31), r"`seed`.*Received: seed=2147483648"),
        (lambda: decoding.get_sampler("viterbi"), r"`sampler`.*Received: sampler='viterbi'"),
        (lambda: decoding.get_sampler(3), r"`sampler`.*Received: sampler=3"),
        (lambda: decoding.get_sampler({"class_name": "Dense", "config": {"units": 2}}),
         r"`sampler`.*Received: sampler="),
    ],
)
def test_samplers_check_their_arguments_when_made(make, pattern):
    with pytest.raises(ValueError, match=pattern):
        make()


def test_top_k_checks_k_against_the_vocabulary():
    decoding.TopKSampler(k=V).check_vocabulary(V)
    with pytest.raises(ValueError, match=rf"vocab_size={V}.*Received: k={V + 1}"):
        decoding.TopKSampler(k=V + 1).check_vocabulary(V)


def test_static_and_dynamic_settings_are_split():
    a, b = decoding.TopKSampler(k=3, seed=1), decoding.TopKSampler(k=3, temperature=0.2, seed=2)
    assert a.static_key() == b.static_key() != decoding.TopKSampler(k=4).static_key()
    assert float(b.dynamic_values()["temperature"]) == pytest.approx(0.2)
    assert int(b.dynamic_values()["seed"]) == 2
    beam = decoding.BeamSampler(num_beams=2, length_penalty=0.5)
    assert beam.static_key() != decoding.BeamSampler(num_beams=3).static_key()
    assert beam.static_key() == decoding.BeamSampler(num_beams=2).static_key()
    hf = decoding.BeamSampler(num_beams=2, length_penalty_form="hf")
    assert hf.static_key() != beam.static_key()  # another loop
    assert hf.static_key() != decoding.BeamSampler(
        num_beams=2, length_penalty_form="hf", early_stopping=True).static_key()
    assert float(beam.dynamic_values()["length_penalty"]) == 0.5


# The samplers' searches against scripted next-token tables ---------------

# From START: END 0.6 or 3 0.4; from 3: END 0.9.
EOS_FIRST = log_table(V, {START: {END: 0.6, 3: 0.4}, 3: {END: 0.9, 3: 0.1}})


def run(sampler, table, batch_size=1, max_length=4):
    output = sampler.search(
        table_step_fn(table), row_state(batch_size, sampler.num_beams),
        sampler.dynamic_values(), batch_size=batch_size, max_length=max_length,
        start_id=START, end_id=END, pad_id=PAD, vocab_size=V,
    )
    return np.asarray(output.token_ids), np.asarray(output.scores)


def test_greedy_and_beam_searches_follow_the_table():
    tokens, scores = run(decoding.GreedySampler(), EOS_FIRST)
    np.testing.assert_array_equal(tokens, [[END, PAD, PAD, PAD]])
    np.testing.assert_allclose(scores, np.log([0.6]), rtol=1e-6)
    tokens, scores = run(decoding.BeamSampler(num_beams=2, num_return_sequences=2), EOS_FIRST)
    np.testing.assert_array_equal(tokens, [[[END, PAD, PAD, PAD], [3, END, PAD, PAD]]])
    np.testing.assert_allclose(scores, np.log([[0.6, 0.36]]), rtol=1e-5)


def test_random_sampler_follows_the_table_distribution_and_its_seed():
    table = np.stack([EOS_FIRST] * 2000)
    first = run(decoding.RandomSampler(seed=3), table, batch_size=2000, max_length=1)[0][:, 0]
    assert abs((first == END).mean() - 0.6) < 0.04
    assert set(np.unique(first)) == {END, 3}
    again = run(decoding.RandomSampler(seed=3), table, batch_size=2000, max_length=1)[0][:, 0]
    np.testing.assert_array_equal(first, again)
    other = run(decoding.RandomSampler(seed=4), table, batch_size=2000, max_length=1)[0][:, 0]
    assert (first != other).any()
    top1 = run(decoding.TopKSampler(k=1, seed=3), table, batch_size=2000, max_length=1)[0]
    assert (top1[:, 0] == END).all()


def test_counter_random_numbers_are_fixed_bits():
    """The same numbers on every backend: these values were drawn on TensorFlow,
    JAX and torch (int32 arithmetic with logical shifts, as uint32 murmur3)."""
    u = keras.ops.convert_to_numpy(stateless_random.uniform(7, 3, 4, 1000))
    np.testing.assert_allclose(u[0, :3], [0.4286271, 0.14572635, 0.49021366], rtol=1e-6)
    assert float(u.sum()) == pytest.approx(2007.210205078125, rel=1e-6)
    assert 0.0 < u.min() and u.max() < 1.0
