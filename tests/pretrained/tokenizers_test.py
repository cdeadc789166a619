"""The checkpoints' tokenizers against `transformers`' own on tiny tokenizer
files made in the test (SentencePiece models, a byte-level BPE)."""

import json

import numpy as np
import pytest
import sentencepiece
import transformers
from tokenizers import ByteLevelBPETokenizer

from keras_attention.pretrained import families, sentencepiece_folders, tokenizers

pytestmark = pytest.mark.backend_independent("tokenizer files and Python tokenizers")

ENGLISH = ["The quick brown fox jumps over the lazy dog.", "Hello, world! How are you?",
           "I am a small frog.", "Tom asked his teacher for advice.",
           "Numbers: 1, 2, 3.5 and 100%.", "It's a test -- with punctuation; really?",
           "Grüße 日本語"] * 20
GERMAN = ["Der schnelle braune Fuchs springt über den faulen Hund.",
          "Hallo, Welt! Wie geht es dir?", "Ich bin ein kleiner Frosch.",
          "Tom bat seinen Lehrer um Rat.", "Größe, Straße, Äpfel und Öl."] * 20
# Punctuation, unicode (outside the training text too), empty, very long.
TEXTS = ["I am a small frog.", "", "Hello, world!!  How   are you?",
         "Grüße — “quotes” … ünïcödé 日本語 🙂", " leading and trailing ", "x" * 3000,
         "The quick brown fox " * 200, "tab\tand\nnewline", "it's 100%", "?!.,;:",
         "Fill <extra_id_0> the <extra_id_1>."]


def train_spm(texts, prefix, **options):
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_prefix=str(prefix), vocab_size=60,
        character_coverage=1.0, minloglevel=2, **options)
    return f"{prefix}.model"


@pytest.fixture(scope="module")
def marian_folder(tmp_path_factory):
    """source.spm, target.spm and a joint vocab.json laid out as OPUS-MT's
    (`</s>` 0, `<unk>` 1, pieces, a language code, `<pad>` last)."""
    folder = tmp_path_factory.mktemp("marian")
    for name, texts in (("source", ENGLISH), ("target", GERMAN)):
        (folder / f"{name}.spm").write_bytes(
            open(train_spm(texts, folder / name), "rb").read())
    vocabulary = {"</s>": 0, "<unk>": 1}
    for name in ("source", "target"):
        for line in (folder / f"{name}.vocab").read_text(encoding="utf-8").splitlines():
            piece = line.split("\t")[0]
            if piece not in vocabulary and piece not in ("<s>", "</s>", "<unk>"):
                vocabulary[piece] = len(vocabulary)
    vocabulary[">>de<<"] = len(vocabulary)
    vocabulary["<pad>"] = len(vocabulary)
    (folder / "vocab.json").write_text(json.dumps(vocabulary, ensure_ascii=False))
    return folder


@pytest.fixture(scope="module")
def bart_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bart")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(ENGLISH, vocab_size=400, min_frequency=1, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    return folder


