"""A Secret volume as kubelet writes it (AtomicWriter): files behind a `..data` symlink.

Used by the certificate reload tests to rotate files the way a mounted Secret rotates.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

FILES = ("tls.crt", "tls.key", "ca.crt")


def _write_timestamped(cert_dir: Path, source: Path, stamp: str) -> Path:
    ts = cert_dir / f"..{stamp}"
    ts.mkdir(parents=True)
    for n in FILES:
        shutil.copy(source / n, ts / n)
    return ts


def kubelet_layout(cert_dir: Path, source: Path, stamp: str) -> None:
    """Lay `source`'s files out as kubelet's AtomicWriter does for a Secret volume."""
    ts = _write_timestamped(cert_dir, source, stamp)
    os.symlink(ts.name, cert_dir / "..data")
    for n in FILES:
        os.symlink(f"..data/{n}", cert_dir / n)


def kubelet_swap(cert_dir: Path, source: Path, stamp: str) -> None:
    """Write a new timestamped dir, swap ..data to it atomically, drop the old dir."""
    old = os.readlink(cert_dir / "..data")
    ts = _write_timestamped(cert_dir, source, stamp)
    os.symlink(ts.name, cert_dir / "..data_tmp")
    os.rename(cert_dir / "..data_tmp", cert_dir / "..data")
    shutil.rmtree(cert_dir / old)
