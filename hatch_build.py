"""The optional compiled build: mypyc compiles the typed replay core when LOOPGUARD_COMPILE=1, else nothing happens.

Two ways in, one list of modules (`compile` in pyproject.toml's `[tool.hatch.build.targets.wheel.hooks.custom]`):

- `LOOPGUARD_COMPILE=1 pip install .` (or `pip wheel .`): hatchling runs `CompiledBuildHook`, which asks for mypy
  and setuptools as extra build requirements, compiles in a temporary folder and adds the extension modules to
  the wheel beside the `.py` files (Python imports an extension module before a source file of the same name).
- `python hatch_build.py` builds them in place, next to the sources, for a development tree
  (`python hatch_build.py --clean` removes them again).

Without the variable the wheel and the editable install are pure Python: installing never needs a compiler.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ENV = "LOOPGUARD_COMPILE"
ROOT = Path(__file__).resolve().parent
PACKAGE = "pytest_loopguard"
# what mypyc needs to type-check the compiled modules exactly as `mypy pytest_loopguard` does in development
_BUILD_REQUIRES = ["mypy>=1.10", "setuptools>=65", "types-PyYAML", "types-tabulate"]


def wanted() -> bool:
    """Whether this build compiles: LOOPGUARD_COMPILE set to anything but empty, 0, false or no."""
    return os.environ.get(ENV, "").strip().lower() not in ("", "0", "false", "no")


def modules(root: Path = ROOT) -> list[str]:
    """The source paths to compile, relative to `root`, as pyproject.toml lists them."""
    with open(root / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)
    paths: list[str] = config["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]["compile"]
    return paths


def compile_modules(root: Path, out: Path, *, inplace: bool) -> list[Path]:
    """Compile `modules(root)` with mypyc; the built extension files (under `out`, or next to the sources).

    mypyc type-checks with the project's own mypy configuration, so a module that does not pass
    `mypy pytest_loopguard` does not compile either.
    """
    from mypyc.build import mypycify  # imported here: only a compiling build has mypy installed
    from setuptools import Distribution  # type: ignore[import-untyped,unused-ignore]

    here = os.getcwd()
    os.chdir(root)  # mypy finds the package, and mypyc names the modules, relative to the current folder
    try:
        extensions = mypycify(
            ["--config-file", str(root / "pyproject.toml"), *modules(root)],
            opt_level="3",
            multi_file=True,  # one C file per module: smaller units for the C compiler
            target_dir=str(out / "c"),
        )
        # a bare Distribution: setuptools' own project discovery (pyproject.toml) stays out of it
        dist = Distribution({"name": PACKAGE, "ext_modules": extensions, "script_name": "hatch_build.py"})
        build: Any = dist.get_command_obj("build_ext")
        build.inplace = inplace
        build.build_lib = str(out / "lib")
        build.build_temp = str(out / "tmp")
        dist.run_command("build_ext")
        # where build_ext put each extension: next to its source in place, else under out/lib
        outputs = [Path(build.get_ext_fullpath(ext.name)) for ext in extensions]
    finally:
        os.chdir(here)
    return [p if p.is_absolute() else root / p for p in outputs]


def clean(root: Path = ROOT) -> list[Path]:
    """Remove in-place extension modules (the package's and mypyc's shared library) and the build folder."""
    gone = [*(root / PACKAGE).rglob("*.so"), *(root / PACKAGE).rglob("*.pyd"), *root.glob("*__mypyc*")]
    for path in gone:
        path.unlink()
    shutil.rmtree(root / "build" / "mypyc", ignore_errors=True)
    return gone


class CompiledBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Hatchling's hook: with LOOPGUARD_COMPILE set, a standard wheel gets the compiled modules."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        if not wanted():
            return []
        return [*_BUILD_REQUIRES, *self.metadata.core.dependencies]

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if not wanted() or self.target_name != "wheel" or version == "editable":
            return  # an editable install stays pure: `python hatch_build.py` compiles a development tree
        self._tmp = tempfile.mkdtemp(prefix="loopguard-mypyc-")
        root = Path(self.root)
        lib = Path(self._tmp) / "lib"
        for path in compile_modules(root, Path(self._tmp), inplace=False):
            build_data["force_include"][str(path)] = path.relative_to(lib).as_posix()
        build_data["pure_python"] = False
        build_data["infer_tag"] = True  # cp311-cp311-linux_x86_64: the extensions are for this interpreter

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv[1:] == ["--clean"]:
        for path in clean():
            print(f"removed {path.relative_to(ROOT)}")
        return 0
    if argv[1:]:
        print("usage: python hatch_build.py [--clean]", file=sys.stderr)
        return 2
    clean()
    for path in compile_modules(ROOT, ROOT / "build" / "mypyc", inplace=True):
        print(f"built {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
