"""`export_run`: a saved run as a TensorFlow SavedModel that maps strings to
strings (`keras-attention export RUN_DIR EXPORT_DIR`, the default format).

How each model kind builds its graph is one table, `ARCHIVES`
(`register_archive` adds a kind). A `TextGenerator`'s, recipe run and
converted checkpoint alike, is `text_generator_archive`: its tokenizers'
graph forms (`pretrained.graph_tokenizers.graph_tokenizer`: a recipe's
SentencePiece models, a checkpoint's tokenizer), its `GenerationConfig`'s
search and rules, served through `serving_graph.serving_archive`.
"""

import os

from keras_attention.export.serving_graph import serving_archive
from keras_attention.runs.generation import RULE_KEYS, SEARCH_STRATEGIES  # no sampling

#: The `generate` keyword arguments the exported graph passes to the search
#: itself, beyond `sampler` and `max_length`; the other `RULE_KEYS` of
#: `GenerationConfig.generate_kwargs`'s output are `decoding.GenerationRules`.
_SEARCH_KEYS = ("suppress_token_ids", "decoder_start_token_id")
_RULE_KEYS = tuple(key for key in RULE_KEYS if key not in _SEARCH_KEYS)


def export_run(run_dir, export_dir, *, strategy=None, num_beams=None):
    """Writes a SavedModel that turns a batch of strings into generated strings.

    The graph does what `keras-attention generate RUN_DIR` does: SentencePiece
    tokenization with the run's `source.spm`, sources cut to the recipe's
    source length, the model's cached generation with the recipe's decoding
    settings (strategy, beams, length and coverage penalties, target length,
    the token ids never generated: `suppress_token_ids`), then the tokens up
    to the end token detokenized with `target.spm`. The generation loop is a
    nested `tf.function(jit_compile=True)`: tokenization runs outside XLA,
    generation inside.

    The export folder is written atomically (a temporary sibling folder
    renamed at the end), so a failure leaves nothing behind.

    Args:
        run_dir: a run folder saved by the translation, summarization or
            question-answering recipe (a `Seq2SeqModel`: transformer, RNN or
            pointer-generator), or by `keras-attention convert` (its
            checkpoint's tokenizer and generation settings). The run's
            model kind builds the graph (`ARCHIVES`).
        export_dir: where to write the SavedModel; must not exist or be an
            empty folder (and not the working directory or a parent of it).
        strategy: `"greedy"` or `"beam"`; default: the recipe's.
        num_beams: positive int, the beam width; default: the recipe's.

    Returns:
        The export folder, as a `str`. The SavedModel's `serve` function and
        its `serving_default` signature take `inputs`: tf.string `(B,)` and
        return tf.string `(B,)` (the signature names its output `outputs`).

    Raises:
        ValueError: naming the argument, for a backend other than TensorFlow
            (`Received: backend=...`), a missing run folder or file
            (a `keras_attention.runs.RunFolderError` naming the file, also
            for a corrupt one), an unknown recipe, a model without cached generation, an export
            folder that exists and is not empty, or a bad `strategy` or
            `num_beams`.
        OSError: naming `export_dir`, when the SavedModel cannot be written
            (e.g. a full disk); the destination is left as it was.

    Example:

    ```
    export_run("runs/translation", "exported/translation", strategy="beam")

    # Then, in any process with TensorFlow and TensorFlow Text:
    import tensorflow as tf
    import tensorflow_text  # registers the SentencePiece ops
    translator = tf.saved_model.load("exported/translation")
    translator.serve(tf.constant(["March 3, 2021"]))  # tf.string (1,)
    ```
    """
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    from keras_attention import files, runs
    from keras_attention.validation import check_positive_int

    if keras.backend.backend() != "tensorflow":
        raise ValueError(
            "Exporting writes a TensorFlow SavedModel and needs the TensorFlow backend: run it "
            "with KERAS_BACKEND=tensorflow (e.g. `KERAS_BACKEND=tensorflow keras-attention "
            f"export ...`). Received: backend={keras.backend.backend()!r}"
        )
    run_dir, export_dir = os.fspath(run_dir), os.fspath(export_dir)
    if not os.path.isdir(run_dir):
        raise ValueError(
            "Argument `run_dir` must be a run folder saved by a recipe. "
            f"Received: run_dir={run_dir!r} (no such folder)"
        )
    if files.is_working_directory_or_parent(export_dir):
        raise ValueError(
            "Argument `export_dir` must not be the working directory or one of its parents. "
            f"Received: export_dir={export_dir!r}"
        )
    if os.path.lexists(export_dir) and (
            not os.path.isdir(export_dir) or os.listdir(export_dir)):
        what = "a file" if not os.path.isdir(export_dir) else "a folder that is not empty"
        raise ValueError(
            "Argument `export_dir` must not exist or be an empty folder. "
            f"Received: export_dir={export_dir!r} ({what})"
        )
    if strategy is not None and strategy not in SEARCH_STRATEGIES:
        raise ValueError(
            f"Argument `strategy` must be one of {', '.join(map(repr, SEARCH_STRATEGIES))} "
            f"or None (the recipe's). Received: strategy={strategy!r}"
        )
    num_beams = check_positive_int("num_beams", num_beams, allow_none=True)
    run = runs.open_run(run_dir)
    _check_model(run)
    archive = ARCHIVES[run.kind.name](run, strategy, num_beams)
    _write(archive, export_dir)
    return export_dir


def register_archive(kind, build):
    """Makes the runs of the model kind named `kind`
    (a `keras_attention.runs.TextToText` subclass with `exports=True`)
    exportable: `build(run, strategy, num_beams)` -> the
    `keras.export.ExportArchive` of a run `runs.open_run` read (a bad setting is a
    `ValueError` raised before any work); returns `build`."""
    if not callable(build):
        raise ValueError(f"Argument `build` must be callable. Received: build={build!r}")
    ARCHIVES[kind] = build
    return build


