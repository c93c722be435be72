"""Package discovery and the native core. `docket/` is an ordinary package whose `agents`,
`benchmarks`, `methods`, `reports` and `sandboxes` entries are relative links to the card's root
folders, so every folder with an `__init__.py` under `docket/` (links followed) ships as
`docket.<...>` with no package-dir mapping (pyproject.toml holds everything else). Plus the C++17
core of the incremental BPE tokenizer (`docket.methods.tokenization._incbpe`), built with the
machine's compiler; without one the build goes on and says so in one line."""

import sys
from pathlib import Path

from setuptools import Extension, find_namespace_packages, setup
from setuptools.command.build_ext import build_ext


def discover() -> list[str]:
    """Every folder with an `__init__.py` under `docket/`, links followed, as an import name."""
    here = Path(__file__).parent
    found = find_namespace_packages(where=str(here), include=["docket", "docket.*"])
    return sorted(
        name for name in found if (here / name.replace(".", "/") / "__init__.py").is_file()
    )


NATIVE = "methods/tokenization/native"
INCBPE = Extension(
    "docket.methods.tokenization._incbpe",
    sources=[f"{NATIVE}/core.cpp", f"{NATIVE}/pretok.cpp", f"{NATIVE}/module.cpp"],
    depends=[f"{NATIVE}/core.hpp", f"{NATIVE}/pretok.hpp", f"{NATIVE}/unicode_classes.inc"],
    extra_compile_args=["-std=c++17", "-O3", "-fvisibility=hidden"],
    language="c++",
)


class OptionalBuildExt(build_ext):
    """Build the native core if a C++17 compiler works; otherwise one line, and go on."""

    failed: set = set()

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:  # CompileError, LinkError, a missing compiler executable
            self.failed.add(ext.name)
            reason = (str(error).splitlines() or [type(error).__name__])[0][:160]
            sys.stderr.write(
                f"docket: native tokenizer core {ext.name} not built ({reason}); install g++ "
                "(C++17) and reinstall to use docket.methods.tokenization\n"
            )

    def _built_only(self, step, *args):  # type: ignore[no-untyped-def]
        everything = self.extensions
        self.extensions = [e for e in everything if e.name not in self.failed]
        try:
            return step(*args)
        finally:
            self.extensions = everything

    def copy_extensions_to_source(self) -> None:
        self._built_only(super().copy_extensions_to_source)

    def get_outputs(self) -> list:
        return self._built_only(super().get_outputs)

    def get_output_mapping(self) -> dict:
        return self._built_only(super().get_output_mapping)


# docket.egg-info in the repo root would shadow the installed metadata whenever the root is on
# sys.path (`python -m`, `python -c`), and Inspect would then register names without `docket/`.
EGG_BASE = Path("build") / "egg-info"
EGG_BASE.mkdir(parents=True, exist_ok=True)

setup(
    packages=discover(),
    ext_modules=[INCBPE],
    cmdclass={"build_ext": OptionalBuildExt},
    options={"egg_info": {"egg_base": str(EGG_BASE)}},
)
