"""Run folders saved before format 1: `config.json` held only `recipe`, `config`
and `scores`. Their decoding settings and source format are read from the
recipe's `config`, as the recipes of the time named them."""

from keras_attention.runs.layout import TOKENIZER_FILES, RunFolderError

# How each recipe's config named its decoding settings.
LEGACY_DECODING = {
    "translation": lambda c: dict(
        source_length=c["max_length"], target_length=c["max_length"],
        strategy=c["strategy"], num_beams=c["num_beams"],
        length_penalty=c["length_penalty"],
    ),
    "summarization": lambda c: dict(
        source_length=c["max_source_length"], target_length=c["max_target_length"],
        strategy="beam", num_beams=c["num_beams"], length_penalty=c["length_penalty"],
        coverage_penalty=c["coverage_penalty"],
    ),
    "question_answering": lambda c: dict(
        source_length=c["max_length"], target_length=c["max_answer_length"],
        strategy="greedy", num_beams=1,
    ),
}


def legacy_source_format(recipe, config, memory):
    """The source format a recipe used before runs recorded theirs."""
    if recipe != "question_answering":
        return "text"
    if memory:
        return "{story} | {question}"
    return "{question} | {context}" if config.get("question_first") else "{context} | {question}"


def from_legacy(metadata, run_dir, path):
    """A folder saved before format 1, in today's layout (`format_version` 0)."""
    recipe = metadata.get("recipe", "translation")
    config = metadata.get("config", {})
    if recipe not in LEGACY_DECODING or not isinstance(config, dict):
        return dict(metadata, format_version=0, recipe=recipe)  # refused by check_metadata
    memory = metadata.get("answer_classes") is not None
    decoding = None
    if not memory:
        try:
            decoding = LEGACY_DECODING[recipe](config)
        except KeyError as error:
            raise RunFolderError(
                f"Argument `run_dir` must hold the {recipe} recipe's decoding settings: {path} "
                f"has no {error} in its `config`. Received: run_dir={run_dir!r}"
            ) from None
    return {
        "scores": {}, **metadata, "format_version": 0, "recipe": recipe, "config": config,
        "tokenizers": dict(TOKENIZER_FILES), "decoding": decoding,
        "source_format": legacy_source_format(recipe, config, memory),
    }


__all__ = ["LEGACY_DECODING", "from_legacy", "legacy_source_format"]
