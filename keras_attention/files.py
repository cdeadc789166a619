"""Writing files and folders so that a failure never leaves a half-written one behind.

The package's one atomic writer: `write_atomically` for a file (tokenizers,
plots, `generate --output`), `write_folder_atomically` for a folder (run
folders, exported SavedModels). Both write next to the destination, under a
hidden temporary name, and rename at the end; on any failure the temporary
file or folder is removed and the destination is left as it was.
"""

import os
import shutil
import tempfile
import uuid


def write_atomically(path, write):
    """Calls `write(file)` on a temporary file next to `path`, then renames it
    to `path`; on any failure the temporary file is removed.

    Args:
        path: the destination; its parent folders are created.
        write: a function taking a binary file object.
    """
    path = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    try:
        # Mode 0o666 less the umask, as `open(path, "wb")` would give.
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(handle, "wb") as file:
            write(file)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def write_folder_atomically(path, write):
    """Calls `write(folder)` on a new temporary sibling folder of `path`, then
    moves it to `path`.

    Whatever `path` holds stays untouched until `write` has returned. Then, if
    `path` is a folder that is not empty, it is renamed aside, the new folder
    is renamed to `path` and only then is the old one removed; an empty folder
    is simply replaced. On any failure before the new folder is in place, the
    temporary folder is removed and `path` is left byte for byte as it was.
    Deciding whether `path` may be replaced is the caller's job (see
    `keras_attention.runs.check_output_dir`).

    The new folder gets the permissions of a folder made by `os.makedirs`
    (`0o777` less the umask), not the private `0o700` of `tempfile.mkdtemp`.

    Args:
        path: the destination folder; its parent folders are created.
        write: a function taking the temporary folder's path (a `str`, an
            existing empty folder) and writing the folder's contents into it.

    Returns:
        `path`, as an absolute `str`.
    """
    path = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(dir=parent, prefix=f".{name}.partial-")
    try:
        os.chmod(staging, 0o777 & ~_umask())
        write(staging)
        _move_into_place(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return path


def is_working_directory_or_parent(path):
    """Whether `path` is the working directory or one of its parents (after
    resolving `.`, `..` and symbolic links): a folder never to replace."""
    real = os.path.realpath(os.fspath(path))
    return os.path.commonpath([real, os.path.realpath(os.getcwd())]) == real


def _move_into_place(staging, path):
    """Renames `staging` to `path`, first moving a non-empty `path` aside; the
    folder set aside is removed once `staging` is in place, or renamed back if
    the second rename fails."""
    if os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path):
        os.rmdir(path)
    if not os.path.lexists(path):
        os.rename(staging, path)
        return
    aside = f"{os.path.join(os.path.dirname(path), '.' + os.path.basename(path))}" \
            f".previous-{uuid.uuid4().hex}"
    try:
        os.rename(path, aside)
        os.rename(staging, path)
    except BaseException:  # also an interrupt between the two renames
        if os.path.lexists(aside) and not os.path.lexists(path):
            os.rename(aside, path)
        raise
    if os.path.isdir(aside) and not os.path.islink(aside):
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.remove(aside)


def _umask():
    """The process' umask (reading it means setting it; it is set back at once)."""
    umask = os.umask(0)
    os.umask(umask)
    return umask
