"""The graph tokenizers give, inside a `tf.function`, the ids and texts of
the Python tokenizers and of `transformers`' tokenizers, on the strings of
`tokenizers_test` (punctuation, unicode, empty, very long)."""

import json

import numpy as np
import pytest
import tensorflow as tf
import transformers

from keras_attention.pretrained import families, graph_tokenizers, tokenizers
from tests.pretrained.tokenizers_test import (  # noqa: F401 (fixtures)
    FAST,
    GERMAN,
    M2M100_EDGES,
    TEXTS,
    bart_folder,
    bart_json_folder,
    fairseq_tokenizer,
    fast_folder,
    m2m100_folder,
    m2m100_folder_files,
    marian_folder,
    mbart_older_folder_files,
    nllb_older_folder_files,
    pegasus_older_folder_files,
    t5_folder,
    t5_json_folder,
)

# TensorFlow graphs and SavedModels (what `keras-attention export` serves): under
# the JAX backend keras-hub's BPE keeps its cache table untracked by the module.
pytestmark = pytest.mark.tf_only("TensorFlow graph tokenizers in a SavedModel (what export serves)")


def assert_same_in_a_graph(graph, theirs, texts, target=False):
    @tf.function(autograph=False)
    def encode(strings):
        return (graph.encode_target if target else graph.encode)(strings)

    ids = encode(tf.constant(texts)).to_list()
    expected = (theirs(text_target=texts) if target else theirs(texts))["input_ids"]
    for text, mine, reference in zip(texts, ids, expected):
        assert mine == reference, text[:50]
    # Decoding, from a dense padded batch inside a graph too.
    width = max(map(len, expected))
    pad = theirs.pad_token_id
    padded = np.array([row + [pad] * (width - len(row)) for row in expected], "int32")
    decoded = tf.function(graph.decode, autograph=False)(tf.constant(padded))
    assert [t.decode("utf-8") for t in decoded.numpy()] == theirs.batch_decode(
        expected, skip_special_tokens=True)


def test_marian(marian_folder):  # noqa: F811 (the imported fixture)
    theirs = transformers.MarianTokenizer(
        str(marian_folder / "source.spm"), str(marian_folder / "target.spm"),
        str(marian_folder / "vocab.json"))
    graph = graph_tokenizers.graph_tokenizer(
        tokenizers.MarianTokenizer.from_folder(marian_folder))
    texts = TEXTS + [">>de<< Hello there.", ">>xx<< unknown code", "ж"]
    assert_same_in_a_graph(graph, theirs, texts)
    assert_same_in_a_graph(graph, theirs, texts + GERMAN[:5], target=True)


# Each with the older files and with transformers 5's tokenizer.json alone.
LAYOUTS = ["folder", "json_folder"]


@pytest.mark.large
@pytest.mark.parametrize("layout", LAYOUTS)
def test_bart(layout, request):
    folder = request.getfixturevalue(f"bart_{layout}")
    theirs = transformers.BartTokenizer.from_pretrained(str(folder))
    graph = graph_tokenizers.graph_tokenizer(tokenizers.BartTokenizer.from_folder(folder))
    assert_same_in_a_graph(graph, theirs, TEXTS)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_t5_with_sentinels(layout, request):
    folder = request.getfixturevalue(f"t5_{layout}")
    theirs = transformers.T5Tokenizer.from_pretrained(str(folder))
    ours = tokenizers.T5Tokenizer.from_folder(folder)
    graph = graph_tokenizers.graph_tokenizer(ours)
    texts = TEXTS + ["<extra_id_0>", "a <extra_id_1> b <extra_id_0>", "x <extra_id_100> y"]
    assert_same_in_a_graph(graph, theirs, texts[:-1])
    # A sentinel past the 100 is text, as in the Python tokenizer.
    assert graph.encode(tf.constant(texts)).to_list() == ours.tokenize(texts)


def test_another_object_is_refused():
    with pytest.raises(ValueError, match=r"Received: tokenizer=dict"):
        graph_tokenizers.graph_tokenizer({})


