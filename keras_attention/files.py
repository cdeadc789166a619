"""Writing files and folders so that a failure never leaves a half-written one behind,
and the check that a name read from a folder's files stays inside it.

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


def write_folder_atomically(path, write, replace=False):
    """Calls `write(folder)` on a new temporary sibling folder of `path`, then
    moves it to `path`.

    Whatever `path` holds stays untouched until `write` has returned. A new
    or empty `path` is then taken in one rename, which fails when another
    process has put a folder there meanwhile (a `FileExistsError`: the check
    that `path` is free and the move are one step). With `replace=True`, a
    `path` that is a folder that is not empty is renamed aside, the new
    folder is renamed to `path` and only then is the old one removed; a
    process stopped between the two renames leaves the old folder aside, and
    `restore_set_aside(path)` (which the run-folder readers and writers call)
    puts it back. On any failure before the new folder is in place, the
    temporary folder is removed and `path` is left byte for byte as it was.
    Deciding whether `path` may be replaced is the caller's job (see
    `keras_attention.runs.check_output_dir`).

    The new folder gets the permissions of a folder made by `os.makedirs`
    (`0o777` less the umask), not the private `0o700` of `tempfile.mkdtemp`.

    Args:
        path: the destination folder; its parent folders are created.
        write: a function taking the temporary folder's path (a `str`, an
            existing empty folder) and writing the folder's contents into it.
        replace: bool, whether a folder that is not empty at `path` is
            replaced.

    Returns:
        `path`, as an absolute `str`.

    Raises:
        FileExistsError: naming `path`, when `replace` is False and `path`
            holds a file or a folder that is not empty when the new folder is
            moved there.
    """
    path = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(dir=parent, prefix=f".{name}.partial-")
    try:
        os.chmod(staging, 0o777 & ~_umask())
        write(staging)
        if replace or os.path.islink(path):  # a link is replaced, its target kept
            _move_into_place(staging, path)
        else:
            _move_into_free_place(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return path


def is_working_directory_or_parent(path):
    """Whether `path` is the working directory or one of its parents (after
    resolving `.`, `..` and symbolic links): a folder never to replace."""
    real = os.path.realpath(os.fspath(path))
    return os.path.commonpath([real, os.path.realpath(os.getcwd())]) == real


def outside_folder(folder, name):
    """Why the file or folder `name` is not inside `folder`, or None when it
    is: a name that is empty, absolute or holds `..`, or one that resolves
    (through symbolic links) to a place outside `folder` or to `folder`
    itself. The one check of names read from a folder's own files (a run's
    `config.json`, a checkpoint's shard index)."""
    if not isinstance(name, str) or not name:
        return "not a file name"
    parts = name.replace("\\", "/").split("/")
    if os.path.isabs(name) or ".." in parts:
        return "a name outside the folder (absolute or with '..')"
    root = os.path.realpath(os.fspath(folder))
    real = os.path.realpath(os.path.join(os.fspath(folder), name))
    if real == root:
        return "the folder itself, not a file in it"
    if os.path.commonpath([root, real]) != root:
        return "a link to a place outside the folder"
    return None


def restore_set_aside(path):
    """Puts back the folder that an interrupted replacement of `path` set
    aside (`.NAME.previous-*` beside it), when `path` itself is missing:
    the newest one is renamed to `path`. Returns `path` when a folder was
    restored, None otherwise."""
    path = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(path)
    if os.path.lexists(path) or not os.path.isdir(parent):
        return None
    prefix = f".{name}.previous-"
    aside = [os.path.join(parent, entry) for entry in os.listdir(parent)
             if entry.startswith(prefix)]
    aside = [folder for folder in aside if os.path.isdir(folder) and not os.path.islink(folder)]
    if not aside:
        return None
    try:
        os.rename(max(aside, key=os.path.getmtime), path)
    except OSError:  # another process restored it, or wrote `path`, meanwhile
        return None
    return path


def _move_into_free_place(staging, path):
    """Renames `staging` to `path` in one step: a missing or empty folder is
    taken, anything else refused (a rename fails on a folder that is not
    empty, so a folder another process put there meanwhile is never replaced)."""
    try:
        if os.path.lexists(path) and not os.path.isdir(path):
            raise FileExistsError(path)
        os.rename(staging, path)
    except OSError:
        if not os.path.lexists(path):
            raise
        raise FileExistsError(f"{path} was written by another process meanwhile: it is not "
                              f"replaced, and the new folder is not kept") from None


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
