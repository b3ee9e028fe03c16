"""The counted C library: portable C (``cbuild/libc/``) linked into instrumented builds.

Functions whose work depends on their arguments (``mem*``/``str*``/``wcs*``, the
allocator, ``qsort``/``bsearch``, ``strto*``/``ato*``) would otherwise run in the host's
C library, uncounted and different on every host. Here they are compiled to IR once per
toolchain (:func:`libc_ir`), and each build's units are pointed at them
(:func:`point_at_libc`): calls of ``strlen`` become calls of ``__instrbudget_libc_strlen``,
``llvm.memcpy``/``memmove``/``memset`` with a run-time length become calls of the counted
copies. :func:`cbuild.build.codegen.link_units` links the library in, makes its functions
internal and drops the ones the build does not call; the rest are instrumented with the
user's code and counted like it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from cbuild.build.demangle import LIBC_PREFIX
from cbuild.build.signatures import split_top

if TYPE_CHECKING:
    from cbuild.build.cache import Cache
    from cbuild.build.toolchain import Toolchain

LIBC_DIR = Path(__file__).resolve().parent.parent / "libc"
#: The heap's mapping and lock: uninstrumented beside native builds, compiled with the library
#: into RISC-V builds.
HEAP_MAP_SOURCE = LIBC_DIR.parent / "runtime" / "heap_map.c"
#: How the library is compiled, for any target (``-fno-builtin``: its loops stay loops).
FLAGS = ("-O2", "-std=c11", "-fno-builtin", "-D_GNU_SOURCE")
PREFIX = LIBC_PREFIX
#: Names glibc's headers give some functions (C23 and ISO C99 variants) -> the function.
HEADER_ALIASES = {
    "__isoc23_strtol": "strtol",
    "__isoc23_strtoul": "strtoul",
    "__isoc23_strtoll": "strtoll",
    "__isoc23_strtoull": "strtoull",
    "__isoc23_strtoimax": "strtoimax",
    "__isoc23_strtoumax": "strtoumax",
    "__strdup": "strdup",
    "__strndup": "strndup",
    "__stpcpy": "stpcpy",
    "__mempcpy": "mempcpy",
}
#: Defined for the routing of intrinsics only: no user call names it.
_INTERNAL = frozenset({"memset_byte"})
_DEFINED = re.compile(r"\bLIBC\((\w+)\)")
_DEFINE_LINE = re.compile(r"^define [^@]*@([\w.$]+)\(", re.MULTILINE)
_INTRINSIC = re.compile(
    r"^(?P<indent>\s*)(?P<tail_kind>(?:tail |musttail |notail )?)call void @llvm\.(?P<op>memcpy|memmove|memset)\."
    r"p0(?:\.p0)?\.i(?P<bits>\d+)\((?P<args>.*)\)(?P<attrs>(?: #\d+)?)(?P<tail>(?:, !.*)?)$",
    re.MULTILINE,
)


@functools.cache
def _files() -> tuple[Path, ...]:
    return tuple(sorted(LIBC_DIR.glob("*.c")))


@functools.cache
def source() -> str:
    """The library as one translation unit."""
    parts = [(LIBC_DIR / "prelude.h").read_text()]
    parts += [f'#line 1 "cbuild/libc/{path.name}"\n{path.read_text()}' for path in _files()]
    return "\n".join(parts)


@functools.cache
def functions() -> frozenset[str]:
    """The C library functions the counted library defines."""
    # The .c files only: the prelude's ``#define LIBC(name)`` defines nothing.
    return frozenset(name for path in _files() for name in _DEFINED.findall(path.read_text())) - _INTERNAL


@functools.cache
def aliases() -> dict[str, str]:
    """Symbol a user's code may call -> the counted function."""
    out = {name: PREFIX + name for name in functions()}
    out.update({alias: PREFIX + name for alias, name in HEADER_ALIASES.items() if name in functions()})
    return out


def libc_ir(toolchain: Toolchain, cache: Cache) -> Path:
    """The library's IR for the toolchain's target (built once, cached by content)."""
    from cbuild.build.compile import compile_own  # the LLVM worker imports this module: keep it light

    flags = ["-S", "-emit-llvm", "-gline-tables-only", "-fPIC", *FLAGS]
    return compile_own(toolchain, cache, source(), what="the counted C library", stem="libc", flags=flags, suffix=".ll")


def size_t_bits(triple: str) -> int:
    """The width of ``size_t`` on ``triple``."""
    return 32 if triple.startswith(("riscv32", "i386", "i686", "wasm32", "arm-", "armv", "thumb")) else 64


def defined_names(texts: Iterable[str]) -> set[str]:
    """Functions the units define themselves (they keep their own, not the counted ones)."""
    return {name for text in texts for name in _DEFINE_LINE.findall(text)}


def point_at_libc(text: str, *, own: set[str], size_bits: int) -> str:
    """``text`` (one unit's IR) calling the counted library: calls and references of the
    functions it provides renamed, run-time-length ``llvm.mem*`` calls routed to it.

    ``own`` are the functions the build defines itself; ``size_bits`` is the width of
    ``size_t`` (intrinsics with another length type stay as they are).
    """
    table = {name: target for name, target in aliases().items() if name not in own}
    if table:
        names = "|".join(re.escape(n) for n in sorted(table, key=len, reverse=True))
        text = re.sub(rf"@({names})(?![\w.$])", lambda m: "@" + table[m.group(1)], text)
        # A unit may now declare a counted function twice (its own name and an alias).
        text = _dedupe_declarations(text)
    routed: set[str] = set()
    names_used: list[str] = []

    def route(m: re.Match[str]) -> str:
        args = split_top(m.group("args"), ",")
        if int(m.group("bits")) != size_bits or len(args) != 4:
            return m.group(0)
        length = args[2].split()[-1]
        if re.fullmatch(r"-?\d+", length):
            return m.group(0)  # a constant length: code generation inlines it or calls its own
        op = m.group("op")
        if op == "memset":
            value = args[1].split()[-1]
            target = PREFIX + "memset_byte"
            call_args = [args[0], f"i8 zeroext {value}", args[2]]
        else:
            target = PREFIX + op
            call_args = args[:3]
        routed.add(target)
        # A named result: an unnamed one would take a number and shift the function's numbering.
        result = f"%instrbudget.libc.{len(names_used)}"
        names_used.append(result)
        call = f"call ptr @{target}({', '.join(call_args)})"
        return f"{m.group('indent')}{result} = {m.group('tail_kind')}{call}{m.group('tail')}"

    text = _INTRINSIC.sub(route, text)
    for target in sorted(routed):
        if not re.search(rf"^(?:declare|define) [^@]*@{target}\(", text, re.MULTILINE):
            size = f"i{size_bits}"
            params = f"ptr, i8 zeroext, {size}" if target.endswith("memset_byte") else f"ptr, ptr, {size}"
            text += f"\ndeclare ptr @{target}({params})\n"
    return text


def _dedupe_declarations(text: str) -> str:
    seen: set[str] = set()
    lines = []
    for line in text.split("\n"):
        if line.startswith("declare "):
            m = re.search(r"@([\w.$]+)\(", line)
            if m:
                if m.group(1) in seen:
                    continue
                seen.add(m.group(1))
        lines.append(line)
    return "\n".join(lines)
