"""A file written whole or not at all: the writer fills a temporary file in the target's
directory, which is renamed over the target when complete (an interrupt or an error leaves
neither a partial file nor a half-overwritten one). The file gets the permissions of a file
the user creates (0666 less the umask), not the owner-only mode of a temporary file."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_path"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(target: str | Path, suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary path next to ``target`` (ending in ``suffix``: a writer may pick the format
    from it) that becomes ``target`` when the block ends without an exception."""
    target = Path(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix,
                               dir=target.parent or ".")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
