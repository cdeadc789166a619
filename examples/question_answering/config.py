"""Configurations of the question-answering recipe; override with `--key=value`."""


def get_config():
    """Default: built-in bAbI-like stories, no file needed."""
    return {
        "data": "",  # a bAbI folder (e.g. ../shared/data/qa/babi/en); "" = built-in stories
        "tasks": "1-20",  # bAbI tasks to train and test on, e.g. "1,2,3" or "1-20"
        "num_examples": 6000,  # built-in data: number of questions
        "max_sentences": 20,  # keep the last sentences of long stories
        "question_first": False,  # encoder text: "question | story" (True) or "story | question"
        "vocabulary_size": 400,
        "max_length": 160,  # source tokens
        "max_answer_length": 12,  # answer tokens (with the end token)
        "num_layers": 2,
        "hidden_dim": 128,
        "num_heads": 4,
        "intermediate_dim": 256,
        "dropout": 0.1,
        "epochs": 8,
        "batch_size": 64,
        "learning_rate": 2e-3,
        "test_fraction": 0.1,  # built-in data only (bAbI has its own test files)
        "output_dir": "runs/question_answering",
        "seed": 0,
    }


def get_quick_config():
    config = get_config()
    config.update(num_examples=600, num_layers=1, hidden_dim=32, num_heads=2,
                  intermediate_dim=64, epochs=2, vocabulary_size=80)
    return config


def get_babi_config():
    config = get_config()
    config.update(data="../shared/data/qa/babi/en", vocabulary_size=300, epochs=8)
    return config
