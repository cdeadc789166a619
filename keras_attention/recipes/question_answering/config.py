"""Configurations of the question-answering recipe: defaults, presets and the
rules of each setting. Override any field with `--key=value` on the command
line (`keras_attention.settings` reads and checks them)."""

from keras_attention import distribute, runtime
from keras_attention.settings import at_least, fraction, greater_than, one_of


def get_config():
    """Default: an End-To-End Memory Network on built-in bAbI-like stories."""
    return {
        "data": "",  # a bAbI folder (e.g. ../shared/data/qa/babi/en); "" = built-in stories
        "tasks": "1-20",  # bAbI tasks to train and test on, e.g. "1,2,3" or "1-20"
        "num_examples": 6000,  # built-in data: number of questions
        # or "transformer" (seq2seq, generates the answer) or "universal_transformer"
        # (an answer classifier like the memory network, over the facts and question)
        "architecture": "memory_network",
        "vocabulary_size": 400,  # words (memory network) or SentencePiece pieces (transformer)
        "hidden_dim": 50,
        "epochs": 20,
        "batch_size": 32,  # global: split between the replicas of a distribution
        "learning_rate": 0.01,
        "validation_fraction": 0.1,  # of the training questions; picks the best epoch
        "test_fraction": 0.1,  # built-in data only (bAbI has its own test files)
        "output_dir": "runs/question_answering",
        "overwrite": False,  # replace the run already in output_dir (a run folder only)
        "distribution": "default",  # or mirrored, multi_worker, tpu (TF); data_parallel (JAX)
        # Execution (keras_attention.runtime.fast_defaults): "auto" = the fastest
        # measured choice for this machine, printed at the start of a run.
        "precision": "auto",  # auto, float32, mixed_bfloat16 or mixed_float16
        "jit_compile": "auto",  # auto, true (XLA) or false (graph mode)
        "backup_dir": "",  # resume an interrupted fit from here (BackupAndRestore; "" = off)
        "seed": 0,
        # Memory network (Sukhbaatar et al. 2015): PE, TE, RN, adjacent tying.
        "num_hops": 3,
        "max_memories": 50,  # the most recent sentences kept as memories
        "temporal_noise": 0.1,  # the paper's random noise (RN)
        "linear_start": False,  # the paper's linear start (LS): hops start without softmax
        "linear_start_patience": 1,  # epochs without a lower validation loss that end LS
        "decay_epochs": 15,  # halve the learning rate every this many epochs
        "restarts": 1,  # train this many networks (seeds seed, seed+1, ...), keep the best
        # Transformer seq2seq: the story (last `max_sentences`) and question as one text.
        "max_sentences": 20,
        "question_first": False,  # encoder text: "question | story" (True) or "story | question"
        "max_length": 160,  # source tokens
        "max_answer_length": 12,  # answer tokens (with the end token)
        "num_layers": 2,
        "num_heads": 4,
        "intermediate_dim": 256,
        "dropout": 0.1,
        # Universal Transformer (Dehghani et al. 2019): hidden_dim, num_heads,
        # intermediate_dim and dropout above, one block applied max_steps times.
        "max_steps": 6,
        "act": True,  # adaptive computation time: each fact halts on its own
        "ponder_cost": 0.01,  # weight of the ACT ponder cost in the loss
        "warmup_epochs": 2,  # linear warm-up of the learning rate, then cosine decay to 0
    }


def get_quick_config():
    """A tiny configuration for tests: seconds, not minutes."""
    config = get_config()
    config.update(num_examples=600, hidden_dim=16, num_hops=2, epochs=2, vocabulary_size=80)
    return config


def get_babi_config():
    """bAbI 1k, 20 tasks trained jointly, as the paper's joint models."""
    config = get_config()
    config.update(data="../shared/data/qa/babi/en", epochs=60, linear_start=True)
    return config


def get_transformer_config():
    """The seq2seq alternative on the built-in stories (see examples/RESULTS.md)."""
    config = get_config()
    config.update(architecture="transformer", hidden_dim=128, epochs=8, batch_size=64,
                  learning_rate=2e-3, validation_fraction=0.0)
    return config


def get_babi_transformer_config():
    """The seq2seq alternative on bAbI 1k, 20 tasks."""
    config = get_transformer_config()
    config.update(data="../shared/data/qa/babi/en", vocabulary_size=300)
    return config


