"""Install the peers from PyPI, each into a virtualenv of its own under PEERS_DIR.

    .venv/bin/python bench/peers/install.py [--dir .peers] [label-studio] [doccano]

- Label Studio 1.23.x (`label-studio>=1.23,<1.24`), on the interpreter running this script (3.12+):
  about 1.5 GB installed.
- Potato 2.12 (`potato-annotation==2.12.*`), on Python 3.10-3.13 (3.11 first).
- doccano 1.8.4 with `marshmallow<4` and `numpy<2` (it does not start without them). It pins
  `pandas<2`, which has no wheels for Python 3.12, so it needs a Python 3.8-3.11: the first of
  python3.11, pyenv's 3.11, python3.10, pyenv's 3.10 that runs.

A finished install leaves `.installed` holding its package list; the next run with the same list does
nothing. The pip log goes to `<peer>-install.log` beside the virtualenv. `ensure(peer, folder)` returns
the virtualenv's `bin/` folder or raises PeerError saying why not.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from common import PeerError


@dataclass(frozen=True)
class Peer:
    name: str
    packages: tuple[str, ...]
    pythons: tuple[str, ...]  # candidates, first that runs and fits `versions`
    versions: tuple[tuple[int, int], tuple[int, int]]  # oldest and newest minor version allowed


HOME = os.path.expanduser("~")
PEERS = {
    "label-studio": Peer(
        "label-studio",
        ("label-studio>=1.23,<1.24",),
        (sys.executable, "python3.12", "python3.13"),
        ((3, 10), (3, 13)),
    ),
    "potato": Peer(
        "potato",
        ("potato-annotation==2.12.*",),
        (
            "python3.11",
            *sorted(glob.glob(f"{HOME}/.pyenv/versions/3.11*/bin/python"), reverse=True),
            sys.executable,
        ),
        ((3, 10), (3, 13)),
    ),
    "doccano": Peer(
        "doccano",
        ("doccano==1.8.4", "marshmallow<4", "numpy<2"),
        (
            "python3.11",
            *sorted(glob.glob(f"{HOME}/.pyenv/versions/3.11*/bin/python"), reverse=True),
            "python3.10",
            *sorted(glob.glob(f"{HOME}/.pyenv/versions/3.10*/bin/python"), reverse=True),
        ),
        ((3, 8), (3, 11)),
    ),
}


def find_python(peer: Peer) -> str:
    low, high = peer.versions
    probe = "import sys; print('%d %d' % sys.version_info[:2])"
    for candidate in peer.pythons:
        try:
            out = subprocess.run([candidate, "-c", probe], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0:
            major, minor = map(int, out.stdout.split())
            if low <= (major, minor) <= high:
                return candidate
    wanted = f"{low[0]}.{low[1]}-{high[0]}.{high[1]}"
    raise PeerError(f"{peer.name} needs Python {wanted}; none found among {', '.join(peer.pythons)}")


def installed(name: str, folder: Path) -> bool:
    """Whether the peer's virtualenv under `folder` is complete (its `.installed` stamp is current)."""
    stamp = folder / name / ".installed"
    return stamp.exists() and stamp.read_text() == "\n".join(PEERS[name].packages)


def ensure(name: str, folder: Path) -> Path:
    """The `bin/` folder of the peer's virtualenv under `folder`, installing it first if needed."""
    peer = PEERS[name]
    venv = folder / name
    stamp = venv / ".installed"
    wanted = "\n".join(peer.packages)
    if stamp.exists() and stamp.read_text() == wanted:
        return venv / "bin"
    python = find_python(peer)
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"{name}-install.log"
    print(
        f"installing {name} ({' '.join(peer.packages)}) with {python} into {venv}; log: {log}",
        file=sys.stderr,
    )
    with log.open("w") as handle:
        steps = [
            [python, "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--upgrade", "pip"],
            [str(venv / "bin" / "python"), "-m", "pip", "install", *peer.packages],
        ]
        for step in steps:
            handle.write(f"$ {' '.join(step)}\n")
            handle.flush()
            done = subprocess.run(step, stdout=handle, stderr=subprocess.STDOUT)
            if done.returncode != 0:
                # without the warnings a pip configuration naming absent local indexes repeats per package
                lines = [
                    line
                    for line in log.read_text(errors="replace").splitlines()
                    if "is ignored: it is neither a file nor a directory" not in line
                ]
                raise PeerError(
                    f"installing {name} failed ({' '.join(step[:4])}...):\n" + "\n".join(lines[-12:])
                )
    stamp.write_text(wanted)
    return venv / "bin"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=str(Path(__file__).resolve().parents[2] / ".peers"))
    parser.add_argument("peers", nargs="*", help=f"some of: {', '.join(PEERS)} (default: all)")
    args = parser.parse_args()
    unknown = set(args.peers) - set(PEERS)
    if unknown:
        parser.error(f"unknown peer(s) {', '.join(sorted(unknown))}; choose from {', '.join(PEERS)}")
    failed = False
    for name in args.peers or PEERS:
        try:
            print(f"{name}: {ensure(name, Path(args.dir).resolve())}")
        except PeerError as exc:
            print(f"{name}: not installed: {exc}", file=sys.stderr)
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
