"""The counted C library: portable C (``cbuild/libc/``) linked into instrumented builds.

Functions whose work depends on their arguments (``mem*``/``str*``/``wcs*``, the
allocator, ``qsort``/``bsearch``, ``strto*``/``ato*``, the ``printf`` and ``scanf``
families' formatting) would otherwise run in the host's C library, uncounted and
different on every host. Here they are compiled to IR once per toolchain
(:func:`libc_ir`): the project's own portable C, and for formatting, scanning,
``strtod`` and ``math.h`` the musl sources the ziglang wheel ships (:data:`MUSL_SOURCES`, bridged to
the host's streams by ``cbuild/libc/musl/bridge.c``). Each build's units are pointed at them
(:func:`point_at_libc`): calls of ``strlen`` become calls of ``__instrbudget_libc_strlen``,
``llvm.memcpy``/``memmove``/``memset`` with a run-time length become calls of the counted
copies. :func:`cbuild.build.codegen.link_units` links the library in, makes its functions
internal and drops the ones the build does not call; the rest are instrumented with the
user's code and counted like it.
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cbuild.build.demangle import LIBC_PREFIX
from cbuild.build.signatures import split_top
from cbuild.build.toolchain import zig_lib
from cbuild.errors import CBuildError, LinkError

if TYPE_CHECKING:
    from cbuild.build.cache import Cache
    from cbuild.build.toolchain import Toolchain

LIBC_DIR = Path(__file__).resolve().parent.parent / "libc"
#: The printf and scanf families on the host's streams, compiled against musl's headers.
BRIDGE = LIBC_DIR / "musl" / "bridge.c"
#: math.h around musl's kernels, compiled against musl's headers like the bridge.
MATH = LIBC_DIR / "musl" / "math.c"
#: The project's own sources compiled as musl's are.
MUSL_OWN = (BRIDGE, MATH)
#: The heap's mapping and lock: uninstrumented beside native builds, compiled with the library
#: into RISC-V builds.
HEAP_MAP_SOURCE = LIBC_DIR.parent / "runtime" / "heap_map.c"
#: How the library is compiled, for any target (``-fno-builtin``: its loops stay loops).
FLAGS = ("-O2", "-std=c11", "-fno-builtin", "-D_GNU_SOURCE")
PREFIX = LIBC_PREFIX
#: musl's math sources the library compiles (``math/<name>.c``) -> the functions of each that a
#: user's call reaches (none: kernels, tables and helpers that other functions call).
#: ``cbuild/libc/musl/math.c`` has the rest of math.h, and includes ``math/pow.c``.
MUSL_MATH: dict[str, tuple[str, ...]] = {
    "exp_data": (),
    "pow_data": (),
    "__math_divzero": (),
    "__math_invalid": (),
    "__math_oflow": (),
    "__math_uflow": (),
    "__math_xflow": (),
    "__math_divzerof": (),
    "__math_invalidf": (),
    "__math_oflowf": (),
    "__math_uflowf": (),
    "__math_xflowf": (),
    "__rem_pio2": (),
    "__rem_pio2_large": (),
    "__sin": (),
    "__cos": (),
    "__tan": (),
    "__expo2": (),
    "__expo2f": (),
    "expm1": ("expm1",),
    "atan2": ("atan2",),
    "sinh": ("sinh",),
    "asinh": ("asinh",),
    "acosh": ("acosh",),
    "atanh": ("atanh",),
    "erf": ("erf", "erfc"),
    "tgamma": ("tgamma",),
    "j0": ("j0", "y0"),
    "j1": ("j1", "y1"),
    "jn": ("jn", "yn"),
    "remainder": ("remainder",),
    "remquo": ("remquo",),
    "fma": ("fma",),
    "ldexp": ("ldexp",),
    "nextafter": ("nextafter",),
    "ilogb": ("ilogb",),
    "logb": ("logb",),
    "powf": ("powf",),
    "powf_data": (),
    "exp2f_data": (),
    "expm1f": ("expm1f",),
    "sinhf": ("sinhf",),
    "erff": ("erff", "erfcf"),
}
#: musl sources (the ziglang wheel's ``lib/libc/musl/src/<name>.c``) in the library:
#: formatting, scanning, the conversions of strings to floating point, and math.h.
MUSL_SOURCES = (
    "stdio/vfprintf",
    "stdio/vsnprintf",
    "stdio/vsprintf",
    "stdio/snprintf",
    "stdio/sprintf",
    "stdio/vasprintf",
    "stdio/asprintf",
    "stdio/fwrite",
    "stdio/__towrite",
    "stdio/vfscanf",
    "stdio/vsscanf",
    "stdio/sscanf",
    "stdio/__toread",
    "stdio/__uflow",
    "internal/shgetc",
    "internal/intscan",
    "internal/floatscan",
    "stdlib/strtod",
    "stdlib/atof",
    "math/__signbitl",
    "math/__fpclassifyl",
    "math/scalbn",
    "math/scalbnl",
    # math.h: the kernels, and the functions whose C the wheel ships (MUSL_MATH).
    *(f"math/{name}" for name in MUSL_MATH),
)
#: The functions of those sources a user's call reaches. Their other external names are
#: musl's own (its ``vfprintf`` takes musl's ``FILE``) and get :data:`MUSL_PREFIX`.
MUSL_FUNCTIONS = frozenset(
    {
        "vsnprintf",
        "snprintf",
        "vsprintf",
        "sprintf",
        "vasprintf",
        "asprintf",
        "vsscanf",
        "sscanf",
        "strtod",
        "strtof",
        "strtold",
        "atof",
        "pow",  # math.c includes pow.c
        "scalbn",
        *(name for names in MUSL_MATH.values() for name in names),
    }
)
MUSL_PREFIX = LIBC_PREFIX + "musl_"
#: The bridge names the host's functions so; the build gives them back their names.
HOST_PREFIX = "__instrbudget_host_"
#: How musl's sources are compiled: as musl compiles them, against its own headers only.
MUSL_FLAGS = (
    "-O2",
    "-std=c99",
    "-fno-builtin",
    "-fno-strict-aliasing",
    "-fno-math-errno",  # __builtin_sqrt is the instruction, not a call of sqrt
    "-D_XOPEN_SOURCE=700",
    "-w",
    # Builtins, not calls of the host's libm (a program need not link it).
    "-Dcopysignl=__builtin_copysignl",
    "-Dfabsl=__builtin_fabsl",
)
#: musl's names of an architecture (``arch/<dir>``, ``include/<headers>-linux-musl``).
_MUSL_ARCH = {
    "x86_64": ("x86_64", "x86_64"),
    "aarch64": ("aarch64", "aarch64"),
    "riscv32": ("riscv32", "riscv32"),
    "riscv64": ("riscv64", "riscv64"),
    "i386": ("i386", "x86"),
    "i686": ("i386", "x86"),
    "arm": ("arm", "arm"),
    "powerpc64le": ("powerpc64", "powerpc64"),
    "s390x": ("s390x", "s390x"),
    "loongarch64": ("loongarch64", "loongarch64"),
}
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
    **{
        f"__isoc{c}_{name}": name
        for c in ("99", "23")
        for name in ("sscanf", "vsscanf", "scanf", "vscanf", "fscanf", "vfscanf")
    },
}
#: Defined for the routing of intrinsics only: no user call names it.
_INTERNAL = frozenset({"memset_byte"})
_DEFINED = re.compile(r"(?<!#define )\bLIBC\((\w+)\)")
_DEFINE_LINE = re.compile(r"^define [^@]*@([\w.$]+)\(", re.MULTILINE)
_INTERNAL_DEFINITION = re.compile(r"^define (?:internal|private) [^@]*@([\w.$]+)\(", re.MULTILINE)
_SHARED_DEFINITION = re.compile(
    r"^define (?!(?:internal|private|available_externally) )[^@]*@([\w.$]+)\(", re.MULTILINE
)
_ALIAS = re.compile(r"^@[\w.$]+ = [^\n]*\balias\b[^\n]*\n", re.MULTILINE)
_HIDDEN_DECLARATION = re.compile(r"^(declare [^@\n]*?)hidden ", re.MULTILINE)
#: A module's external definitions: functions, variables, aliases.
_EXTERNAL_DEFINITION = re.compile(
    r"^(?:define (?!(?:internal|private) )[^@]*@([\w.$]+)\(|@([\w.$]+) = (?!(?:internal|private) )(?!external ))",
    re.MULTILINE,
)
_INTRINSIC = re.compile(
    r"^(?P<indent>\s*)(?P<tail_kind>(?:tail |musttail |notail )?)call void @llvm\.(?P<op>memcpy|memmove|memset)\."
    r"p0(?:\.p0)?\.i(?P<bits>\d+)\((?P<args>.*)\)(?P<attrs>(?: #\d+)?)(?P<tail>(?:, !.*)?)$",
    re.MULTILINE,
)

#: The longest constant length of each intrinsic that code generation expands into moves and
#: stores, for x86-64 and riscv32 alike (measured with the zig toolchain at -O2 and its default
#: CPUs; -Os or AVX move the line, this one stays so that counts do not): a call up to it
#: costs one instruction, as the few moves it becomes; a longer one is a call of the library at
#: run time, so it calls the counted copy, as a run-time length does.
INLINED_LENGTH = {"memcpy": 128, "memmove": 128, "memset": 256}

#: Attachments a memory intrinsic may carry and a call may not (``, !DIAssignID !12``, and the
#: ``!tbaa.struct`` layout its copy had).
_INTRINSIC_ONLY_METADATA = re.compile(r", !(?:DIAssignID|tbaa\.struct) !\d+")

#: A name a module refers to (a call, a load, a global's initialiser).
_REFERENCE = re.compile(r"@([\w.$]+)")
#: A call of a math intrinsic on one ``double`` or ``float`` (vector forms stay as they are).
_MATH_INTRINSIC = re.compile(
    r"(?P<head>\bcall [^@\n]*)@llvm\.(?P<op>sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|exp|exp2|exp10"
    r"|log|log2|log10|pow)\.(?P<type>f64|f32)\("
)
#: ``frem`` (what clang makes of ``fmod`` without errno): code generation calls the host's fmod.
_FREM = re.compile(
    r"^(?P<head>\s*%[\w.]+ = )frem (?P<flags>(?:[a-z]+ )*)(?P<type>double|float) (?P<a>[^,\n]+), (?P<b>[^,\n]+?)"
    r"(?P<tail>(?:, !.*)?)$",
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
    # ``#define LIBC(name)`` (the prelude's, the bridge's) defines nothing: _DEFINED skips it.
    own = {name for path in (*_files(), *MUSL_OWN) for name in _DEFINED.findall(path.read_text())}
    return frozenset(own | MUSL_FUNCTIONS) - _INTERNAL


@functools.cache
def aliases() -> dict[str, str]:
    """Symbol a user's code may call -> the counted function."""
    out = {name: PREFIX + name for name in functions()}
    out.update({alias: PREFIX + name for alias, name in HEADER_ALIASES.items() if name in functions()})
    return out