def get_ut_config():
    """The Universal Transformer on built-in bAbI-like stories."""
    config = get_config()
    config.update(architecture="universal_transformer", hidden_dim=64, num_heads=4,
                  intermediate_dim=128, batch_size=64, learning_rate=1e-3, epochs=20)
    return config


def get_quick_ut_config():
    """The Universal Transformer, tiny, for tests."""
    config = get_ut_config()
    config.update(num_examples=400, hidden_dim=16, num_heads=2, intermediate_dim=32,
                  max_steps=3, epochs=2, warmup_epochs=1, vocabulary_size=80,
                  # no compile time in tests (XLA on JAX: runtime.quick_jit_compile)
                  precision="float32", jit_compile=runtime.quick_jit_compile())
    return config


def get_babi_ut_config():
    """The Universal Transformer (with ACT) on bAbI 1k, 20 tasks trained jointly:
    about 20 minutes on a quiet 2-core CPU (85.6%, examples/RESULTS.md; the
    dropout was chosen on the validation split among 0.1 and 0.2)."""
    config = get_ut_config()
    config.update(data="../shared/data/qa/babi/en", epochs=128, max_steps=4, dropout=0.2)
    return config


PRESETS = {
    "default": get_config,
    "quick": get_quick_config,
    "babi": get_babi_config,
    "transformer": get_transformer_config,
    "babi_transformer": get_babi_transformer_config,
    "ut": get_ut_config,
    "quick_ut": get_quick_ut_config,
    "babi_ut": get_babi_ut_config,
}

# What each setting accepts beyond its type (keras_attention.settings); the
# `tasks` list is checked by the recipe (`train.parse_tasks`).
RULES = {
    "num_examples": at_least(1),
    "architecture": one_of("memory_network", "transformer", "universal_transformer"),
    "vocabulary_size": at_least(5),  # the 4 special tokens and one more
    "hidden_dim": at_least(1),
    "epochs": at_least(1),
    "batch_size": at_least(1),
    "learning_rate": greater_than(0),
    "validation_fraction": fraction(),
    "test_fraction": fraction(),
    "distribution": one_of(*distribute.DISTRIBUTION_STRATEGIES),
    "precision": one_of(*runtime.PRECISIONS),
    "jit_compile": one_of(*runtime.JIT_CHOICES),
    "seed": at_least(0),
    "num_hops": at_least(1),
    "max_memories": at_least(1),
    "temporal_noise": fraction(),
    "linear_start_patience": at_least(1),
    "decay_epochs": at_least(1),
    "restarts": at_least(1),
    "max_sentences": at_least(1),
    "max_length": at_least(1),
    "max_answer_length": at_least(1),
    "num_layers": at_least(1),
    "num_heads": at_least(1),
    "intermediate_dim": at_least(1),
    "dropout": fraction(),
    "max_steps": at_least(1),
    "ponder_cost": at_least(0),
    "warmup_epochs": at_least(0),
}

# Settings a run resuming from a `--backup_dir` may change; the others must
# be those the backup was made with (keras_attention.recipes.backup).
BACKUP_MAY_DIFFER = (
    "epochs", "output_dir", "overwrite", "backup_dir", "distribution", "jit_compile",
)

# Settings that only some architectures read.
ONLY_READ_BY = {
    "memory_network": ("num_hops", "temporal_noise", "linear_start", "linear_start_patience",
                       "decay_epochs"),
    "transformer": ("max_sentences", "question_first", "max_length", "max_answer_length",
                    "num_layers"),
    "universal_transformer": ("max_steps", "act", "ponder_cost", "warmup_epochs"),
}
CLASSIFIERS_ONLY = ("max_memories", "restarts")  # memory network and Universal Transformer
ATTENTION_ONLY = ("num_heads", "intermediate_dim", "dropout")  # Transformer and UT
BUILT_IN_DATA_ONLY = ("num_examples", "test_fraction")


def unused_settings(config):
    """`{setting: when}` of the settings `config` does not read (the command
    line refuses a change to one: keras_attention.settings.parse)."""
    architecture = config["architecture"]
    keys = [key for other, keys in ONLY_READ_BY.items() if other != architecture
            for key in keys]
    keys += CLASSIFIERS_ONLY if architecture == "transformer" else ()
    keys += ATTENTION_ONLY if architecture == "memory_network" else ()
    unused = {key: f"with architecture={architecture!r}" for key in keys}
    if config["data"]:
        unused.update({key: "with a `data` folder (bAbI has its own test files)"
                       for key in BUILT_IN_DATA_ONLY})
    return unused
