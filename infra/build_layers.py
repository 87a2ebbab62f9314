"""Build the third-party layers without Docker.

``python -m infra.build_layers --arch x86_64|arm64 [--layer deps|payments]`` installs a locked requirements file
as binary manylinux wheels into ``build/layers/<layer>-<arch>/python`` (docs/infrastructure.md, "Layers"): the
dependencies layer (``requirements/runtime.txt``, every function) and the payments layer
(``requirements/payments.txt``: Stripe's library, only the functions that call Stripe; docs/payments.md).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from infra.settings import LAYER_PYTHON_VERSION, ROOT

REQUIREMENTS = ROOT / "requirements" / "runtime.txt"
LAYERS = {"deps": REQUIREMENTS, "payments": ROOT / "requirements" / "payments.txt"}
BUILD_ROOT = ROOT / "build" / "layers"
PLATFORMS = {"x86_64": "manylinux2014_x86_64", "arm64": "manylinux2014_aarch64"}
# pip's tag for the machine in the compiled module's file name
SO_MACHINE = {"x86_64": "x86_64", "arm64": "aarch64"}


def layer_dir(arch: str, layer: str = "deps") -> Path:
    """The asset directory of a layer (contains ``python/``)."""
    return BUILD_ROOT / f"{layer}-{arch}"


def _stamp_path(arch: str, layer: str = "deps") -> Path:
    # kept outside the asset directory so it never changes the layer's hash
    return BUILD_ROOT / f"{layer}-{arch}.stamp"


def _fingerprint(arch: str, layer: str = "deps") -> str:
    digest = hashlib.sha256()
    digest.update(LAYERS[layer].read_bytes())
    digest.update(f"\0{arch}\0{LAYER_PYTHON_VERSION}\0{PLATFORMS[arch]}".encode())
    if layer in UNUSED_AT_RUN_TIME:  # what the layer drops is part of what it holds (a change rebuilds it)
        digest.update(f"\0{UNUSED_AT_RUN_TIME[layer]}".encode())
    return digest.hexdigest()


# Folders no module of the layer imports at run time, dropped from it. stripe/params (5.8 MB of Stripe's 13 MB)
# holds the TypedDicts of every API's parameters; every import of it in stripe sits under `if TYPE_CHECKING:`
# (tests/payments/test_trimmed_payments_layer.py proves it for the pinned stripe and drives the trimmed
# library against localstripe). `stripe.params` as an attribute would fail; only type checkers use it.
UNUSED_AT_RUN_TIME = {"payments": ("stripe/params",)}


def trim(site: Path, layer: str = "deps") -> None:
    """What a layer's site folder keeps: everything but what is never needed at run time (`_strip`, and the
    layer's UNUSED_AT_RUN_TIME folders)."""
    _strip(site)
    for folder in UNUSED_AT_RUN_TIME.get(layer, ()):
        shutil.rmtree(site / folder, ignore_errors=True)


def _strip(site: Path) -> None:
    """Drop what Lambda never needs: bytecode caches and bundled test suites."""
    for pattern in ("__pycache__", "tests"):
        for path in sorted(site.rglob(pattern), reverse=True):
            # only package test folders, never a module that happens to be called tests
            if path.is_dir() and (pattern == "__pycache__" or (path / "__init__.py").exists()):
                shutil.rmtree(path, ignore_errors=True)
    for path in site.rglob("*.pyc"):
        path.unlink(missing_ok=True)


def build(arch: str, *, force: bool = False, quiet: bool = True, layer: str = "deps") -> Path:
    """Build (or reuse) a layer for ``arch``; return its asset directory."""
    if arch not in PLATFORMS:
        raise ValueError(f"arch must be one of {sorted(PLATFORMS)}, got {arch!r}")
    if layer not in LAYERS:
        raise ValueError(f"layer must be one of {sorted(LAYERS)}, got {layer!r}")
    target = layer_dir(arch, layer)
    target.parent.mkdir(parents=True, exist_ok=True)
    # One builder at a time per layer (two test workers may both find it stale): the second waits, then reuses.
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_locked(arch, layer, target, force=force, quiet=quiet)


def _build_locked(arch: str, layer: str, target: Path, *, force: bool, quiet: bool) -> Path:
    stamp = _stamp_path(arch, layer)
    fingerprint = _fingerprint(arch, layer)
    if not force and stamp.exists() and stamp.read_text().strip() == fingerprint and (target / "python").is_dir():
        return target
    shutil.rmtree(target, ignore_errors=True)
    stamp.unlink(missing_ok=True)
    site = target / "python"
    site.mkdir(parents=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-compile",
        "--platform",
        PLATFORMS[arch],
        "--implementation",
        "cp",
        "--python-version",
        LAYER_PYTHON_VERSION,
        "--only-binary=:all:",
        "--no-deps",
        "-r",
        str(LAYERS[layer]),
        "-t",
        str(site),
    ]
    if quiet:
        command.append("-q")
    subprocess.run(command, check=True)
    trim(site, layer)
    stamp.write_text(fingerprint + "\n")
    return target


def compiled_module_name(arch: str) -> str:
    """File name of pydantic_core's extension module for ``arch`` (what the layer must hold)."""
    version = LAYER_PYTHON_VERSION.replace(".", "")
    return f"_pydantic_core.cpython-{version}-{SO_MACHINE[arch]}-linux-gnu.so"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=sorted(PLATFORMS), default="arm64")
    parser.add_argument("--layer", choices=sorted(LAYERS), default="deps")
    parser.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    args = parser.parse_args(argv)
    target = build(args.arch, force=args.force, layer=args.layer)
    print(target.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
