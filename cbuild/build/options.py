"""What a build is asked to do: one frozen value shared by the CLI and the pytest plugin."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from cbuild.build.cpu import DEFAULT_CPU, cpu_level
from cbuild.build.portable import PathMap
from cbuild.errors import CBuildError

OPT_LEVELS = ("0", "1", "2", "3", "s", "z")
CXX_SUFFIXES = frozenset({".cc", ".cpp", ".cxx", ".c++", ".C", ".CPP"})
C_SUFFIXES = frozenset({".c"})
IR_SUFFIXES = frozenset({".ll"})
#: clang's optimisation level flags (``-O``, ``-O2``, ``-Os``, ``-Ofast``, ``-Og``...).
_OPT_FLAG = re.compile(r"-O([0-9]+|s|z|g|fast)?")


@dataclass(frozen=True)
class BuildOptions:
    """Compiler and link settings; every field is part of the build cache key."""

    opt_level: str = "2"
    cflags: tuple[str, ...] = ()
    cxxflags: tuple[str, ...] = ()
    include_dirs: tuple[Path, ...] = ()
    defines: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    #: False builds through the same pipeline without counting code (for overhead comparisons).
    instrument: bool = True
    #: ``edges`` (counters off a spanning tree of each function, fewer updates) or
    #: ``blocks`` (one counter per block); the block counts are the same.
    placement: str = "edges"
    #: Cost-model parameters that change built artifacts (part of the key).
    model_params: tuple[tuple[str, str], ...] = field(default=())
    #: Report function entries and returns: inclusive costs, call counts and call-path
    #: profiles (a little slower; the counts are the same).
    calls: bool = False
    #: The x86-64 level programs are told they run on (cbuild.build.cpu): ``x86-64``, ``x86-64-v2``,
    #: ``x86-64-v3`` or ``x86-64-v4``, whatever the host.
    cpu: str = DEFAULT_CPU
    #: Check the running total at every function entry and loop head, so that code can be
    #: stopped at a limit set when it runs (cbuild.build.checks); the counts are the same.
    cutoff: bool = False
    #: Link the counted libraries into instrumented builds: the C library (cbuild.build.libc)
    #: and, in C++ builds, libc++'s out-of-line parts (cbuild.build.libcxx). String, memory,
    #: allocation, sorting and conversion work is counted like the user's code and the heap
    #: lies at a fixed address. False counts only the user's own code: the host's libraries
    #: do that work, uncounted.
    count_libraries: bool = True
    #: The project's directory (the plugin's rootdir): paths under it are named relative to it in
    #: cache keys and debug information, so a copy of the project elsewhere hits the cache. Not
    #: part of the key itself.
    root: Path | None = None
    #: False (the default) defines ``NDEBUG``, as release builds do: ``assert`` costs nothing.
    #: True undefines it, whatever the optimisation level and driver (``zig cc`` defines it
    #: when it optimises, a plain clang does not): the checks run and are counted.
    assertions: bool = False

    def __post_init__(self) -> None:
        if self.opt_level not in OPT_LEVELS:
            raise CBuildError(f"optimisation level {self.opt_level!r} is not one of {', '.join(OPT_LEVELS)}")
        for key in ("cflags", "cxxflags"):
            level = optimisation_flag(getattr(self, key))
            if level is not None:
                suffix = level[2:]
                wanted = f"opt_level {suffix!r}" if suffix in OPT_LEVELS else f"opt_level ({', '.join(OPT_LEVELS)})"
                raise CBuildError(
                    f"{key} has {level!r}: set the optimisation level with {wanted} instead; it sets clang's "
                    f"level and the instrumented pipeline's alike, where {level!r} in {key} would change only clang's"
                )
        cpu_level(self.cpu)

    @property
    def speed_level(self) -> int:
        """The llvmlite pipeline level matching :attr:`opt_level` (``s``/``z`` optimise as 2)."""
        return int(self.opt_level) if self.opt_level.isdigit() else 2

    def key_parts(self) -> list[str]:
        """Every field, rendered for a cache key (paths under :attr:`root` relative to it)."""
        paths = PathMap(self.root)
        return [
            f"O{self.opt_level}",
            "\0".join(self.cflags),
            "\0".join(self.cxxflags),
            "\0".join(paths.text(str(p)) for p in self.include_dirs),
            "\0".join(self.defines),
            "\0".join(self.ldflags),
            f"instrument={self.instrument}",
            f"placement={self.placement}",
            "\0".join(f"{k}={v}" for k, v in self.model_params),
            f"calls={self.calls}",
            f"cpu={self.cpu}",
            f"cutoff={self.cutoff}",
            f"count_libraries={self.count_libraries}",
            f"assertions={self.assertions}",
        ]


def optimisation_flag(flags: tuple[str, ...]) -> str | None:
    """The first of clang's optimisation level flags in ``flags`` (the build's level is its own)."""
    return next((flag for flag in flags if _OPT_FLAG.fullmatch(flag)), None)


def language_of(source: Path) -> str:
    """``c``, ``c++`` or ``ir`` (textual LLVM IR) from the file suffix; anything else is an error."""
    if source.suffix in C_SUFFIXES:
        return "c"
    if source.suffix in IR_SUFFIXES:
        return "ir"
    if source.suffix in CXX_SUFFIXES:
        return "c++"
    raise CBuildError(
        f"{source}: unknown source language (expected .c, .ll, or one of {', '.join(sorted(CXX_SUFFIXES))})"
    )
