"""Writing files so that a failure never leaves a half-written one behind."""

import os
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