#: Spaces a text ends with (one `▁` for them where the file keeps them) and
#: the file's special tokens inside a text (their ids, as the tokenizer
#: matches them).
EDGES = ["x ", "x  ", "x\t", "x\u3000", " ", "\t", "a </s> b", "a</s>b", "a  </s>  b",
         "</s>", " </s> ", "<unk> z", "<pad>x"]


def test_tokenizer_json_families(fast_folder):  # noqa: F811
    """mBART, mBART-50, Pegasus (Unigram) and NLLB (SentencePiece BPE) as
    transformers 5 saves them: the graph gives transformers' ids and texts,
    the language codes in a text as their ids."""
    name, folder = fast_folder
    theirs = transformers.AutoTokenizer.from_pretrained(str(folder))
    graph = graph_tokenizers.graph_tokenizer(tokenizers.FastTokenizer.from_folder(folder))
    codes = [f"{FAST[name][1]} Hallo", f"x {FAST[name][1]}"] if FAST[name][1] else []
    assert_same_in_a_graph(graph, theirs, TEXTS + GERMAN[:5] + EDGES + codes)


def test_tokenizer_json_cleans_up_spaces_where_its_config_asks(fast_folder, tmp_path):  # noqa: F811
    import shutil

    name, folder = fast_folder
    shutil.copytree(folder, tmp_path / "tokenizer")
    config = tmp_path / "tokenizer" / "tokenizer_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text(encoding="utf-8")),
                                  "clean_up_tokenization_spaces": True}), encoding="utf-8")
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "tokenizer"))
    ours = tokenizers.FastTokenizer.from_folder(tmp_path / "tokenizer")
    texts = ["Hello , world . Is n't it ?", "I 'm here ! It 's , ok"]
    expected = theirs.batch_decode(theirs(texts)["input_ids"], skip_special_tokens=True)
    # transformers 5 skips the clean-up of a BPE model's texts (NLLB's).
    assert (" ," not in expected[0]) == (name != "nllb")
    graph = graph_tokenizers.graph_tokenizer(ours)
    decoded = graph.decode(graph.encode(tf.constant(texts))).numpy()
    assert [text.decode("utf-8") for text in decoded] == expected == ours.detokenize(
        ours.tokenize(texts))


def test_m2m100_own_files(m2m100_folder):  # noqa: F811
    theirs = transformers.AutoTokenizer.from_pretrained(str(m2m100_folder))
    graph = graph_tokenizers.graph_tokenizer(tokenizers.M2M100Tokenizer.from_folder(
        m2m100_folder))
    assert_same_in_a_graph(graph, theirs, TEXTS + GERMAN[:5] + M2M100_EDGES)


@pytest.mark.parametrize("family", ["mbart", "pegasus", "m2m_100"])
def test_an_older_folder(family, tmp_path):
    """mBART-50, Pegasus and NLLB without `tokenizer.json`: the graph of the
    file transformers 5 makes of their SentencePiece model."""
    theirs = (mbart_older_folder_files(tmp_path, src_lang="de_DE") if family == "mbart"
              else pegasus_older_folder_files(tmp_path) if family == "pegasus"
              else nllb_older_folder_files(tmp_path, src_lang="deu_Latn"))
    graph = graph_tokenizers.graph_tokenizer(
        families.FAMILIES[family].tokenizer.from_folder(tmp_path))
    assert_same_in_a_graph(graph, theirs, TEXTS + GERMAN[:5] + EDGES + [
        "de_DE Hallo", "deu_Latn Hallo"])


def _python_tokenizer(family, folder, tmp_path):
    """The Python tokenizer of a family's folder; `mbart50` and `nllb`: made
    by transformers 5 in `tmp_path` (`tokenizer.json`); `m2m100`: M2M100's
    own files, made in `tmp_path`."""
    if family in FAST:
        fairseq_tokenizer(tmp_path, family).save_pretrained(str(tmp_path / "saved"))
        return tokenizers.FastTokenizer.from_folder(tmp_path / "saved")
    if family == "m2m100":
        m2m100_folder_files(tmp_path)
        return tokenizers.M2M100Tokenizer.from_folder(tmp_path)
    return {"marian": tokenizers.MarianTokenizer, "bart": tokenizers.BartTokenizer,
            "t5": tokenizers.T5Tokenizer}[family].from_folder(folder)