@functools.cache
def routing_key() -> str:
    """What :func:`point_at_libc` makes of a unit depends on: the names it points at the
    library, and this module's code. Part of the key of everything it edited."""
    from cbuild.build.cache import digest, file_digest  # the LLVM worker imports this module: keep it light

    return digest(file_digest(Path(__file__)), *(f"{name}={target}" for name, target in sorted(aliases().items())))


def libc_ir(toolchain: Toolchain, cache: Cache) -> tuple[Path, ...]:
    """The library's IR for the toolchain's target, one file per module (built once, cached
    by content): the project's own functions, then musl's."""
    return (own_libc_ir(toolchain, cache), *musl_ir(toolchain, cache))


def own_libc_ir(toolchain: Toolchain, cache: Cache) -> Path:
    """The IR of the project's own functions (``cbuild/libc/*.c``) for the toolchain's target."""
    from cbuild.build.compile import compile_own  # the LLVM worker imports this module: keep it light

    flags = ["-S", "-emit-llvm", "-gline-tables-only", "-fPIC", *FLAGS]
    return compile_own(toolchain, cache, source(), what="the counted C library", stem="libc", flags=flags, suffix=".ll")


def musl_flags(triple: str) -> list[str]:
    """Flags that compile musl's sources for ``triple`` against its own headers."""
    arch = triple.split("-")[0]
    if arch not in _MUSL_ARCH:
        raise CBuildError(
            f"the counted C library has no musl headers for {arch} (known: {', '.join(sorted(_MUSL_ARCH))}); "
            "set count_libraries = false"
        )
    directory, headers = _MUSL_ARCH[arch]
    lib = zig_lib() / "libc"
    musl = lib / "musl"
    includes = [
        musl / "arch" / directory,
        musl / "arch" / "generic",
        musl / "src" / "include",
        musl / "src" / "internal",
        musl / "src" / "math",  # math.c includes pow.c
        lib / "include" / f"{headers}-linux-musl",
        lib / "include" / "generic-musl",
    ]
    # Named alike wherever installed: zig's musl as musl/..., the bridge as the counted library's files.
    paths = [f"-ffile-prefix-map={musl}=musl", f"-ffile-prefix-map={LIBC_DIR}=cbuild/libc", "-fdebug-compilation-dir=."]
    return ["-nostdinc", *(f"-I{path}" for path in includes), *paths, *MUSL_FLAGS]


