"""The counted C++ library: the parts of libc++ whose work depends on the arguments, as IR.

libc++ declares its common template instantiations ``extern``: ``std::sort`` of ``int*``,
``std::string``'s members, ``std::to_string`` are compiled into libc++ itself, so a user's
translation unit only calls them and the count stops at the call. Here the libc++ sources
the ziglang wheel ships that define them (:data:`SOURCES`) are compiled to IR once per
toolchain with the same headers and configuration as the user's code, and
:func:`cbuild.build.codegen.link_units` links them into C++ builds: the functions the
build calls become internal to it and are instrumented like the user's code; the host's
libc++ still provides everything else (streams, locales, threads, the exception runtime).
Their own calls of ``malloc``, ``memcpy`` and the rest reach the counted C library.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from cbuild.build.toolchain import zig_lib

if TYPE_CHECKING:
    from cbuild.build.cache import Cache
    from cbuild.build.toolchain import Toolchain

#: libc++ sources (``lib/libcxx/src/<name>.cpp``) compiled into the counted library: the
#: explicit instantiations of algorithms and strings, conversions, allocation and hashing
#: (``functional``: ``std::hash`` of strings). One translation unit, in this order: memory.cpp
#: defines members its header has inline unless it comes before the headers that include it.
SOURCES = ("algorithm", "charconv", "hash", "memory", "new", "string", "vector", "functional")
#: The section libc++ puts its replaceable ``operator new`` in, to tell whether a program
#: replaced it: the counted copies are the build's own, not replacements.
OVERRIDE_SECTION = ' section "__lcxx_override"'


def available(toolchain: Toolchain) -> bool:
    """Whether ``toolchain`` compiles C++ against the libc++ whose sources are at hand."""
    return toolchain.is_zig and (zig_lib() / "libcxx" / "src" / "string.cpp").is_file()


def source(toolchain: Toolchain) -> str:
    """The counted part of libc++ as one translation unit."""
    src = zig_lib() / "libcxx" / "src"
    return "".join(f'#include "{src / name}.cpp"\n' for name in SOURCES)


def libcxx_ir(toolchain: Toolchain, cache: Cache) -> Path | None:
    """The library's IR for the toolchain's target (built once, cached), or None where the
    toolchain's C++ library is not the libc++ whose sources the wheel ships."""
    from cbuild.build.compile import compile_own  # the LLVM worker imports this module: keep it light

    if not available(toolchain):
        return None
    lib = zig_lib()
    flags = [
        "-S",
        "-emit-llvm",
        "-g0",
        "-O2",
        "-fPIC",
        "-std=c++23",
        "-faligned-allocation",
        # As zig builds libc++ itself: the library's own view of its headers.
        "-D_LIBCPP_BUILDING_LIBRARY",
        "-DLIBCXX_BUILDING_LIBCXXABI",
        "-D_LIBCPP_HAS_NO_VENDOR_AVAILABILITY_ANNOTATIONS",
        f"-I{lib / 'libcxx' / 'src'}",
        f"-I{lib / 'libcxx' / 'libc'}",
        f"-I{lib / 'libcxxabi' / 'include'}",
    ]
    return compile_own(
        toolchain,
        cache,
        source(toolchain),
        what="the counted C++ library",
        stem="libcxx",
        flags=flags,
        suffix=".ll",
        cxx=True,
    )


def prepare(text: str) -> str:
    """The library's IR ready to link into a build.

    Its variables defined for the whole program (vtables and type information of libc++'s
    classes) become ``available_externally``: the build uses the host libc++'s one copy,
    which the rest of libc++ shares; its aliases become ``weak_odr``. Its ``operator new``
    leaves libc++'s override section (libc++ would take the build's copies for a user's
    replacement).
    """
    text = _EXTERNAL_DEFINITION.sub(_available_externally, text)
    # Aliases (a destructor's other names) stay visible to the linker, which link_units does not
    # change: weak_odr, so that the host libc++'s own definitions of them win.
    text = _EXTERNAL_ALIAS.sub(r"\1weak_odr \2", text)
    return text.replace(OVERRIDE_SECTION, "")


#: A global variable defined with external linkage (no linkage keyword after ``=``).
_EXTERNAL_DEFINITION = re.compile(
    r"^(@[-\w.$\"]+ = )(?!(?:private|internal|weak|weak_odr|linkonce|linkonce_odr|common|appending|"
    r"extern_weak|external|available_externally)\b)(?=(?:[a-z_]+(?:\(\w+\))? )*?(?:global|constant) )(.*)$",
    re.MULTILINE,
)


#: An alias defined with external linkage.
_EXTERNAL_ALIAS = re.compile(
    r"^(@[-\w.$\"]+ = )(?!(?:private|internal|weak|weak_odr|linkonce|linkonce_odr|external)\b)"
    r"((?:[a-z_]+ )*?alias )",
    re.MULTILINE,
)


def _available_externally(m: re.Match[str]) -> str:
    rest = re.sub(r", comdat(?:\(\$[-\w.$\"]+\))?", "", m.group(2))
    return f"{m.group(1)}available_externally {rest}"
