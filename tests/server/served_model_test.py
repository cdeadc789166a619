"""`ServedModel`: a run's answers in bucketed shapes, all compiled up front."""

import keras
import pytest

from keras_attention.runs import SourceTooLongError, open_run
from keras_attention.server.served_model import ServedModel, powers_of_two_up_to

LINES = ["March 3, 2021", "1981/10/29", "", "September 11, 1991", "12.01.1999"]


@pytest.mark.parametrize("limit, smallest, sizes", [
    (1, 1, [1]), (4, 1, [1, 2, 4]), (6, 1, [1, 2, 4, 6]), (32, 8, [8, 16, 32]),
    (40, 8, [8, 16, 32, 40]), (5, 5, [5]),
])
def test_buckets_are_powers_of_two_and_the_limit(limit, smallest, sizes):
    assert powers_of_two_up_to(limit, smallest) == sizes


@pytest.fixture(scope="module")
def served(quick_translation_run):
    run = open_run(quick_translation_run[0])
    served = ServedModel(run, max_batch_size=3)
    served.warm_up()
    return served


def test_shapes_cover_every_batch_and_source_bucket(served):
    limit = served.text_to_text.source_limit
    assert served.source_limit == limit and served.source_buckets[-1] == limit
    assert served.batch_buckets == [1, 2, 3]
    assert served.shapes() == [(b, s) for b in (1, 2, 3) for s in served.source_buckets]


def test_answers_equal_generate_line_by_line(served):
    run = served.text_to_text
    expected = [run.generate([line])[0] for line in LINES]
    assert served.answer(served.rows(LINES[:3])) == expected[:3]
    assert served.answer(served.rows(LINES[3:])) == expected[3:]
    assert served.answer(served.rows(LINES[2:3])) == expected[2:3]


def test_no_request_compiles_after_the_warm_up(served):
    model = served.text_to_text.model
    traced = model.generate_trace_count()
    for count in (1, 2, 3):
        served.answer(served.rows(LINES[:count]))
    served.answer(served.rows(["1999-01-12 " * 2]))
    assert model.generate_trace_count() == traced


def test_padded_rows_and_sources_fill_the_bucket(served):
    rows = served.rows(["a", "March 3, 2021"])
    batch = served.batch_array(rows)
    bucket = min(b for b in served.source_buckets if b >= max(map(len, rows)))
    assert batch.shape == (2, bucket)
    assert list(batch[0, :len(rows[0])]) == list(rows[0])
    assert set(batch[0, len(rows[0]):]) <= {served.text_to_text.model.pad_token_id}


def test_a_line_longer_than_the_model_takes_is_refused(served):
    limit = served.source_limit
    with pytest.raises(SourceTooLongError) as info:
        served.rows(["fine", "1 2 3 4 5 6 7 8 9 " * limit])
    assert (info.value.index, info.value.limit) == (1, limit)
    assert info.value.length > limit


def test_max_source_tokens_caps_the_buckets_and_the_lines(quick_translation_run):
    run = open_run(quick_translation_run[0])
    capped = ServedModel(run, max_batch_size=1, max_source_tokens=12)
    assert (capped.source_limit, capped.source_buckets) == (12, [8, 12])
    assert capped.shapes() == [(1, 8), (1, 12)]
    assert len(capped.rows(["May 5"])[0]) <= 12
    with pytest.raises(SourceTooLongError) as info:
        capped.rows(["May 5", "1 2 3 4 5 6 7 8 9"])  # 17 tokens: under 32, over 12
    assert (info.value.index, info.value.limit) == (1, 12)
    with pytest.raises(ValueError, match="max_source_tokens.*Received: max_source_tokens=999"):
        ServedModel(run, max_batch_size=1, max_source_tokens=999)


def test_a_bad_search_is_refused_before_any_work(quick_translation_run):
    run = open_run(quick_translation_run[0])
    with pytest.raises(ValueError, match="strategy"):
        ServedModel(run, max_batch_size=2, strategy="nucleus")
    with pytest.raises(ValueError, match="num_beams"):
        ServedModel(run, max_batch_size=2, num_beams=0)


@pytest.fixture(scope="module")
def continuous(quick_translation_run):
    served = ServedModel(open_run(quick_translation_run[0]), max_batch_size=3, continuous=True)
    served.warm_up()
    return served


def _decode_continuously(served, lines, per_step=2):
    """Admits up to `per_step` lines before each step; the answers in order."""
    rows, answers, waiting = served.rows(lines), {}, list(range(len(lines)))
    while waiting or served.running:
        take = [waiting.pop(0) for _ in range(min(per_step, served.free, len(waiting)))]
        if take:
            served.admit([rows[i] for i in take], take)
        answers.update(served.step())
    return [answers[i] for i in range(len(lines))]


def test_continuous_answers_equal_generate_line_by_line(continuous):
    assert continuous.continuous is not None and continuous.continuous_off is None
    slots = (1, 2, 3) if keras.config.backend() == "torch" else (2, 3)  # one row runs as two
    assert continuous.shapes() == [(b, s) for b in slots for s in continuous.source_buckets]
    lines = LINES * 3
    expected = [continuous.text_to_text.generate([line])[0] for line in LINES] * 3
    model = continuous.text_to_text.model
    traced = model.generate_trace_count()
    assert _decode_continuously(continuous, lines) == expected
    assert _decode_continuously(continuous, lines, per_step=3) == expected
    assert model.generate_trace_count() == traced  # the warm-up compiled every shape


def test_continuous_is_off_where_the_search_needs_whole_batches(quick_translation_run):
    run = open_run(quick_translation_run[0])
    beam = ServedModel(run, max_batch_size=2, strategy="beam", num_beams=2, continuous=True)
    assert beam.continuous is None and "must be greedy" in beam.continuous_off
    assert ServedModel(run, max_batch_size=2).continuous_off == "not asked for"