def musl_ir(toolchain: Toolchain, cache: Cache, *, flags: Sequence[str] = ()) -> tuple[Path, ...]:
    """musl's part of the library (:data:`MUSL_SOURCES` and the bridge) as IR, one file per
    source, with its names made the library's (:func:`musl_names`); ``flags`` add to the
    compiler's (a target's code generation)."""
    from cbuild.build.cache import atomic_write

    sources = _musl_sources()
    flags = [
        "-target",
        toolchain.triple,
        "-S",
        "-emit-llvm",
        "-gline-tables-only",
        "-fPIC",
        *musl_flags(toolchain.triple),
        *flags,
    ]
    key = _musl_key(toolchain.identity, tuple(flags))
    suffixes = [f".{path.stem}.ll" for path in sources]

    def make(files: list[Path]) -> None:
        texts = []
        with tempfile.TemporaryDirectory(prefix="instrbudget-musl-") as tmp:
            for path in sources:
                out = Path(tmp) / f"{path.stem}.ll"
                proc = subprocess.run(
                    [*toolchain.cc, *flags, str(path), "-o", str(out)], capture_output=True, text=True, check=False
                )
                if proc.returncode != 0:
                    raise LinkError(f"building the counted C library's musl part ({path.name}) failed:\n{proc.stderr}")
                texts.append(out.read_text())
        for file, text in zip(files, musl_names(texts, size_bits=size_t_bits(toolchain.triple)), strict=True):
            atomic_write(file, text.encode())

    return tuple(cache.entry("rt", key, suffixes, make, name="the counted C library's formatting and math (musl)"))