@pytest.mark.parametrize("family", ["marian", "bart", "t5", "mbart50", "nllb", "m2m100"])
def test_a_reloaded_saved_model_tokenizes_the_same(family, request, tmp_path):
    """What an exported SavedModel holds: the tables and SentencePiece
    models travel with it (`tf.saved_model.load`, no keras_attention)."""
    folder = None if family in FAST else request.getfixturevalue(f"{family}_folder")
    python = _python_tokenizer(family, folder, tmp_path)
    module = tf.Module()
    module.tokenizer = graph_tokenizers.graph_tokenizer(python)
    module.round_trip = tf.function(
        lambda texts: module.tokenizer.decode(module.tokenizer.encode(texts)),
        input_signature=[tf.TensorSpec((None,), tf.string)], autograph=False)
    tf.saved_model.save(module, str(tmp_path / "saved_model"))
    loaded = tf.saved_model.load(str(tmp_path / "saved_model"))
    texts = ["I am a small frog.", "", "Hello, world!"]
    out = [t.decode("utf-8") for t in loaded.round_trip(tf.constant(texts)).numpy()]
    assert out == python.detokenize(python.tokenize(texts))
    assert out[0] == "I am a small frog."


def test_a_tokenizer_json_sentencepiece_cannot_reproduce_is_refused_naming_it(tmp_path):
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    Tokenizer(WordLevel({"<pad>": 0, "</s>": 1, "<unk>": 2}, unk_token="<unk>")).save(
        str(tmp_path / "tokenizer.json"))
    with pytest.raises(ValueError, match=r"tokenizer.json: `model.type` must be 'Unigram'.*"
                                         r"Received: model.type='WordLevel'$"):
        graph_tokenizers.graph_tokenizer(tokenizers.FastTokenizer.from_folder(tmp_path))


def test_a_recipes_sentencepiece_model_and_its_truncation():
    """The recipes' `data.SentencePieceModel` has a graph form too (the one
    export builder serves every tokenizer through it): its ids, its texts cut
    at the end token without padding or start tokens, and a cut row keeping
    its first ids, as the Python tokenizer's `truncate`; a checkpoint's keeps
    its end token."""
    from keras_attention import data
    from keras_attention.tokenizer import encode_lines

    texts = ["a cat sat on the mat", "a dog ran", ""]
    ours = data.SentencePieceModel(data.train_tokenizer(texts + ["the cat ran"], 30).proto)
    graph = graph_tokenizers.graph_tokenizer(ours)
    ids = tf.function(graph.encode, autograph=False)(tf.constant(texts))
    assert ids.to_list() == ours.tokenize(texts)
    cut = graph.truncate(ids, 3).to_list()
    assert cut == [ours.truncate(row, 3) for row in ours.tokenize(texts)]
    assert [row + [ours.pad_token_id] * (3 - len(row)) for row in cut] == encode_lines(
        ours, texts, 3).tolist()
    rows = [[ours.start_token_id] + ours("a cat") + [ours.end_token_id, 7],
            ours("a dog ran") + [ours.pad_token_id]]
    width = max(map(len, rows))
    rows = np.array([row + [ours.pad_token_id] * (width - len(row)) for row in rows], "int32")
    ended = tf.cumsum(tf.cast(rows == ours.end_token_id, tf.int32), axis=1)
    decoded = graph.decode(tf.ragged.boolean_mask(tf.constant(rows), ended == 0))
    assert [t.decode("utf-8") for t in decoded.numpy()] == ours.detokenize(rows)


def test_a_checkpoint_tokenizers_cut_keeps_its_end_token(t5_folder):  # noqa: F811
    ours = tokenizers.T5Tokenizer.from_folder(t5_folder)
    graph = graph_tokenizers.graph_tokenizer(ours)
    texts = ["a long line of several words", "short"]
    ids = graph.encode(tf.constant(texts))
    assert graph.truncate(ids, 4).to_list() == [ours.truncate(row, 4)
                                                for row in ours.tokenize(texts)]
