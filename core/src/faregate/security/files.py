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
    operator made it, with a warning when others can read it."""
    try:
        os.makedirs(path, mode=DIR_MODE)
        os.chmod(path, DIR_MODE)  # makedirs' mode is filtered by the umask
    except FileExistsError:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077:
            log.warning("data directory %s is readable by others (mode %o); 0700 is recommended", path, mode)
    return path


def private_file(path: str) -> str:
    """Make sure ``path`` exists with mode 0600 (an existing file is tightened)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path