def _musl_sources() -> list[Path]:
    musl = zig_lib() / "libc" / "musl" / "src"
    return [*(musl / f"{name}.c" for name in MUSL_SOURCES), *MUSL_OWN]


@functools.cache
def _musl_key(identity: str, flags: tuple[str, ...]) -> str:
    """The musl part's cache key: the toolchain, the sources' contents, the flags, and how the
    names are routed (:func:`routing_key`). Once per process: its sources do not change under it."""
    from cbuild.build.cache import digest, file_digest

    # Where the wheel and this package are installed is not part of it: another venv or a moved
    # checkout hits the cache.
    lib, own = str(zig_lib()), str(LIBC_DIR)
    portable = (f.replace(own, "<libc>").replace(lib, "<zig>") for f in flags)
    return digest(identity, routing_key(), *map(file_digest, _musl_sources()), *portable)


def musl_names(texts: Sequence[str], *, size_bits: int) -> list[str]:
    """musl's modules with the library's names: its functions get :data:`PREFIX` (musl's
    ``vfprintf`` and others that take its own ``FILE`` get :data:`MUSL_PREFIX`, apart from
    the library's functions of the same name), the bridge's host names their own, and calls
    of functions the library counts reach the counted ones."""
    counted = functions()
    defined = {a or b for text in texts for a, b in _EXTERNAL_DEFINITION.findall(text)}
    table = {
        name: (PREFIX if name in MUSL_FUNCTIONS or name not in counted else MUSL_PREFIX) + name
        for name in defined
        if not name.startswith(PREFIX)
    }
    table["___errno_location"] = "__errno_location"  # musl's internal name of errno's location
    out = []
    for text in texts:
        local = {name: PREFIX + name for name in _INTERNAL_DEFINITION.findall(text) if not name.startswith(PREFIX)}
        text = _renamed(text, {**table, **local})
        text = re.sub(rf"@{HOST_PREFIX}([\w.$]+)", r"@\1", text)
        # musl declares its internals hidden; what is still declared is the host's.
        text = _HIDDEN_DECLARATION.sub(r"\1", text)
        # Its other names of a function (``__isoc99_vsscanf``): :data:`HEADER_ALIASES` has them.
        text = _ALIAS.sub("", text)
        out.append(point_at_libc(text, own=set(), size_bits=size_bits))
    return out


