"""Configurations of the summarization recipe: defaults, presets and the
rules of each setting. Override any field with `--key=value` on the command
line (`keras_attention.settings` reads and checks them)."""

from keras_attention import distribute, runtime
from keras_attention.recipes import fine_tuning
from keras_attention.settings import at_least, fraction, greater_than, one_of


def get_config():
    """The default: built-in synthetic abstracts, no file needed (minutes on 2 CPU cores)."""
    return {
        # A folder with SciTLDR-style train.jsonl / dev.jsonl / test.jsonl
        # ("document", "summary", "references"); "" = built-in abstracts.
        "data": "",
        "num_examples": 4000,  # built-in data: number of abstracts
        "all_references": True,  # train on every reference summary of a document
        "vocabulary_size": 2000,  # one SentencePiece vocabulary (copying works by id)
        "max_source_length": 160,  # document tokens (longer ones are cut)
        "max_target_length": 56,  # summary tokens
        # "abstractive": a pointer-generator Transformer writes the summary;
        # "extractive": a Transformer over tokens and sentences picks the
        # document's sentence closest to a summary (trained on the oracle
        # sentence; recipes/summarization/extractive.py).
        "summarizer": "abstractive",
        "max_sentences": 16,  # extractive: sentences scored per document
        "sentence_layers": 1,  # extractive: Transformer blocks over the sentences
        "num_layers": 2,
        "hidden_dim": 128,
        "num_heads": 4,
        "intermediate_dim": 256,
        "dropout": 0.1,
        "pointer_generator": True,  # copy attention with coverage (See et al. 2017)
        "coverage_loss_weight": 1.0,
        "epochs": 3,
        # Gap-sentence pretraining (PEGASUS) on the training documents alone:
        # this many epochs of "document without its principal sentence(s) ->
        # those sentences" before the summaries (0 = off).
        "gap_sentence_epochs": 0,
        "gap_sentences": 1,  # principal sentences per pretraining target
        # Also train on "document -> its sentence closest to a reference" (the
        # extractive oracle) next to the reference summaries.
        "oracle_sentences": False,
        "keep_best_epoch": True,  # restore the epoch with the lowest validation loss
        "batch_size": 32,  # global: split between the replicas of a distribution
        "learning_rate": 1e-3,
        "distribution": "default",  # or mirrored, multi_worker, tpu (TF); data_parallel (JAX)
        # Execution (keras_attention.runtime.fast_defaults): "auto" = the fastest
        # measured choice for this machine, printed at the start of a run.
        "precision": "auto",  # auto, float32, mixed_bfloat16 or mixed_float16
        "jit_compile": "auto",  # auto, true (XLA) or false (graph mode)
        "backup_dir": "",  # resume an interrupted fit from here (BackupAndRestore; "" = off)
        "num_beams": 4,
        "length_penalty": 1.0,
        "coverage_penalty": 0.0,
        "validation_fraction": 0.05,  # built-in data only (SciTLDR has its splits)
        "test_fraction": 0.05,
        "max_test_examples": 500,
        "output_dir": "runs/summarization",
        "overwrite": False,  # replace the run already in output_dir (a run folder only)
        "seed": 0,
        # Fine-tune the run folder of `keras-attention convert` (a BART or T5
        # checkpoint) with its tokenizer, in place of a new model: "" = off
        # (keras_attention.recipes.fine_tuning; docs/guides/pretrained.md).
        "init_from": "",
        "fine_tune_learning_rate": fine_tuning.FINE_TUNE_LEARNING_RATE,  # with init_from
    }


def get_quick_config():
    """A tiny configuration for tests: seconds, not minutes."""
    config = get_config()
    config.update(
        num_examples=400, vocabulary_size=200, num_layers=1, hidden_dim=32,
        num_heads=2, intermediate_dim=64, epochs=1, max_test_examples=16,
        max_source_length=64, max_target_length=24, num_beams=2, gap_sentence_epochs=1,
        oracle_sentences=True,  # both extra kinds of pairs run in the tests
        # float32, and no compile time in tests (XLA on JAX: runtime.quick_jit_compile)
        precision="float32", jit_compile=runtime.quick_jit_compile(),
    )
    return config


