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
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
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
    # what the layer drops is part of what it holds (a change rebuilds it)
    digest.update(f"\0{UNUSED_AT_RUN_TIME.get(layer, ())}\0{NEVER_LOADED}\0{SWAGGER_ASSETS}".encode())
    digest.update(f"\0{LEFT_OUT.get(layer, {})}\0{SCRIPTS}\0{DIST_INFO_UNREAD}\0METADATA headers only".encode())
    digest.update(f"\0strip-debug={STRIP_DEBUG is not None}".encode())
    return digest.hexdigest()


# What no run-time path of the shop can import, dropped from the layers (docs/infrastructure.md, "Layers"):
# `infra/layer_trims.json`, written by `python -m infra.build_layers --plan` from `infra.import_closure` (every module
# reachable from the shop's code and the handlers, lazy imports included), checked against the current code by
# tests/functions/test_trimmed_layers.py. Its digest is here so that a new plan changes this file (bench/coldstart.py
# keys its layer stand-ins by this file's bytes) and a hand edit of the plan is caught.
TRIMS_FILE = ROOT / "infra" / "layer_trims.json"
TRIMS_DIGEST = "3bd2d51b704728d667aecdc25859a5130e413cc71a6196a2867f306e2df55e01"
# Files no interpreter loads, dropped wherever they are: type stubs, C sources of compiled extensions.
NEVER_LOADED = ("*.pyi", "py.typed", "*.c")
# Swagger UI's bundled assets (1.7 MB), read only by the `/swagger` route `enable_swagger()` adds; the shop never
# calls it (tests/functions/test_trimmed_layers.py), and its API document is served from openapi.json.
SWAGGER_ASSETS = (
    "aws_lambda_powertools/event_handler/openapi/swagger_ui/swagger-ui-bundle.min.js",
    "aws_lambda_powertools/event_handler/openapi/swagger_ui/swagger-ui.min.css",
)

# Distributions a layer's lock pins that the layer leaves out whole ({distribution: its top-level modules}), each for
# a reason read in the pinned sources (docs/decisions.md, "The layers leave out pip's records, METADATA's long
# description and charset-normalizer"). `analyse` leaves them out too, so a run-time path that imports one is a module the closure
# cannot find, and the trimmed-layer tests' finder reports every import of them (the expected ones are listed there).
LEFT_OUT: dict[str, dict[str, tuple[str, ...]]] = {
    "payments": {
        # requests' optional character detection (requests 2.34.2): read only by Response.apparent_encoding, which
        # Response.text calls when a response names no charset, and which falls back to UTF-8 without it; stripe
        # reads Response.content (bytes) and decodes UTF-8 itself (_http_client.RequestsClient, _api_requestor).
        # requests warns at import without it: shop/__init__.py filters that one message.
        "charset-normalizer": ("charset_normalizer",),
    },
}
# Console scripts (`pip install -t` writes them to bin/): Lambda puts /opt/bin on PATH, not /opt/python/bin, and
# no module imports them.
SCRIPTS = "bin"
# In every *.dist-info, what only pip (its uninstall list RECORD, INSTALLER, REQUESTED) or a supply-chain scanner
# (sboms/) reads; importlib.metadata reads METADATA's headers, entry_points.txt and top_level.txt, which stay, and
# so do the licence files (licenses/, LICENSE, NOTICE: redistributing the packages requires their notices).
DIST_INFO_UNREAD = ("RECORD", "INSTALLER", "REQUESTED", "sboms")

# DWARF debug sections of compiled extensions (wrapt's `_wrappers` ships them: 0.5 MB of its 0.6 MB), which the
# dynamic loader never maps: `llvm-strip --strip-debug` removes them and nothing else (code, data and symbols stay).
# llvm-strip handles both architectures; on a machine without it the layer keeps them (the stamp records which).
STRIP_DEBUG = shutil.which("llvm-strip")


def _load_trims() -> dict[str, tuple[str, ...]]:
    data = TRIMS_FILE.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != TRIMS_DIGEST:
        raise RuntimeError(f"{TRIMS_FILE.name} does not match TRIMS_DIGEST: run `python -m infra.build_layers --plan`")
    return {layer: tuple(paths) for layer, paths in json.loads(data).items()}