def _renamed(text: str, table: dict[str, str]) -> str:
    names = "|".join(re.escape(n) for n in sorted(table, key=len, reverse=True))
    return re.sub(rf"@({names})(?![\w.$])", lambda m: "@" + table[m.group(1)], text)


def size_t_bits(triple: str) -> int:
    """The width of ``size_t`` on ``triple``."""
    return 32 if triple.startswith(("riscv32", "i386", "i686", "wasm32", "arm-", "armv", "thumb")) else 64


def defined_names(texts: Iterable[str]) -> set[str]:
    """Functions the units define for the whole build (they keep their own, not the counted ones):
    not a ``static`` one, which serves its unit alone (the others' calls still reach the library),
    nor a C99 ``inline`` one that only stands for a definition elsewhere (``available_externally``)."""
    return {name for text in texts for name in _SHARED_DEFINITION.findall(text)}


def point_at_libc(text: str, *, own: set[str], size_bits: int) -> str:
    """``text`` (one unit's IR) calling the counted library: calls and references of the
    functions it provides renamed, run-time-length ``llvm.mem*`` calls routed to it.

    ``own`` are the functions the build defines itself; ``size_bits`` is the width of
    ``size_t`` (intrinsics with another length type stay as they are).
    """
    table = {name: target for name, target in aliases().items() if name not in own}
    if table:
        text = _renamed(text, table)
        # A unit may now declare a counted function twice (its own name and an alias).
        text = _dedupe_declarations(text)
    routed: set[str] = set()
    names_used: list[str] = []

    def route(m: re.Match[str]) -> str:
        args = split_top(m.group("args"), ",")
        if int(m.group("bits")) != size_bits or len(args) != 4:
            return m.group(0)
        if args[3].split()[-1] != "false":
            return m.group(0)  # volatile: its stores must stay as they are, never a library call's
        length = args[2].split()[-1]
        op = m.group("op")
        if op in own:
            return m.group(0)  # the code generator calls the build's own definition, as a static link would
        if re.fullmatch(r"-?\d+", length) and int(length) & ((1 << size_bits) - 1) <= INLINED_LENGTH[op]:
            return m.group(0)  # a few moves: code generation expands it
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
        # Metadata only a memory intrinsic may carry (assignment tracking's !DIAssignID: on a call,
        # LLVM drops the whole module's debug info as invalid) stays with the intrinsic.
        tail = _INTRINSIC_ONLY_METADATA.sub("", m.group("tail"))
        return f"{m.group('indent')}{result} = {m.group('tail_kind')}{call}{tail}"

    text = _INTRINSIC.sub(route, text)
    text = _route_math_intrinsics(text)
    for target in sorted(routed):
        if not re.search(rf"^(?:declare|define) [^@]*@{target}\(", text, re.MULTILINE):
            size = f"i{size_bits}"
            params = f"ptr, i8 zeroext, {size}" if target.endswith("memset_byte") else f"ptr, ptr, {size}"
            text += f"\ndeclare ptr @{target}({params})\n"
    return text


