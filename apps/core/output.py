"""Writing a file a person named on the command line (``--output PATH``) without harming what is there.

Pure: the standard library only, no Django. The contract (docs/design.md §8, "an output path that is not a
regular file is never replaced"):

- the target may be missing or a regular file; anything else (a directory, a symbolic link, a FIFO, a
  device such as ``/dev/full``, a socket) is refused by :func:`check_output_path` before any work, and
  again just before the rename, because ``os.replace`` swaps a directory entry whatever it names (run as
  root it replaced ``/dev/full`` itself);
- :func:`copy_to_output` (a finished file) and :func:`write_output` (bytes in memory) write a
  temporary file next to the target and rename it into place only once it is complete and flushed, so a
  reader never sees half a file and a failed write leaves the old file as it was; the temporary file is
  removed on every failure;
- every ``OSError`` (permission, full disk, read-only file system) becomes one :class:`OutputError`
  line: ``--output PATH: cannot write: <reason>``.

A symbolic link is refused rather than followed: writing through it would put the data wherever the
link points, which the person who typed the path may not know.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["OutputError", "check_output_path", "copy_to_output", "write_output"]

_KINDS = (
    (stat.S_ISLNK, "is a symbolic link"),
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a FIFO"),
    (stat.S_ISCHR, "is a character device"),
    (stat.S_ISBLK, "is a block device"),
    (stat.S_ISSOCK, "is a socket"),
)


class OutputError(ValueError):
    """The output path cannot be written; the message is one line naming the flag, path and reason."""


def check_output_path(path: Path, *, flag: str = "--output") -> None:
    """Refuse `path` unless it is a regular file or does not exist in an existing directory."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"{flag} {path}: cannot write: {exc.strerror}") from None
    if mode is not None and not stat.S_ISREG(mode):
        what = next((text for test, text in _KINDS if test(mode)), "is not a regular file")
        raise OutputError(f"{flag} {path} {what}; give the path of a regular file or a new one")
    if not path.parent.is_dir():
        raise OutputError(f"{flag}: the directory {path.parent} does not exist")


def copy_to_output(source: Path, target: Path, *, flag: str = "--output") -> None:
    """Copy `source` to `target` under the contract of the module docstring; raises OutputError."""

    def fill(writing: BinaryIO) -> None:
        with source.open("rb") as reading:
            shutil.copyfileobj(reading, writing)

    _write_in_place(target, flag, fill)


def write_output(data: bytes, target: Path, *, flag: str = "--output") -> None:
    """Write `data` to `target` under the contract of the module docstring; raises OutputError."""
    _write_in_place(target, flag, lambda writing: writing.write(data))


def _write_in_place(target: Path, flag: str, fill: Callable[[BinaryIO], object]) -> None:
    check_output_path(target, flag=flag)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
    try:
        with partial.open("xb") as writing:
            fill(writing)
            writing.flush()
            os.fsync(writing.fileno())
        check_output_path(target, flag=flag)  # it may have become a link or a device meanwhile
        os.replace(partial, target)
    except OSError as exc:
        raise OutputError(f"{flag} {target}: cannot write: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):  # never created (unwritable directory): nothing to remove
            partial.unlink(missing_ok=True)
