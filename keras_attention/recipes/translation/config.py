"""Configurations of the translation recipe: defaults, presets and the rules
of each setting. Override any field with `--key=value` on the command line
(`keras_attention.settings` reads and checks them)."""

from keras_attention import distribute, runtime
from keras_attention.recipes import fine_tuning
from keras_attention.settings import at_least, fraction, greater_than, one_of


def get_config():
    """The default: built-in dates data, no file needed (a few minutes on 2 CPU cores)."""
    return {
        "data": "",  # a Tatoeba/Anki TSV file (English<TAB>target); "" = built-in dates
        "num_examples": 20000,  # built-in data: number of date pairs
        "max_pairs": 0,  # file data: use at most this many pairs (0 = all)
        "architecture": "transformer",  # or "rnn" (Bahdanau attention)
        "vocabulary_size": 800,  # SentencePiece, trained on the train split (see shared_vocabulary)
        # One vocabulary and token table for both languages (the layout of
        # Hugging Face's M2M100, so that `keras-attention export --format
        # huggingface` writes the run for transformers and CTranslate2);
        # false: a vocabulary of vocabulary_size per language (not exported there).
        "shared_vocabulary": True,
        "max_length": 32,  # tokens per sentence (longer ones are cut)
        "num_layers": 2,
        "hidden_dim": 128,
        "num_heads": 4,
        "intermediate_dim": 256,
        "dropout": 0.1,
        "epochs": 6,
        "batch_size": 64,  # global: split between the replicas of a distribution
        # Pack several sentence pairs per row of max_length tokens (transformer only;
        # a batch still holds about batch_size pairs): less padding, the same loss per token.
        "pack": False,
        "learning_rate": 2e-3,  # the peak rate with warmup_steps > 0
        # Linear warmup over this many steps, then inverse square root decay
        # (keras_attention.schedules.WarmupInverseSqrtDecay); 0 = a constant rate.
        "warmup_steps": 0,
        # Cross-entropy with this much label smoothing (padding still left out:
        # keras_attention.losses.SmoothedSparseCrossentropy); 0 = none.
        "label_smoothing": 0.0,
        # Evaluate and save the mean of the weights after each of the last N
        # epochs (keras_attention.callbacks.AverageLastEpochs); 1 = the last epoch's.
        "average_last_epochs": 1,
        "distribution": "default",  # or mirrored, multi_worker, tpu (TF); data_parallel (JAX)
        # Execution (keras_attention.runtime.fast_defaults): "auto" = the fastest
        # measured choice for this machine, printed at the start of a run.
        "precision": "auto",  # auto, float32, mixed_bfloat16 or mixed_float16
        "jit_compile": "auto",  # auto, true (XLA) or false (graph mode)
        "backup_dir": "",  # resume an interrupted fit from here (BackupAndRestore; "" = off)
        "strategy": "beam",  # decoding for the evaluation: greedy or beam
        "num_beams": 4,
        "length_penalty": 0.6,
        # How beams are scored: "hf" (transformers' sum of log-probabilities /
        # length ** length_penalty, so an exported run searches the same way)
        # or "gnmt" (GNMT's ((5 + length) / 6) ** length_penalty); the same
        # BLEU on eng_deu (examples/RESULTS.md).
        "length_penalty_form": "hf",
        "validation_fraction": 0.05,
        "test_fraction": 0.05,
        "max_test_examples": 1000,
        "output_dir": "runs/translation",
        "overwrite": False,  # replace the run already in output_dir (a run folder only)
        "seed": 0,
        # Fine-tune the run folder of `keras-attention convert` (a Marian, BART or
        # T5 checkpoint) with its tokenizer, in place of a new model: "" = off
        # (keras_attention.recipes.fine_tuning; docs/guides/pretrained.md).
        "init_from": "",
        "fine_tune_learning_rate": fine_tuning.FINE_TUNE_LEARNING_RATE,  # with init_from
    }


def get_quick_config():
    """A tiny configuration for tests: seconds, not minutes."""
    config = get_config()
    config.update(
        num_examples=1500, vocabulary_size=120, num_layers=1, hidden_dim=32,
        num_heads=2, intermediate_dim=64, epochs=2, max_test_examples=40,
        strategy="greedy",
        # float32, and no compile time in tests (XLA on JAX: runtime.quick_jit_compile)
        precision="float32", jit_compile=runtime.quick_jit_compile(),
    )
    return config


def get_eng_deu_config():
    """The Tatoeba English->German configuration of examples/RESULTS.md."""
    config = get_config()
    config.update(
        data="../shared/data/translation/eng-deu.tsv", vocabulary_size=8000,
        max_length=24, batch_size=128,
        # 3+3 layers with a wider feed-forward, made affordable by packing (about
        # twice the non-pad tokens per second of the length-bucketed batches).
        num_layers=3, hidden_dim=256, num_heads=8, intermediate_dim=1024, pack=True,
        dropout=0.1, label_smoothing=0.1,
        # Warmup to 2e-3 over 800 steps (~2.4 of 340 packed steps an epoch), then 1/sqrt(step).
        learning_rate=2e-3, warmup_steps=800,
        epochs=10, average_last_epochs=4,
    )
    return config


PRESETS = {
    "default": get_config,
    "quick": get_quick_config,
    "eng_deu": get_eng_deu_config,
}

# What each setting accepts beyond its type (keras_attention.settings).
RULES = {
    "num_examples": at_least(1),
    "max_pairs": at_least(0),
    "architecture": one_of("transformer", "rnn"),
    "vocabulary_size": at_least(5),  # the 4 special tokens and one more
    "max_length": at_least(1),
    "num_layers": at_least(1),
    "hidden_dim": at_least(1),
    "num_heads": at_least(1),
    "intermediate_dim": at_least(1),
    "dropout": fraction(),
    "epochs": at_least(1),
    "batch_size": at_least(1),
    "learning_rate": greater_than(0),
    "warmup_steps": at_least(0),
    "label_smoothing": fraction(),
    "average_last_epochs": at_least(1),
    "distribution": one_of(*distribute.DISTRIBUTION_STRATEGIES),
    "precision": one_of(*runtime.PRECISIONS),
    "jit_compile": one_of(*runtime.JIT_CHOICES),
    "strategy": one_of("greedy", "beam"),
    "num_beams": at_least(1),
    "length_penalty": at_least(0),
    "length_penalty_form": one_of("hf", "gnmt"),
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
    "strategy", "num_beams", "length_penalty", "length_penalty_form", "max_test_examples",
)

TRANSFORMER_ONLY = ("num_layers", "num_heads", "intermediate_dim")


def unused_settings(config):
    """`{setting: when}` of the settings `config` does not read (the command
    line refuses a change to one: keras_attention.settings.parse)."""
    unused = {}
    if config["architecture"] != "transformer":
        unused.update({key: f"with architecture={config['architecture']!r}"
                       for key in TRANSFORMER_ONLY})
    unused.update(fine_tuning.unused_settings(config))
    if not config["init_from"]:
        unused["fine_tune_learning_rate"] = "without `init_from` (`learning_rate` is used)"
    if config["data"]:
        unused["num_examples"] = "with a `data` file (it counts built-in date pairs)"
    else:
        unused["max_pairs"] = "without a `data` file (it limits the pairs read from one)"
    return unused