@functools.cache
def _module_names(path: str) -> tuple[frozenset[str], frozenset[str], bool]:
    """A library IR file's external definitions, the names it refers to, and whether it must
    be linked whatever is used (it has constructors). Files are named by content: once each."""
    text = Path(path).read_text()
    defined = frozenset(a or b for a, b in _EXTERNAL_DEFINITION.findall(text))
    return defined, frozenset(_REFERENCE.findall(text)) - defined, "@llvm.global_ctors" in text


def needed_modules(texts: Iterable[str], library: Sequence[str]) -> list[str]:
    """The files of ``library`` (IR files of the counted library) that the units ``texts``
    reach, directly or through one another, in their order: the others define nothing the
    build calls, and linking them would only be dropped again."""
    wanted = {name for text in texts for name in _REFERENCE.findall(text)}
    chosen: set[str] = set()
    grew = True
    while grew:
        grew = False
        for path in library:
            if path in chosen:
                continue
            defined, refers, always = _module_names(path)
            if always or defined & wanted:
                chosen.add(path)
                wanted |= refers
                grew = True
    return [path for path in library if path in chosen]


def _route_math_intrinsics(text: str) -> str:
    """Calls of ``llvm.sin.f64`` and its kin, and ``frem`` (what clang makes of ``sin`` and
    ``fmod`` without errno, the default for musl targets, or of ``__builtin_sin``) call the
    counted functions: code generation would otherwise make them calls of the host's libm."""
    counted = functions()
    declared: dict[str, str] = {}

    def route(m: re.Match[str]) -> str:
        name = m.group("op") + ("f" if m.group("type") == "f32" else "")
        if name not in counted:
            return m.group(0)
        ctype = "float" if m.group("type") == "f32" else "double"
        params = ", ".join([ctype] * (2 if m.group("op") in ("pow", "atan2") else 1))
        declared[name] = f"declare {ctype} @{PREFIX}{name}({params})"
        return f"{m.group('head')}@{PREFIX}{name}("

    def remainder(m: re.Match[str]) -> str:
        ctype = m.group("type")
        name = "fmod" if ctype == "double" else "fmodf"
        if name not in counted:
            return m.group(0)
        declared[name] = f"declare {ctype} @{PREFIX}{name}({ctype}, {ctype})"
        args = f"{ctype} {m.group('a')}, {ctype} {m.group('b')}"
        return f"{m.group('head')}call {m.group('flags')}{ctype} @{PREFIX}{name}({args}){m.group('tail')}"

    text = _MATH_INTRINSIC.sub(route, text)
    text = _FREM.sub(remainder, text)
    for name, declaration in sorted(declared.items()):
        if not re.search(rf"^(?:declare|define) [^@]*@{PREFIX}{name}\(", text, re.MULTILINE):
            text += f"\n{declaration}\n"
    return text


def _dedupe_declarations(text: str) -> str:
    """``text`` with one declaration per function, and none of a function it defines (a
    module of the library calling another of its functions by the user's name)."""
    seen: set[str] = set(_DEFINE_LINE.findall(text))
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