def _write(archive, export_dir):
    """Writes the SavedModel atomically; a write that fails (a full disk:
    TensorFlow's writer raises its own `ResourceExhaustedError`) is an
    `OSError` naming `export_dir`, and nothing is left in its place."""
    import tensorflow as tf

    from keras_attention import files

    try:
        files.write_folder_atomically(export_dir,
                                      lambda folder: archive.write_out(folder, verbose=False))
    except (OSError, tf.errors.OpError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else (
            getattr(error, "message", None) or str(error))
        failure = OSError(
            f"Argument `export_dir`: the SavedModel could not be written ({reason}); nothing "
            f"was left in its place. Received: export_dir={export_dir!r}")
        failure.errno = getattr(error, "errno", None)  # ENOSPC for a full disk
        raise failure from None


def _check_model(run):
    if not run.kind.exports or run.kind.name not in ARCHIVES:
        raise ValueError(
            f"Argument `run_dir` must hold a `Seq2SeqModel` (transformer, RNN or "
            f"pointer-generator) to export; its model is "
            f"{run.kind.description}, which has no cached generation. "
            f"Received: run_dir={run.run_dir!r}"
        )


def text_generator_archive(run, strategy, num_beams):
    """How the `"seq2seq"` model kind (`runs.TextGenerator`) exports
    (`ARCHIVES`): the `keras.export.ExportArchive` of a run whose graph
    encodes with the graph form of its source tokenizer, cut to the source
    length as the tokenizer cuts a line (`Tokenizer.truncate`: a recipe's
    SentencePiece model keeps its first ids, a checkpoint's tokenizer its
    end token), searches as the run's `GenerationConfig` with `strategy` and
    `num_beams` says (its Hugging Face or GNMT beam scoring, its generation
    rules, `decoder_start_token_id`, the suppressed ids) through
    `Seq2SeqModel.search` compiled with XLA, and detokenizes the tokens
    before the first end token with the target tokenizer's graph form (as
    `keras-attention generate`, and `batch_decode(...,
    skip_special_tokens=True)` for a checkpoint).

    Args:
        run: a `runs.TextGenerator` read by `runs.open_run`.
        strategy: `"greedy"`, `"beam"` or None (the run's).
        num_beams: positive int or None (the run's).

    Raises:
        ValueError: before any work, for a setting the graph cannot honour
            (naming it: `Received: name=value`), e.g. a beam sampler
            returning several sequences.
    """
    import tensorflow as tf

    from keras_attention.decoding import GenerationRules
    from keras_attention.pretrained.graph_tokenizers import graph_tokenizer

    generation = run.generation.with_search(strategy, num_beams)
    kwargs = generation.generate_kwargs()
    sampler, max_length = kwargs.pop("sampler"), kwargs.pop("max_length")
    unknown = sorted(set(kwargs) - set(_SEARCH_KEYS) - set(_RULE_KEYS))
    if unknown:
        raise ValueError(
            f"Argument `run_dir`: the exported graph cannot honour the generation setting "
            f"{unknown[0]!r}. Received: {unknown[0]}={kwargs[unknown[0]]!r}")
    if getattr(sampler, "num_return_sequences", 1) != 1:
        raise ValueError(
            "Argument `num_beams`: the exported graph answers each line with one line. "
            f"Received: num_return_sequences={sampler.num_return_sequences}")
    rules = {key: kwargs[key] for key in _RULE_KEYS if key in kwargs}
    rules = GenerationRules(**rules) if rules else None
    search = {key: kwargs[key] for key in _SEARCH_KEYS if key in kwargs}
    model, source_length, end_id = run.model, generation.source_length, run.model.end_token_id
    source_tokens = graph_tokenizer(run.source_tokenizer)
    target_tokens = (source_tokens if _one_model(run.source_tokenizer, run.target_tokenizer)
                     else graph_tokenizer(run.target_tokenizer))

    def encode(inputs):
        # As `tokenizer.encode_lines` with the run's tokenizer: ragged
        # (B, <=S), each row cut as `Tokenizer.truncate` cuts it.
        return source_tokens.truncate(source_tokens.encode(inputs), source_length)

    @tf.function(jit_compile=True, autograph=False)
    def generate(source):
        # The model's own cached search, as `generate` runs it, on int32
        # `source (B, S)` with `B` and `S` known only at run time: the best
        # hypothesis of each row `(B, L)`, padded after its end token.
        return model.search(source, sampler, max_length, rules=rules, **search).token_ids

    def detokenize(tokens):
        # The tokens before the first end token (the graph tokenizer drops
        # padding and the special tokens).
        tokens = tf.cast(tokens, tf.int32)
        ended = tf.cumsum(tf.cast(tokens == end_id, tf.int32), axis=1)
        return target_tokens.decode(tf.ragged.boolean_mask(tokens, ended == 0))

    trackables = [source_tokens] + ([] if target_tokens is source_tokens else [target_tokens])
    return serving_archive(model, encode, generate, detokenize, trackables=trackables)


def _one_model(source_tokenizer, target_tokenizer):
    """Whether both sides are one tokenizer (one object, or SentencePiece
    models of the same bytes: a shared vocabulary), served by one graph."""
    proto = getattr(source_tokenizer, "proto", None)
    return target_tokenizer is source_tokenizer or (
        isinstance(proto, bytes) and proto == getattr(target_tokenizer, "proto", None))


#: `{model kind name: build(run, strategy, num_beams)}`: how each kind exports.
ARCHIVES = {"seq2seq": text_generator_archive}

__all__ = ["ARCHIVES", "export_run", "register_archive", "text_generator_archive"]