UNUSED_AT_RUN_TIME = _load_trims()


def trim(site: Path, layer: str = "deps") -> None:
    """What a layer's site folder keeps: everything but what is never needed at run time (`_strip`, the layer's
    LEFT_OUT distributions, console scripts, what no run-time path reads of a *.dist-info, the files no interpreter
    loads, the layer's UNUSED_AT_RUN_TIME modules and folders, compiled extensions' debug sections)."""
    _strip(site)
    for distribution, tops in LEFT_OUT.get(layer, {}).items():
        for top in tops:
            shutil.rmtree(site / top, ignore_errors=True)
            (site / f"{top}.py").unlink(missing_ok=True)
        for dist_info in site.glob(f"{_dist_info_stem(distribution)}-*.dist-info"):
            shutil.rmtree(dist_info)
    shutil.rmtree(site / SCRIPTS, ignore_errors=True)
    for dist_info in site.glob("*.dist-info"):
        _trim_dist_info(dist_info)
    for relative in UNUSED_AT_RUN_TIME.get(layer, ()):
        path = site / relative
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    for pattern in NEVER_LOADED:
        for path in site.rglob(pattern):
            if path.is_file() and ".dist-info" not in path.parent.name:
                path.unlink()
    for stubs in site.glob("*-stubs"):
        shutil.rmtree(stubs, ignore_errors=True)
    if layer == "deps":
        for relative in SWAGGER_ASSETS:
            (site / relative).unlink(missing_ok=True)
    if STRIP_DEBUG is not None:
        for path in sorted(site.rglob("*.so")):
            subprocess.run([STRIP_DEBUG, "--strip-debug", str(path)], check=True)


def _dist_info_stem(distribution: str) -> str:
    """The name part of a distribution's *.dist-info folder (wheels normalise `-` and `.` to `_`)."""
    return distribution.replace("-", "_").replace(".", "_")


def _trim_dist_info(dist_info: Path) -> None:
    for name in DIST_INFO_UNREAD:
        path = dist_info / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    # METADATA keeps its header block (name, version, requirements, entry points' extras...: everything
    # importlib.metadata answers) and loses its body, the long description (PyPI's project page), which nothing at
    # run time reads. The header block ends at the first empty line (a continuation line starts with a space or tab).
    metadata = dist_info / "METADATA"
    if metadata.is_file():
        text = metadata.read_text(encoding="utf-8")
        headers, blank, _description = text.partition("\n\n")
        if blank:
            metadata.write_text(headers + "\n", encoding="utf-8")


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


def distribution_tops(lock: Path) -> dict[str, list[str]]:
    """{distribution: its top-level files and folders} for the pins of a lock, as installed in this environment."""
    from importlib.metadata import distribution

    out: dict[str, list[str]] = {}
    for line in lock.read_text().splitlines():
        name = line.split("#", 1)[0].strip().split("==", 1)[0]
        if not name:
            continue
        files = distribution(name).files or []
        out[name] = sorted(
            {f.parts[0] for f in files if not f.parts[0].endswith((".dist-info", "..")) and f.parts[0] != "bin"}
        )
    return out


@dataclass
class Analysis:
    """The layers' packages as installed in an environment, and what a run-time path of the shop can import."""

    layer_sites: dict[str, Path]  # layer -> a copy of its packages
    modules: dict[str, set[str]]  # layer -> its modules
    kept: set[str]  # every module reachable from the shop's code and the handlers, the shop's own included