def get_scitldr_config():
    """SciTLDR abstracts (../shared/data/summarization/scitldr): the extractive
    summarizer, above lead-1 on ROUGE-1, -2 and -L (examples/RESULTS.md)."""
    config = get_scitldr_abstractive_config()
    config.update(summarizer="extractive", epochs=EXTRACTIVE_EPOCHS)
    return config


EXTRACTIVE_EPOCHS = 10


def get_scitldr_abstractive_config():
    """SciTLDR with the pointer-generator Transformer (examples/RESULTS.md)."""
    config = get_config()
    config.update(
        data="../shared/data/summarization/scitldr", vocabulary_size=4000,
        max_source_length=320, max_target_length=48,
        # The oracle sentences double the training pairs: 6 epochs see as
        # many pairs as the 10 epochs measured without them.
        oracle_sentences=True, epochs=6,
    )
    return config


PRESETS = {
    "default": get_config,
    "quick": get_quick_config,
    "scitldr": get_scitldr_config,
    "scitldr_abstractive": get_scitldr_abstractive_config,
}

# What each setting accepts beyond its type (keras_attention.settings).
RULES = {
    "num_examples": at_least(1),
    "vocabulary_size": at_least(5),  # the 4 special tokens and one more
    "max_source_length": at_least(1),
    "max_target_length": at_least(1),
    "summarizer": one_of("abstractive", "extractive"),
    "max_sentences": at_least(1),
    "sentence_layers": at_least(1),
    "num_layers": at_least(1),
    "hidden_dim": at_least(1),
    "num_heads": at_least(1),
    "intermediate_dim": at_least(1),
    "dropout": fraction(),
    "coverage_loss_weight": at_least(0),
    "epochs": at_least(1),
    "gap_sentence_epochs": at_least(0),
    "gap_sentences": at_least(1),
    "batch_size": at_least(1),
    "learning_rate": greater_than(0),
    "distribution": one_of(*distribute.DISTRIBUTION_STRATEGIES),
    "precision": one_of(*runtime.PRECISIONS),
    "jit_compile": one_of(*runtime.JIT_CHOICES),
    "num_beams": at_least(1),
    "length_penalty": at_least(0),
    "coverage_penalty": at_least(0),
    "validation_fraction": fraction(),
    "test_fraction": fraction(),
    "max_test_examples": at_least(1),
    "seed": at_least(0),
    "fine_tune_learning_rate": greater_than(0),
}

# Settings a run resuming from a `--backup_dir` may change; the others must
# be those the backup was made with (keras_attention.recipes.backup).
BACKUP_MAY_DIFFER = (
    # init_from is refused with backup_dir: a backup's run is never a fine-tuning one.
    "init_from", "fine_tune_learning_rate",
    "epochs", "output_dir", "overwrite", "backup_dir", "distribution", "jit_compile",
    "num_beams", "length_penalty", "coverage_penalty", "max_test_examples",
)

# Settings that only one summarizer reads.
ABSTRACTIVE_ONLY = (
    "max_target_length", "all_references", "pointer_generator", "coverage_loss_weight",
    "gap_sentence_epochs", "gap_sentences", "oracle_sentences", "num_beams",
    "length_penalty", "coverage_penalty",
)
EXTRACTIVE_ONLY = ("max_sentences", "sentence_layers")
BUILT_IN_DATA_ONLY = ("num_examples", "validation_fraction", "test_fraction")


def unused_settings(config):
    """`{setting: when}` of the settings `config` does not read (the command
    line refuses a change to one: keras_attention.settings.parse)."""
    summarizer = config["summarizer"]
    other = ABSTRACTIVE_ONLY if summarizer == "extractive" else EXTRACTIVE_ONLY
    unused = {key: f"with summarizer={summarizer!r}" for key in other}
    unused.update(fine_tuning.unused_settings(config))
    if not config["init_from"]:
        unused["fine_tune_learning_rate"] = "without `init_from` (`learning_rate` is used)"
    if config["data"]:
        unused.update({key: "with a `data` folder (its own splits)"
                       for key in BUILT_IN_DATA_ONLY})
    return unused
