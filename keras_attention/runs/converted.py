"""The `"converted"` model kind: a run folder holding a converted Hugging Face
checkpoint (`keras-attention convert`, `keras_attention.runs.convert`).

Its `config.json` sets `converted_from` (`{"family": ..., "checkpoint": ...}`,
the kind's marker), names `tokenizer` for both tokenizers (the checkpoint's
files, copied unchanged) and holds the checkpoint's generation settings in
`decoding` (`DECODING_KEYS`). `generate_kwargs` is the kind's one mapping from
those settings to `Seq2SeqModel.generate` (the functions
`keras_attention.runs.registry` holds for the kind).
"""

import numbers

#: The keys of a converted run's `decoding`: the lengths, the search
#: (`strategy` `"greedy"` or `"beam"`, `num_beams`, `length_penalty` in the
#: Hugging Face form, `early_stopping`) and the generation rules of
#: `Seq2SeqModel.generate` (`min_length` as `generate` takes it: the
#: checkpoint's minus one; `target_length` is `generate`'s `max_length`).
DECODING_KEYS = (
    "source_length", "target_length", "strategy", "num_beams", "length_penalty",
    "early_stopping", "min_length", "no_repeat_ngram_size", "forced_bos_token_id",
    "forced_eos_token_id", "bad_words_ids", "suppress_token_ids", "begin_suppress_token_ids",
    "renormalize_logits", "decoder_start_token_id",
)
_RULES = ("min_length", "no_repeat_ngram_size", "forced_bos_token_id", "forced_eos_token_id",
          "bad_words_ids", "suppress_token_ids", "begin_suppress_token_ids",
          "renormalize_logits", "decoder_start_token_id")


def decoding_from_generation(generation, source_length):
    """A converted run's `decoding` (JSON) from `load_pretrained`'s
    `info["generation"]` (`generate` keyword arguments with a sampler).

    Raises:
        ValueError: naming the setting, for a sampling checkpoint
            (`do_sample`) or one returning several sequences: a run answers
            one line with one line.
    """
    from keras_attention.decoding.samplers import BeamSampler, GreedySampler

    sampler = generation["sampler"]
    decoding = {"source_length": source_length, "target_length": generation["max_length"]}
    if isinstance(sampler, BeamSampler):
        if sampler.num_return_sequences != 1:
            raise ValueError(
                "A converted run answers each line with one line: the checkpoint's "
                "`num_return_sequences` must be 1. "
                f"Received: num_return_sequences={sampler.num_return_sequences}")
        decoding.update(strategy="beam", num_beams=sampler.num_beams,
                        length_penalty=sampler.length_penalty,
                        early_stopping=sampler.early_stopping)
    elif isinstance(sampler, GreedySampler):
        decoding.update(strategy="greedy", num_beams=1)
    else:
        raise ValueError(
            "A converted run decodes with greedy or beam search: the checkpoint's generation "
            f"config samples (`do_sample`), which is not supported. Received: sampler={sampler!r}")
    for key in _RULES:
        if key in generation:
            value = generation[key]
            decoding[key] = [list(ids) for ids in value] if key == "bad_words_ids" else (
                list(value) if isinstance(value, (list, tuple)) else value)
    return decoding


def generate_kwargs(decoding, strategy=None, num_beams=None):
    """The keyword arguments of `Seq2SeqModel.generate` for a converted run's
    `decoding`: the checkpoint's search and rules.

    `strategy` and `num_beams` override the recorded search: `"beam"` with
    the recorded `num_beams` (4 when the checkpoint decodes greedily) unless
    `num_beams` is given, `"greedy"` ignores `num_beams`; `num_beams` > 1
    alone means beam search. The beams are scored the Hugging Face way
    (`length_penalty_form="hf"`) with the recorded `length_penalty` and
    `early_stopping`.

    Raises:
        ValueError: naming the key, for a `decoding` key or value this kind
            does not take.

    Example:

    >>> kwargs = generate_kwargs({"source_length": 64, "target_length": 11,
    ...                           "strategy": "beam", "num_beams": 4, "length_penalty": 1.0,
    ...                           "early_stopping": False, "decoder_start_token_id": 39})
    >>> kwargs["max_length"], kwargs["sampler"].length_penalty_form, kwargs["sampler"].num_beams
    (11, 'hf', 4)
    >>> generate_kwargs({"source_length": 64, "target_length": 11},
    ...                 strategy="greedy")["sampler"]
    GreedySampler()
    """
    _check(decoding, strategy, num_beams)
    from keras_attention.decoding.samplers import BeamSampler, GreedySampler

    recorded = decoding.get("num_beams", 1)
    if strategy is None:
        strategy = "beam" if (num_beams or 1) > 1 else decoding.get("strategy", "greedy")
    if strategy == "beam":
        sampler = BeamSampler(num_beams=num_beams or (recorded if recorded > 1 else 4),
                              length_penalty=float(decoding.get("length_penalty", 1.0)),
                              length_penalty_form="hf",
                              early_stopping=decoding.get("early_stopping", False))
    else:
        sampler = GreedySampler()
    kwargs = {"max_length": decoding["target_length"], "sampler": sampler}
    kwargs.update((key, decoding[key]) for key in _RULES if decoding.get(key) is not None)
    return kwargs


