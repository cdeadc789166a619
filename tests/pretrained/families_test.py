"""The one table of checkpoint families: each row is complete, the code that
depends on a family reads the row, and a family's knowledge lives in its
module and its row only."""

import pathlib
import re

import pytest

from keras_attention.pretrained import families
from keras_attention.pretrained.families import FAMILIES

PACKAGE = pathlib.Path(families.__file__).resolve().parents[1]
# A branch on a family's name (`== "marian"`, `in ("bart", ...)`) or a
# table keyed by one (`"t5": ...`).
NAMES = "|".join(FAMILIES)
FAMILY_BRANCH = re.compile(rf"""(==|!=|\bin)\s*\(?["']({NAMES})["']"""
                           rf"""|["']({NAMES})["']\s*:""")
# The modules that hold a family's mapping, and the table.
FAMILY_MODULES = {f"pretrained/{name}.py" for name in FAMILIES} | {"pretrained/families.py"}


@pytest.mark.backend_independent
def test_every_row_is_a_family_with_its_module_builder_and_tokenizer():
    assert list(FAMILIES) == ["marian", "bart", "mbart", "t5", "mt5", "pegasus", "m2m_100"]
    for name, family in FAMILIES.items():
        assert family.model_type == name
        assert family.architecture.endswith(("MTModel", "ForConditionalGeneration"))
        assert family.build_model.__module__ == f"keras_attention.pretrained.{name}"
        if family.tokenizer is None:
            assert family.recipe is None and family.tokenizer_layouts == ()
        else:
            assert family.recipe in ("translation", "summarization")
            assert family.tokenizer_layouts and all(
                names and all(isinstance(f, str) for f in names)
                for names in family.tokenizer_layouts)
            assert callable(family.tokenizer.from_folder)


@pytest.mark.backend_independent
def test_family_of_refuses_other_model_types_and_architectures():
    assert families.family_of({"model_type": "t5"}) is FAMILIES["t5"]
    assert families.family_of({"model_type": "bart",
                               "architectures": ["BartForConditionalGeneration"]}).recipe \
        == "summarization"
    with pytest.raises(ValueError, match=r"Received: model_type='gpt2'"):
        families.family_of({"model_type": "gpt2"})
    with pytest.raises(ValueError, match=r"Received: model_type=None"):
        families.family_of({})
    with pytest.raises(ValueError, match=r"'MarianMTModel'.*Received: architectures="):
        families.family_of({"model_type": "marian", "architectures": ["BartModel"]})


@pytest.mark.backend_independent
def test_tokenizer_files_are_the_rows_and_missing_ones_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"one of 'marian', 'bart', 'mbart', 't5', 'mt5', "
                                         r"'pegasus', 'm2m_100' .*Received: family='gpt2'"):
        families.tokenizer_files(tmp_path, "gpt2")
    with pytest.raises(FileNotFoundError, match=r"no tokenizer.json.*Received: folder="):
        families.tokenizer_files(tmp_path, "m2m_100")  # M2M100's own files are not read
    with pytest.raises(FileNotFoundError, match=r"no spiece.model.*Received: folder="):
        families.load_checkpoint_tokenizer(tmp_path, "t5")
    (tmp_path / "vocab.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"no merges.txt"):
        families.tokenizer_files(tmp_path, "bart")
    (tmp_path / "merges.txt").write_text("")
    assert families.tokenizer_files(tmp_path, "bart") == [
        str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt")]


@pytest.mark.backend_independent
def test_no_module_outside_the_family_modules_names_a_family():
    """Adding a family touches its module, its row and its tests: no other
    module of the package branches on a family's name."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in FAMILY_MODULES:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FAMILY_BRANCH.search(line) and ">>>" not in line:
                found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


@pytest.mark.backend_independent
def test_the_check_sees_a_family_branch():
    assert FAMILY_BRANCH.search('if family == "marian":')
    assert FAMILY_BRANCH.search("if family in ('bart', 'mbart'):")
    assert FAMILY_BRANCH.search('TOKENIZERS = {"t5": T5Tokenizer}')
    assert not FAMILY_BRANCH.search('{"recipe": "translation"}')


@pytest.mark.backend_independent
def test_a_tokenizer_file_linked_from_outside_is_refused_unread(tmp_path):
    """A `merges.txt` that links to a private file elsewhere is refused
    before it is read: the error names the file, never its content."""
    secret = tmp_path / "secret.txt"
    secret.write_text("private line\n")
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    (folder / "vocab.json").write_text("{}")
    (folder / "merges.txt").symlink_to(secret)
    with pytest.raises(ValueError, match=r"'merges\.txt', a link to a place outside the "
                                         r"folder") as error:
        families.load_checkpoint_tokenizer(folder, "bart")
    assert "private line" not in str(error.value) and "\n" not in str(error.value)