def analyse(environment_site: Path, work: Path) -> Analysis:
    """Copy the layers' packages from `environment_site` (at the locks' pins) into `work` and follow every run-time
    path from the shop's code and the handlers through them (infra.import_closure)."""
    from infra import import_closure

    layer_sites: dict[str, Path] = {}
    for layer, lock in LAYERS.items():
        site = work / layer
        site.mkdir(parents=True, exist_ok=True)
        for distribution, tops in distribution_tops(lock).items():
            if distribution in LEFT_OUT.get(layer, {}):
                continue  # not in the layer: an import of it finds nothing
            for top in tops:
                source = environment_site / top
                if source.is_dir() and not (site / top).exists():  # a copy: the analysis walks real folders
                    shutil.copytree(source, site / top, ignore=shutil.ignore_patterns("__pycache__"))
                elif source.is_file():
                    shutil.copy2(source, site / top)
        layer_sites[layer] = site
    shared = ROOT / "layers" / "shared" / "python"
    sites = import_closure.Sites([*layer_sites.values(), shared])
    roots = [name for name in sites.files if name == "shop" or name.startswith("shop.")]
    for handler in sorted((ROOT / "functions").glob("*/handler.py")):
        roots += sorted(import_closure.Module("handler", handler, False).imports)
    kept = import_closure.closure(roots, sites)
    modules = {
        layer: {name for name, path in sites.files.items() if path.is_relative_to(site)}
        for layer, site in layer_sites.items()
    }
    return Analysis(layer_sites, modules, kept)


def plan(environment_site: Path, work: Path) -> dict[str, list[str]]:
    """Per layer, the modules and folders of its packages that no run-time path of the shop can import."""
    analysis = analyse(environment_site, work)
    return {
        layer: _unreachable_paths(site, analysis.modules[layer], analysis.kept)
        for layer, site in analysis.layer_sites.items()
    }


def _unreachable_paths(site: Path, modules: set[str], kept: set[str]) -> list[str]:
    """The site's unreachable modules as paths: a package's folder when none of its modules is reachable and it holds
    nothing but Python files (no data a reachable module could read), else its unreachable modules one by one."""
    paths: list[str] = []

    def python_only(folder: Path) -> bool:
        return all(f.suffix in (".py", ".pyi") or f.name == "py.typed" for f in folder.rglob("*") if f.is_file())

    def visit(name: str) -> None:
        path = site.joinpath(*name.split("."))
        inside = [n for n in modules if n.startswith(name + ".")]
        if path.is_dir():
            if name not in kept and not any(n in kept for n in inside) and python_only(path):
                paths.append(path.relative_to(site).as_posix())
                return
            for child in sorted(n for n in inside if n.count(".") == name.count(".") + 1):
                visit(child)
        elif name not in kept:
            paths.append(path.with_suffix(".py").relative_to(site).as_posix())

    for top in sorted(n for n in modules if "." not in n):
        visit(top)
    return sorted(paths)


def write_plan() -> Path:
    """`--plan`: infra/layer_trims.json from this environment (the dev lock holds the layers' pins), and its digest
    in this file."""
    import sysconfig
    import tempfile

    environment_site = Path(sysconfig.get_paths()["purelib"])
    with tempfile.TemporaryDirectory(prefix="layer-plan-") as work:
        trims = plan(environment_site, Path(work))
    data = (json.dumps(trims, indent=1, sort_keys=True) + "\n").encode()
    TRIMS_FILE.write_bytes(data)
    source = Path(__file__)
    text = source.read_text()
    start = text.index('TRIMS_DIGEST = "') + len('TRIMS_DIGEST = "')
    source.write_text(text[:start] + hashlib.sha256(data).hexdigest() + text[start + 64 :])
    return TRIMS_FILE


def compiled_module_name(arch: str) -> str:
    """File name of pydantic_core's extension module for ``arch`` (what the layer must hold)."""
    version = LAYER_PYTHON_VERSION.replace(".", "")
    return f"_pydantic_core.cpython-{version}-{SO_MACHINE[arch]}-linux-gnu.so"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=sorted(PLATFORMS), default="arm64")
    parser.add_argument("--layer", choices=sorted(LAYERS), default="deps")
    parser.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    parser.add_argument("--plan", action="store_true", help="write infra/layer_trims.json (what the layers drop)")
    args = parser.parse_args(argv)
    if args.plan:
        print(write_plan().relative_to(ROOT))
        return 0
    target = build(args.arch, force=args.force, layer=args.layer)
    print(target.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
