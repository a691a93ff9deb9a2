"""Private files: the data directory holds the SQLite database and the secrets, so it is
created for the service's user alone (0700) and its files 0600, whatever the umask."""

from __future__ import annotations

import logging
import os
import stat

log = logging.getLogger("faregate")

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: str) -> str:
    """Create ``path`` (and missing parents) as 0700. An existing directory is left as the
    operator made it (:func:`open_to_others` tells whether others can read it)."""
    try:
        os.makedirs(path, mode=DIR_MODE)
        os.chmod(path, DIR_MODE)  # makedirs' mode is filtered by the umask
    except FileExistsError:
        pass
    return path


def open_to_others(path: str) -> str | None:
    """Why the existing directory ``path`` is not private, or None when it is (or is absent)."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None
    if mode & 0o077:
        return f"data directory {path} is readable by others (mode {mode:o}); 0700 is recommended"
    return None


def warn_if_open(path: str) -> None:
    """Log :func:`open_to_others`' finding: once per start, by ``faregate serve``'s process
    (its workers, and the several places that make sure the directory exists, stay quiet)."""
    found = open_to_others(path)
    if found:
        log.warning("%s", found)


def private_file(path: str) -> str:
    """Make sure ``path`` exists with mode 0600 (an existing file is tightened)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path