@pytest.fixture(scope="module")
def t5_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("t5")
    train_spm(ENGLISH, folder / "spiece", pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    return folder


def saved_by_transformers_5(folder, destination, tokenizer_class):
    """`folder`'s tokenizer loaded by `transformers` and saved again: the
    layout of transformers 5, `tokenizer.json` (and its config) only."""
    tokenizer_class.from_pretrained(str(folder)).save_pretrained(str(destination))
    assert sorted(p.name for p in destination.iterdir()) == [
        "tokenizer.json", "tokenizer_config.json"]
    return destination


@pytest.fixture(scope="module")
def bart_json_folder(bart_folder, tmp_path_factory):
    return saved_by_transformers_5(bart_folder, tmp_path_factory.mktemp("bart_json"),
                                   transformers.BartTokenizer)


@pytest.fixture(scope="module")
def t5_json_folder(t5_folder, tmp_path_factory):
    return saved_by_transformers_5(t5_folder, tmp_path_factory.mktemp("t5_json"),
                                   transformers.T5Tokenizer)


def assert_same_as_transformers(ours, theirs, texts, **encode_options):
    target = encode_options.pop("target", False)
    expected = (theirs(text_target=texts) if target else theirs(texts))["input_ids"]
    ids = ours.tokenize_targets(texts) if target else ours.tokenize(texts)
    for text, mine, reference in zip(texts, ids, expected):
        assert mine == reference, text[:50]
    decoded = theirs.batch_decode(expected, skip_special_tokens=True)
    assert ours.detokenize(expected) == decoded
    assert len(set(map(tuple, ids))) > len(texts) // 2  # not all the same ids


def test_marian(marian_folder):
    theirs = transformers.MarianTokenizer(
        str(marian_folder / "source.spm"), str(marian_folder / "target.spm"),
        str(marian_folder / "vocab.json"))
    ours = tokenizers.MarianTokenizer.from_folder(marian_folder)
    texts = TEXTS + [">>de<< Hello there.", ">>xx<< unknown code"]
    assert_same_as_transformers(ours, theirs, texts)
    assert_same_as_transformers(ours, theirs, texts + GERMAN[:5], target=True)
    assert ours.tokenize([""]) == [[0]] and ours.end_token_id == 0
    assert (ours.pad_token_id, ours.vocabulary_size()) == (len(theirs) - 1, len(theirs))
    unknown = ours.tokenize(["ж"])[0]  # a piece the joint vocabulary lacks is <unk>
    assert unknown == theirs(["ж"])["input_ids"][0] and ours.unk_token_id in unknown


def test_bart(bart_folder):
    theirs = transformers.BartTokenizer.from_pretrained(str(bart_folder))
    ours = tokenizers.BartTokenizer.from_folder(bart_folder)
    assert_same_as_transformers(ours, theirs, TEXTS)
    assert ours.tokenize([""]) == [[0, 2]]
    assert ours.vocabulary_size() == len(theirs)


def test_t5_with_sentinels(t5_folder):
    theirs = transformers.T5Tokenizer.from_pretrained(str(t5_folder))
    ours = tokenizers.T5Tokenizer.from_folder(t5_folder)
    assert_same_as_transformers(ours, theirs, TEXTS)
    assert ours.vocabulary_size() == len(theirs) == 160
    assert ours.sentinel_id(0) == 159 == theirs.convert_tokens_to_ids("<extra_id_0>")
    assert ours.sentinel_id(99) == 60
    assert ours.tokenize(["<extra_id_0>"]) == [[159, 1]]


def test_decode_takes_arrays_and_drops_padding(t5_folder):
    ours = tokenizers.T5Tokenizer.from_folder(t5_folder)
    ids = ours.tokenize(["I am a small frog.", "Hello"])
    padded = np.zeros((2, 30), "int32")
    for row, values in enumerate(ids):
        padded[row, :len(values)] = values
    assert ours.detokenize(padded) == ["I am a small frog.", "Hello"]
    assert ours.detokenize(padded[0]) == ["I am a small frog."]


def test_missing_files_and_bad_input_are_named(tmp_path, t5_folder):
    with pytest.raises(FileNotFoundError, match=r"no source.spm. Received: folder="):
        tokenizers.MarianTokenizer.from_folder(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no merges.txt|no vocab.json"):
        tokenizers.BartTokenizer.from_folder(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no spiece.model"):
        tokenizers.T5Tokenizer.from_folder(tmp_path)
    ours = tokenizers.T5Tokenizer.from_folder(t5_folder)
    with pytest.raises(ValueError, match=r"list of strings, not one string"):
        ours.tokenize("one string")
    with pytest.raises(ValueError, match=r"Received: texts=\[1\]"):
        ours.tokenize([1])
    with pytest.raises(ValueError, match=r"Received: extra_ids=-1"):
        tokenizers.T5Tokenizer.from_folder(t5_folder, extra_ids=-1)


def test_bart_decodes_a_cut_character_as_transformers_does(bart_folder):
    """A byte-level token cut inside a UTF-8 character (a random or early
    model may produce one) is U+FFFD, as in `transformers`."""
    theirs = transformers.BartTokenizer.from_pretrained(str(bart_folder))
    ours = tokenizers.BartTokenizer.from_folder(bart_folder)
    cut = [[ours.vocabulary["Ã"]], [ours.vocabulary["a"], ours.vocabulary["Ã"]]]
    assert ours.detokenize(cut) == theirs.batch_decode(cut, skip_special_tokens=True)
    assert ours.detokenize(cut)[0] == "\ufffd"


def test_bart_from_tokenizer_json_alone(bart_folder, bart_json_folder):
    """A folder saved by transformers 5: the ids and texts of transformers'
    tokenizer of that folder, and of ours from the older files."""
    theirs = transformers.AutoTokenizer.from_pretrained(str(bart_json_folder))
    ours = tokenizers.BartTokenizer.from_folder(bart_json_folder)
    assert tokenizers.BartTokenizer.files_in(bart_json_folder) == ("tokenizer.json",)
    assert_same_as_transformers(ours, theirs, TEXTS)
    older = tokenizers.BartTokenizer.from_folder(bart_folder)
    assert ours.tokenize(TEXTS) == older.tokenize(TEXTS)
    assert ours.vocabulary == older.vocabulary and ours.vocabulary_size() == len(theirs)


def test_t5_from_tokenizer_json_alone(t5_folder, t5_json_folder):
    theirs = transformers.AutoTokenizer.from_pretrained(str(t5_json_folder))
    ours = tokenizers.T5Tokenizer.from_folder(t5_json_folder)
    assert tokenizers.T5Tokenizer.files_in(t5_json_folder) == ("tokenizer.json",)
    assert_same_as_transformers(ours, theirs, TEXTS)
    older = tokenizers.T5Tokenizer.from_folder(t5_folder)
    assert ours.tokenize(TEXTS) == older.tokenize(TEXTS)
    assert (ours.piece_count, ours.extra_ids, ours.vocabulary_size()) == (60, 100, len(theirs))
    assert ours.sentinel_id(0) == 159 == theirs.convert_tokens_to_ids("<extra_id_0>")
    with pytest.raises(ValueError, match=r"the 100 sentinels of the folder's tokenizer.json. "
                                         r"Received: extra_ids=10"):
        tokenizers.T5Tokenizer.from_folder(t5_json_folder, extra_ids=10)


@pytest.mark.parametrize("family", ["bart", "t5"])
def test_a_folder_with_both_layouts_gives_the_same_ids(family, request, tmp_path):
    """The older files are read when they are all there; either way the ids
    are the same."""
    import shutil

    tokenizer_class = {"bart": tokenizers.BartTokenizer, "t5": tokenizers.T5Tokenizer}[family]
    both = tmp_path / "both"
    shutil.copytree(request.getfixturevalue(f"{family}_folder"), both)
    shutil.copy(request.getfixturevalue(f"{family}_json_folder") / "tokenizer.json", both)
    assert tokenizer_class.files_in(both) == tokenizer_class.FILES
    json_only = tokenizer_class.from_folder(request.getfixturevalue(f"{family}_json_folder"))
    assert tokenizer_class.from_folder(both).tokenize(TEXTS) == json_only.tokenize(TEXTS)
    (both / tokenizer_class.FILES[0]).unlink()  # an incomplete older layout: tokenizer.json
    assert tokenizer_class.files_in(both) == ("tokenizer.json",)


def test_a_folder_with_neither_layout_names_both(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no spiece.model \(nor tokenizer.json\)\. "
                                                r"Received: folder="):
        tokenizers.T5Tokenizer.from_folder(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no vocab.json \(nor tokenizer.json\)"):
        tokenizers.BartTokenizer.files_in(tmp_path)
    (tmp_path / "tokenizer.json").symlink_to("/etc/hostname")
    with pytest.raises(ValueError, match=r"only files inside the checkpoint folder"):
        tokenizers.BartTokenizer.from_folder(tmp_path)


# tokenizer.json read by the `tokenizers` library: mBART, mBART-50, Pegasus, NLLB -------------
#: transformers 5's tokenizers read from tokenizer.json: the class and its
#: source language.
FAST = {"mbart": (transformers.MBartTokenizer, "de_DE"),
        "mbart50": (transformers.MBart50Tokenizer, "de_DE"),
        "pegasus": (transformers.PegasusTokenizer, None),
        "nllb": (transformers.NllbTokenizer, "deu_Latn")}


def fairseq_tokenizer(folder, name):
    """transformers' `name` tokenizer (a `FAST` key, or `m2m_100`: NLLB's)
    made from a SentencePiece model trained in `folder` as `from_pretrained`
    converts the original files (fairseq's `sentencepiece.bpe.model`: `<unk>`
    0, `<s>` 1, `</s>` 2, which the tokenizer moves behind `<s>` `<pad>`
    `</s>` `<unk>`; Pegasus's `spiece.model`: `<pad>` 0, `</s>` 1, `<unk>` 2)."""
    name = "nllb" if name == "m2m_100" else name
    tokenizer_class, source = FAST[name]
    if name == "pegasus":
        train_spm(ENGLISH, folder / "spiece", pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
        return tokenizer_class.from_pretrained(str(folder))
    sentencepiece.SentencePieceTrainer.train(  # NLLB's is a BPE model
        sentence_iterator=iter(ENGLISH + GERMAN), model_prefix=str(folder / "sentencepiece.bpe"),
        vocab_size=100, character_coverage=1.0, minloglevel=2, unk_id=0, bos_id=1, eos_id=2,
        pad_id=-1, model_type="bpe" if name == "nllb" else "unigram")
    # NLLB's language codes as special tokens (three of them, not its 200).
    codes = {"extra_special_tokens": ["eng_Latn", "deu_Latn", "fra_Latn"]} \
        if name == "nllb" else {}
    return tokenizer_class.from_pretrained(str(folder), src_lang=source, **codes)


@pytest.fixture(scope="module", params=sorted(FAST))
def fast_folder(request, tmp_path_factory):
    """`(name, folder)`: the tokenizer made by `transformers` 5 from a
    SentencePiece model (`fairseq_tokenizer`) and saved as it saves it:
    `tokenizer.json` and its config."""
    spm = tmp_path_factory.mktemp(f"{request.param}_spm")
    folder = tmp_path_factory.mktemp(request.param)
    fairseq_tokenizer(spm, request.param).save_pretrained(str(folder))
    assert {"tokenizer.json", "tokenizer_config.json"} <= {p.name for p in folder.iterdir()}
    return request.param, folder


def test_a_tokenizer_json_gives_the_ids_and_texts_of_transformers(fast_folder):
    name, folder = fast_folder
    theirs = transformers.AutoTokenizer.from_pretrained(str(folder))
    ours = tokenizers.FastTokenizer.from_folder(folder)
    assert tokenizers.FastTokenizer.files_in(folder) == ("tokenizer.json",
                                                        "tokenizer_config.json")
    assert_same_as_transformers(ours, theirs, TEXTS + GERMAN[:5])
    assert (ours.pad_token_id, ours.end_token_id) == (theirs.pad_token_id, theirs.eos_token_id)
    assert ours.vocabulary_size() == len(theirs) and ours.largest_id == len(theirs) - 1
    assert len(theirs) > 60 and ours.tokenize(["Hallo"])[0].count(theirs.unk_token_id) == 0
    if name != "pegasus":  # the source language code the tokenizer was saved with
        code = theirs.convert_tokens_to_ids(FAST[name][1])
        assert code != theirs.unk_token_id
        assert code in ours.tokenize(["Hallo"])[0] and code in ours.special_ids


def test_a_tokenizer_json_alone_reads_with_the_default_tokens(fast_folder, tmp_path):
    import shutil

    _, folder = fast_folder
    shutil.copy(folder / "tokenizer.json", tmp_path)
    ours = tokenizers.FastTokenizer.from_folder(tmp_path)
    assert tokenizers.FastTokenizer.files_in(tmp_path) == ("tokenizer.json",)
    assert ours.tokenize(TEXTS) == tokenizers.FastTokenizer.from_folder(folder).tokenize(TEXTS)


def test_a_bad_tokenizer_json_or_config_is_refused_naming_it(tmp_path, fast_folder):
    _, folder = fast_folder
    with pytest.raises(FileNotFoundError, match=r"no tokenizer.json\. Received: folder="):
        tokenizers.FastTokenizer.from_folder(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"tokenizer.json is not a tokenizer the `tokenizers` "
                                         r"library reads .*Received: tokenizer_json="):
        tokenizers.FastTokenizer.from_folder(tmp_path)
    (tmp_path / "tokenizer.json").write_bytes((folder / "tokenizer.json").read_bytes())
    (tmp_path / "tokenizer_config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"tokenizer_config.json must hold a JSON object. "
                                         r"Received: list"):
        tokenizers.FastTokenizer.from_folder(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text('{"pad_token": "<nope>"}')
    with pytest.raises(ValueError, match=r"`pad_token` must be a token of tokenizer.json. "
                                         r"Received: pad_token='<nope>'"):
        tokenizers.FastTokenizer.from_folder(tmp_path)


# M2M100's own files: vocab.json + sentencepiece.bpe.model ---------------------------------
def m2m100_folder_files(folder, src_lang="en"):
    """An M2M100 tokenizer folder as the hub's checkpoints ship it, made from
    a SentencePiece BPE model trained in `folder`: fairseq's dictionary as
    `vocab.json` (`<s>` `<pad>` `</s>` `<unk>`, then the pieces), and a
    `tokenizer_config.json` listing the language tokens as special tokens;
    returns `transformers`' tokenizer of it."""
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(ENGLISH + GERMAN), model_prefix=str(folder / "sentencepiece.bpe"),
        vocab_size=100, character_coverage=1.0, minloglevel=2, unk_id=0, bos_id=1, eos_id=2,
        pad_id=-1, model_type="bpe")
    (folder / "sentencepiece.bpe.vocab").unlink()
    spm = sentencepiece.SentencePieceProcessor(model_file=str(folder / "sentencepiece.bpe.model"))
    vocabulary = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for i in range(3, spm.get_piece_size()):
        vocabulary[spm.id_to_piece(i)] = len(vocabulary)
    (folder / "vocab.json").write_text(json.dumps(vocabulary), encoding="utf-8")
    codes = tokenizers.M2M100_LANGUAGE_CODES["m2m100"]
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "M2M100Tokenizer", "src_lang": src_lang, "tgt_lang": "de",
        "language_codes": "m2m100", "num_madeup_words": 8,
        "additional_special_tokens": [f"__{code}__" for code in codes]}), encoding="utf-8")
    return transformers.AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def m2m100_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("m2m100")
    m2m100_folder_files(folder, src_lang="fr")
    return folder


#: Special and language tokens inside a text.
M2M100_EDGES = ["a </s> b", "a</s>b", "__de__ Hallo", "x __en__", "<unk> z", "<pad>x", "__xx__",
                " ", "x "]


def test_m2m100_own_files(m2m100_folder):
    theirs = transformers.AutoTokenizer.from_pretrained(str(m2m100_folder))
    ours = tokenizers.M2M100Tokenizer.from_folder(m2m100_folder)
    assert tokenizers.M2M100Tokenizer.files_in(m2m100_folder) == (
        "vocab.json", "sentencepiece.bpe.model", "tokenizer_config.json")
    assert_same_as_transformers(ours, theirs, TEXTS + GERMAN[:5] + M2M100_EDGES)
    assert ours.tokenize(["Hallo"])[0][0] == theirs.convert_tokens_to_ids("__fr__")  # src_lang
    assert ours.vocabulary_size() == len(theirs) and ours.largest_id == len(theirs) - 1
    assert (ours.pad_token_id, ours.end_token_id) == (theirs.pad_token_id, theirs.eos_token_id)
    # The family reads either layout: this one, or NLLB's tokenizer.json.
    family = families.FAMILIES["m2m_100"].tokenizer
    assert isinstance(family.from_folder(m2m100_folder), tokenizers.M2M100Tokenizer)


def test_m2m100_bad_settings_are_named(m2m100_folder, tmp_path):
    import shutil

    for name in ("vocab.json", "sentencepiece.bpe.model"):
        shutil.copy(m2m100_folder / name, tmp_path)
    assert tokenizers.M2M100Tokenizer.from_folder(tmp_path).tokenize(["a"])[0][0] == (
        tokenizers.M2M100Tokenizer.from_folder(m2m100_folder).language_ids["__en__"])
    for config, message in (({"src_lang": "xx"}, r"`src_lang` must be a language code of "
                                                  r"'m2m100'. Received: src_lang='xx'"),
                            ({"language_codes": "wmt99"}, r"Received: language_codes='wmt99'"),
                            ([1], r"tokenizer_config.json must hold a JSON object")):
        (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            tokenizers.M2M100Tokenizer.from_folder(tmp_path)


# Older mBART folders: sentencepiece.bpe.model + tokenizer_config.json ------------------------
def mbart_older_folder_files(folder, tokenizer_class="MBart50Tokenizer", src_lang="en_XX"):
    """An mBART or mBART-50 folder as a slow tokenizer saved it (no
    `tokenizer.json`): fairseq's SentencePiece model trained in `folder` and
    a `tokenizer_config.json` naming the class and source language; returns
    `transformers` 5's tokenizer of it (which builds its `tokenizer.json`)."""
    name = "mbart50" if tokenizer_class == "MBart50Tokenizer" else "mbart"
    fairseq_tokenizer(folder, name)
    (folder / "sentencepiece.bpe.vocab").unlink()
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": tokenizer_class, "src_lang": src_lang}), encoding="utf-8")
    return transformers.AutoTokenizer.from_pretrained(str(folder))


@pytest.mark.parametrize("tokenizer_class", ["MBartTokenizer", "MBart50Tokenizer"])
def test_an_older_mbart_folder_reads_as_transformers_5_reads_it(tokenizer_class, tmp_path):
    theirs = mbart_older_folder_files(tmp_path, tokenizer_class, src_lang="de_DE")
    family = families.FAMILIES["mbart"].tokenizer
    assert family.files_in(tmp_path) == ("sentencepiece.bpe.model", "tokenizer_config.json")
    ours = family.from_folder(tmp_path)
    assert type(theirs).__name__ == tokenizer_class
    assert_same_as_transformers(ours, theirs, TEXTS + GERMAN[:5] + [
        "a </s> b", "de_DE Hallo", "<mask> x", "x "])
    assert ours.tokenize(["Hallo"])[0].count(theirs.convert_tokens_to_ids("de_DE")) == 1
    assert ours.vocabulary_size() == len(theirs)


def pegasus_older_folder_files(folder, config=True):
    """A Pegasus folder as a slow tokenizer saved it: `spiece.model` (and
    `tokenizer_config.json`), no `tokenizer.json`; returns `transformers` 5's
    tokenizer of it."""
    train_spm(ENGLISH, folder / "spiece", pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    (folder / "spiece.vocab").unlink()
    if config:
        (folder / "tokenizer_config.json").write_text(json.dumps({
            "tokenizer_class": "PegasusTokenizer", "offset": 103}), encoding="utf-8")
    return transformers.PegasusTokenizer.from_pretrained(str(folder))


@pytest.mark.parametrize("config", [True, False])
def test_an_older_pegasus_folder_reads_as_transformers_5_reads_it(config, tmp_path):
    theirs = pegasus_older_folder_files(tmp_path, config)
    family = families.FAMILIES["pegasus"].tokenizer
    assert family.files_in(tmp_path) == (
        ("spiece.model", "tokenizer_config.json") if config else ("spiece.model",))
    ours = family.from_folder(tmp_path)
    assert_same_as_transformers(ours, theirs, TEXTS + GERMAN[:5] + [
        "a </s> b", "<mask_1> x", "<unk_5> y", "x "])
    assert ours.vocabulary_size() == len(theirs) and ours.end_token_id == theirs.eos_token_id
    (tmp_path / "tokenizer_config.json").write_text('{"offset": 100}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"`offset` must be 103 .*Received: offset=100"):
        family.from_folder(tmp_path)


def test_an_older_mbart_folder_names_what_it_lacks(tmp_path):
    mbart_older_folder_files(tmp_path)
    family = families.FAMILIES["mbart"].tokenizer
    for config, message in (({}, r"`tokenizer_class` must be one of \['MBart50Tokenizer', "
                                 r"'MBartTokenizer'\]. Received: tokenizer_class=None"),
                            ({"tokenizer_class": "MBartTokenizer", "src_lang": "xx_XX"},
                             r"`src_lang` must be a language code of MBartTokenizer. "
                             r"Received: src_lang='xx_XX'")):
        (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            family.from_folder(tmp_path)
    (tmp_path / "sentencepiece.bpe.model").write_bytes(b"\xff\xff")
    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "MBartTokenizer"}')
    with pytest.raises(ValueError, match=r"Not a SentencePiece model"):
        family.from_folder(tmp_path)


#: Three of NLLB's language codes: a tiny vocabulary with all 202 would be
#: mostly codes.
NLLB_CODES = ["eng_Latn", "deu_Latn", "fra_Latn"]


def nllb_older_folder_files(folder, src_lang="eng_Latn", codes=tuple(NLLB_CODES), **config):
    """An NLLB folder as the slow `NllbTokenizer` of `transformers` 4 saved
    it: fairseq's SentencePiece BPE model and a `tokenizer_config.json`
    listing the language codes `codes` (None: no list) and their ids, no
    `tokenizer.json`; returns `transformers` 5's tokenizer of it (the codes
    listed, NLLB-200's 202 where `codes` is None)."""
    fairseq_tokenizer(folder, "nllb")
    for name in ("sentencepiece.bpe.vocab", "tokenizer.json"):
        (folder / name).unlink(missing_ok=True)
    size = sentencepiece.SentencePieceProcessor(
        model_file=str(folder / "sentencepiece.bpe.model")).get_piece_size() + 1
    listed = list(codes or sentencepiece_folders.NLLB_LANGUAGE_CODES)
    added = ["<s>", "<pad>", "</s>", "<unk>"] + [None] * (size - 4) + listed + ["<mask>"]
    config = {"tokenizer_class": "NllbTokenizer", "src_lang": src_lang, "tgt_lang": "deu_Latn",
              "legacy_behaviour": False, **({} if codes is None else {
                  "additional_special_tokens": listed}),
              "added_tokens_decoder": {str(i): {
                  "content": token, "lstrip": token == "<mask>", "normalized": token == "<mask>",
                  "rstrip": False, "single_word": False, "special": True}
                  for i, token in enumerate(added) if token}, **config}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    if codes is None:  # transformers 5 drops the codes a config does not list
        config = {**config, "additional_special_tokens": listed}
    return transformers.NllbTokenizer.from_pretrained(str(folder), **{
        key: config[key] for key in ("additional_special_tokens", "legacy_behaviour")})


@pytest.mark.parametrize("options", [{}, {"legacy_behaviour": True}, {"codes": None}],
                         ids=["codes", "legacy", "all-202-codes"])
def test_an_older_nllb_folder_reads_as_transformers_5_reads_it(options, tmp_path):
    theirs = nllb_older_folder_files(tmp_path, src_lang="deu_Latn", **options)
    family = families.FAMILIES["m2m_100"].tokenizer
    assert family.files_in(tmp_path) == ("sentencepiece.bpe.model", "tokenizer_config.json")
    ours = family.from_folder(tmp_path)
    assert isinstance(ours, tokenizers.FastTokenizer)
    # The whole tokenizer.json transformers 5 builds, merges included.
    assert ours.json == json.loads(theirs.backend_tokenizer.to_str())
    assert_same_as_transformers(ours, theirs, TEXTS + GERMAN[:5] + [
        "a </s> b", "deu_Latn Hallo", "x <mask> y", "x "])
    code = theirs.convert_tokens_to_ids("deu_Latn")
    assert code != theirs.unk_token_id and ours.tokenize(["Hallo"])[0].count(code) == 1
    assert ours.vocabulary_size() == len(theirs) == 102 + (
        202 if "codes" in options else len(NLLB_CODES))


def test_an_older_nllb_folder_names_what_it_cannot_read(tmp_path):
    nllb_older_folder_files(tmp_path)
    family = families.FAMILIES["m2m_100"].tokenizer
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    for change, message in (
            ({"tokenizer_class": "M2M100Tokenizer"},
             r"`tokenizer_class` must be one of \['NllbTokenizer', 'NllbTokenizerFast'\]. "
             r"Received: tokenizer_class='M2M100Tokenizer'"),
            ({"src_lang": "xx_XX"}, r"`src_lang` must be one of the folder's language codes. "
                                    r"Received: src_lang='xx_XX'"),
            ({"pad_token": "<blank>"}, r"`pad_token` must be '<pad>' \(NLLB's; .*"
                                       r"Received: pad_token='<blank>'"),
            ({"additional_special_tokens": NLLB_CODES[::-1]},
             r"`added_tokens_decoder` must give each token the id the tokenizer gives it "
             r"\('eng_Latn': 103\)\. Received: added_tokens_decoder\['101'\]='eng_Latn'")):
        (tmp_path / "tokenizer_config.json").write_text(json.dumps({**config, **change}))
        with pytest.raises(ValueError, match=message):
            family.from_folder(tmp_path)