def _check(decoding, strategy, num_beams):
    def refuse(key, what):
        return ValueError(f"Argument `decoding['{key}']` must be {what}. "
                          f"Received: {key}={decoding.get(key)!r}")

    if not isinstance(decoding, dict):
        raise ValueError(f"Argument `decoding` must be a dict. Received: decoding={decoding!r}")
    unknown = sorted(set(decoding) - set(DECODING_KEYS))
    if unknown:
        raise ValueError(f"Argument `decoding` has unknown keys {unknown} (known: "
                         f"{', '.join(DECODING_KEYS)}). Received: decoding={decoding!r}")
    for key in ("source_length", "target_length", "num_beams"):
        value = decoding.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise refuse(key, "a positive int")
    if decoding.get("strategy", "greedy") not in ("greedy", "beam"):
        raise refuse("strategy", "'greedy' or 'beam'")
    penalty = decoding.get("length_penalty", 1.0)
    if isinstance(penalty, bool) or not isinstance(penalty, numbers.Real):
        raise refuse("length_penalty", "a number")
    if strategy not in (None, "greedy", "beam"):
        raise ValueError(f"Argument `strategy` must be 'greedy' or 'beam' for a converted run. "
                         f"Received: strategy={strategy!r}")
    if num_beams is not None and (isinstance(num_beams, bool) or not isinstance(num_beams, int)
                                  or num_beams < 1):
        raise ValueError(f"Argument `num_beams` must be a positive int. "
                         f"Received: num_beams={num_beams!r}")


## The model kind's hooks


def load_tokenizers(run):
    """`(tokenizer, tokenizer)`: the checkpoint's tokenizer (one object for
    both sides; Marian's target side is `encode(..., target=True)`) from the
    folder's `tokenizer/`.

    Raises:
        RunFolderError: naming the file that is missing or does not load.
    """
    import os

    from keras_attention.pretrained.tokenizers import TOKENIZER_FILES, load_tokenizer

    family = run.metadata["converted_from"].get("family")
    folder = run.path(run.metadata["tokenizers"]["source"], folder=True)
    if family not in TOKENIZER_FILES:
        raise run.folder_error(os.path.join(run.run_dir, "config.json"),
                               f"naming converted_from.family={family!r}, not one of "
                               f"{', '.join(map(repr, TOKENIZER_FILES))}")
    for name in TOKENIZER_FILES[family]:
        run.path(os.path.join(run.metadata["tokenizers"]["source"], name))
    try:
        tokenizer = load_tokenizer(folder, family)
    except Exception as error:  # sentencepiece, JSON or keras-hub errors of a bad file
        message = str(error).strip().splitlines()[-1:] or [type(error).__name__]
        raise run.folder_error(folder, f"not a {family} tokenizer's files, corrupt or from "
                                       f"another family ({message[0][:200]})") from None
    return tokenizer, tokenizer


def vocabularies(run):
    """The tokenizer's size against the model's vocabularies: smaller is
    allowed (T5 pads its embedding to 32128 rows for 32100 ids), larger not."""
    name = run.metadata["tokenizers"]["source"]
    size = run.source_tokenizer.vocabulary_size
    return [(name, size, run.model.source_vocabulary_size, "source vocabulary", True),
            (name, size, run.model.target_vocabulary_size, "target vocabulary", True)]


def encode_sources(texts, tokenizer, source_length):
    """`(N, S)` int32 ids of `texts`, padded with the tokenizer's pad id to the
    longest row; a row longer than `source_length` keeps its first
    `source_length - 1` ids and its end token."""
    import numpy as np

    rows = tokenizer.encode(list(texts))
    rows = [row if len(row) <= source_length else row[:source_length - 1] + [row[-1]]
            for row in rows]
    ids = np.full((len(rows), max(map(len, rows))), tokenizer.pad_token_id, "int32")
    for i, row in enumerate(rows):
        ids[i, :len(row)] = row
    return ids


def generate_texts(run, texts, strategy, num_beams, verbose):
    """A converted run's outputs: encoded by the checkpoint's tokenizer,
    decoded with its generation settings, detokenized."""
    source = encode_sources(texts, run.source_tokenizer, run.decoding["source_length"])
    generated = run.model.generate(source, batch_size=64, verbose=verbose,
                                   **generate_kwargs(run.decoding, strategy, num_beams))
    return run.target_tokenizer.decode(generated)


__all__ = ["DECODING_KEYS", "decoding_from_generation", "encode_sources", "generate_kwargs",
           "generate_texts", "load_tokenizers", "vocabularies"]
