"""The compiled build: mypyc compiles the replay core and the engines when the machine has a C compiler.

Two ways in, one list of modules (`compile` in pyproject.toml's `[tool.hatch.build.targets.wheel.hooks.custom]`):

- `pip install .` (a checkout or the sdist) or `pip wheel .`: hatchling runs `CompiledBuildHook`. Where a C
  compiler and Python's headers are found it asks for mypy and setuptools as extra build requirements,
  compiles in a temporary folder and adds the extension modules to the wheel beside the `.py` files (Python
  imports an extension module before a source file of the same name). Where they are not, or compiling fails,
  the wheel is pure Python, with a line saying why. `LOOPGUARD_COMPILE=0` asks for pure Python;
  `LOOPGUARD_COMPILE=1` for compiled or a failed build, never a silent fallback.
- `python hatch_build.py` builds them in place, next to the sources, for a development tree
  (`python hatch_build.py --clean` removes them again).

An editable install (`pip install -e .`) is always pure Python: it runs the sources as they are edited.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
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


def mode() -> str:
    """What LOOPGUARD_COMPILE asks for: `pure` (0, false, no, pure), `auto` (unset, empty or auto: compiled
    where the machine can compile) or `compiled` (any other value: compiled, or the build fails)."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("0", "false", "no", "pure"):
        return "pure"
    return "auto" if value in ("", "auto") else "compiled"


def missing_toolchain() -> str | None:
    """What this machine lacks to compile extension modules (the C compiler Python was built with, or
    Python's headers), or None when it has both."""
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    if not compiler or shutil.which(compiler[0]) is None:
        return f"no C compiler ({compiler[0] if compiler else 'CC is empty'} not found)"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return f"no Python headers (Python.h not in {sysconfig.get_paths()['include']})"
    return None


def wanted() -> bool:
    """Whether this build tries to compile: asked for, or left to the machine and the machine can."""
    asked = mode()
    return asked == "compiled" or (asked == "auto" and missing_toolchain() is None)


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
    """Hatchling's hook: a standard wheel gets the compiled modules, where wanted (`wanted`) and they compile."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        if not wanted():
            return []
        return [*_BUILD_REQUIRES, *self.metadata.core.dependencies]

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return  # an editable install stays pure: `python hatch_build.py` compiles a development tree
        missing = missing_toolchain()
        if mode() == "compiled" and missing is not None:
            raise RuntimeError(f"{ENV}={os.environ.get(ENV, '').strip()} asks for the compiled build, but: {missing}")
        if not wanted():
            why = f"{ENV}=0" if mode() == "pure" else missing
            self.app.display_info(f"pytest-loopguard: pure Python wheel ({why})")
            return
        self._tmp = tempfile.mkdtemp(prefix="loopguard-mypyc-")
        root = Path(self.root)
        lib = Path(self._tmp) / "lib"
        try:
            built = compile_modules(root, Path(self._tmp), inplace=False)
        except Exception as exc:  # a compiler that fails: asked for, an error; left to the machine, pure Python
            if mode() == "compiled":
                raise
            self.app.display_warning(f"pytest-loopguard: compiling failed ({type(exc).__name__}: {exc}); "
                                     "pure Python wheel")
            return
        for path in built:
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
