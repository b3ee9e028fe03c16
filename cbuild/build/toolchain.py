"""The clang shipped in the ``ziglang`` wheel, llvmlite, and their version contract."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from cbuild.build import zig_caches
from cbuild.errors import ToolchainError

#: Bumped whenever the engine changes in a way that changes built artifacts or counts (3: static
#: constructors run, in .init_array, where they had been left in .ctors; 4: a build's own memcpy,
#: memset or strlen is the one its code and copies call, and CPUID with 64-bit operands is answered
#: by the canonical CPU).
PIPELINE_VERSION = "4"


@dataclass(frozen=True)
class Toolchain:
    """A clang driver plus the llvmlite that reads its IR and generates code."""

    #: Command prefix that runs the C compiler driver (``zig cc`` or a user's clang).
    cc: tuple[str, ...]
    #: Command prefix for C++ (``zig c++`` or clang++).
    cxx: tuple[str, ...]
    #: ``clang version X.Y.Z`` as the driver prints it.
    clang_version: str
    #: LLVM version llvmlite was built against, ``X.Y.Z``.
    llvm_version: str
    #: Target triple passed to clang and to llvmlite's code generator.
    triple: str
    #: Where the driver keeps system headers; headers below it are covered by the version.
    system_root: str | None
    #: True when the driver is ``zig cc`` (it links libc++ itself, with a slow first build).
    is_zig: bool
    #: Where the driver comes from (wheel version and path, or the clang's path): in cache keys.
    origin: str

    @property
    def fingerprint(self) -> dict[str, str]:
        """What decides the counts besides the user's sources and flags."""
        return {
            "clang": self.clang_version,
            "llvm": self.llvm_version,
            "target": self.triple,
            "pipeline": PIPELINE_VERSION,
        }

    @property
    def label(self) -> str:
        """The toolchain as cache entries record it (``cache info`` counts entries by it):
        ``clang 22.1.8 (the ziglang wheel 0.17.1)``."""
        return f"clang {self.clang_version} ({self.origin.split(' (')[0]})"

    @property
    def identity(self) -> str:
        """Everything that can change built output: the fingerprint plus the driver's origin."""
        return f"{self.fingerprint_text}; {self.origin}"

    @property
    def fingerprint_text(self) -> str:
        """One-line rendering of :attr:`fingerprint`, for headers and cache keys."""
        fp = self.fingerprint
        return f"clang {fp['clang']}, llvm {fp['llvm']}, {fp['target']}, pipeline {fp['pipeline']}"

    @property
    def summary(self) -> str:
        """The fingerprint as a header shows it: ``clang 22.1.8, llvm 22.1.0, x86_64-linux-gnu,
        engine v2`` (:attr:`fingerprint_text`, which cache keys hold, says ``pipeline 2``, which
        reads like the cost model of that name)."""
        fp = self.fingerprint
        return f"clang {fp['clang']}, llvm {fp['llvm']}, {fp['target']}, engine v{fp['pipeline']}"


def host_target() -> str:
    """The target triple for this machine, without the kernel or libc versions.

    An explicit triple keeps the IR (and so the counts) the same on every machine
    of one architecture and OS, whatever their kernel version.
    """
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    system = platform.system()
    if system == "Linux":
        return f"{arch}-linux-gnu"
    # Programs are waited for through pidfd_open, libraries loaded from memfd_create's files, and
    # the counted C library's heap and main's stack mapped at fixed addresses: Linux's.
    raise ToolchainError(f"pytest-instrbudget runs on Linux hosts; this is {system} ({machine})")


def zig_lib() -> Path:
    """The ziglang wheel's ``lib`` directory: the headers and sources of its libc and libc++."""
    import ziglang  # a dependency of the project

    return Path(ziglang.__file__).resolve().parent / "lib"


def _llvmlite_version() -> str:
    try:
        from llvmlite import binding
    except ImportError as exc:  # pragma: no cover - llvmlite is a dependency
        raise ToolchainError(f"llvmlite cannot be imported: {exc}; run `pip install llvmlite`") from exc
    return ".".join(str(part) for part in binding.llvm_version_info)


def zig_binary() -> str:
    """The ziglang wheel's zig."""
    try:
        import ziglang
    except ImportError as exc:
        raise ToolchainError(
            "the ziglang wheel is not installed; run `pip install pytest-instrbudget` "
            "or `pip install ziglang`, or set `clang` in [tool.instrbudget]"
        ) from exc
    zig = Path(ziglang.__file__).parent / ("zig.exe" if os.name == "nt" else "zig")
    if not zig.exists():
        raise ToolchainError(f"the ziglang wheel has no zig binary at {zig}")
    return str(zig)


#: The environment variable naming zig's global cache.
ZIG_CACHE_VARIABLE = "ZIG_GLOBAL_CACHE_DIR"


def own_zig_cache(zig: str) -> str | None:
    """The global cache of its own a zig installation gets, within zig's default one, where the user
    chose none (None where zig finds no default either, and says so: :func:`zig_cache_problem`). Two
    installations of the same ziglang wheel (two virtual environments, tox's) sharing one rebuilt
    each other's libc++ whenever they took turns, about 90 s each time."""
    if ZIG_CACHE_VARIABLE in os.environ:
        return os.environ[ZIG_CACHE_VARIABLE]
    home = os.environ.get("HOME")
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(home, ".cache") if home else "")
    if not base:
        return None
    where = hashlib.sha256(str(Path(zig).resolve().parent).encode()).hexdigest()[:12]
    return os.path.join(base, "zig", f"{zig_caches.PREFIX}{where}")


_ZIG_CACHE_ERRORS = (
    "unable to resolve zig cache directory",
    "unable to open global cache directory",
    "failed to create output directory",
)


def zig_cache_problem(output: str) -> str | None:
    """A message for zig failing to find or write its cache directory, if ``output`` shows that."""
    if not any(marker in output for marker in _ZIG_CACHE_ERRORS):
        return None
    if "HOME" not in os.environ and "ZIG_GLOBAL_CACHE_DIR" not in os.environ:
        where = "HOME is not set"
    else:
        where = f"zig said: {output.strip().splitlines()[0]}"
    return (
        f"zig (the ziglang wheel's clang) needs a writable cache directory and has none ({where}); "
        "set HOME to a writable directory, or ZIG_GLOBAL_CACHE_DIR to one"
    )


def _clang_version(cmd: tuple[str, ...]) -> str:
    try:
        out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, check=False, timeout=60)
    except OSError as exc:
        raise ToolchainError(f"cannot run {' '.join(cmd)}: {exc}") from exc
    problem = zig_cache_problem(out.stderr)
    if problem is not None:
        raise ToolchainError(problem)
    match = re.search(r"clang version (\d+\.\d+\.\d+)", out.stdout + out.stderr)
    if not match:
        raise ToolchainError(f"`{' '.join(cmd)} --version` did not print a clang version:\n{out.stdout}{out.stderr}")
    return match.group(1)


@functools.cache
def _zig_clang_version(zig: str, wheel_version: str) -> str:
    return _clang_version((zig, "cc"))


def find_toolchain(clang: str | None = None) -> Toolchain:
    """Locate the compiler and check that its LLVM major version equals llvmlite's.

    ``clang`` may name another clang driver (a path or a command on ``PATH``); by
    default the clang inside the ``ziglang`` wheel is used.
    """
    llvm_version = _llvmlite_version()
    triple = host_target()
    if clang is None:
        zig = zig_binary()
        cache = own_zig_cache(zig)
        if cache is not None:  # for every zig this process runs
            if ZIG_CACHE_VARIABLE not in os.environ:  # ours, not the user's: it names its installation
                zig_caches.record(cache, Path(zig).resolve().parent)
            os.environ[ZIG_CACHE_VARIABLE] = cache
        version = _zig_clang_version(zig, metadata.version("ziglang"))
        cc: tuple[str, ...] = (zig, "cc")
        cxx: tuple[str, ...] = (zig, "c++")
        system_root: str | None = str(Path(zig).parent / "lib")
        is_zig = True
        where = f"the ziglang wheel {metadata.version('ziglang')}"
        origin = where  # the wheel's version, not where it is installed: another venv hits the cache
    else:
        resolved = shutil.which(clang)
        if resolved is None:
            raise ToolchainError(f"the clang given (clang in [tool.instrbudget], or --clang) was not found: {clang}")
        version = _cached_clang_version(resolved)
        cc = (resolved,)
        cxx_name = Path(resolved).name.replace("clang", "clang++", 1)
        cxx_path = Path(resolved).with_name(cxx_name)
        cxx = (str(cxx_path),) if cxx_path.exists() else (resolved, "--driver-mode=g++")
        system_root = None
        is_zig = False
        where = resolved
        stat = Path(resolved).resolve().stat()
        origin = f"{Path(resolved).resolve()} ({stat.st_size} bytes, mtime {stat.st_mtime_ns})"
    if version.split(".")[0] != llvm_version.split(".")[0]:
        raise ToolchainError(
            f"clang {version} (from {where}) and llvmlite's LLVM {llvm_version} differ in their "
            f"major version, so llvmlite cannot read clang's IR. Install matching versions: "
            f"`pip install 'ziglang>=0.17,<0.18' 'llvmlite>=0.50,<0.51'` (clang 22 / LLVM 22), "
            f"or give a clang {llvm_version.split('.')[0]} (`clang` in [tool.instrbudget], or --clang)."
        )
    return Toolchain(
        cc=cc,
        cxx=cxx,
        clang_version=version,
        llvm_version=llvm_version,
        triple=triple,
        system_root=system_root,
        is_zig=is_zig,
        origin=origin,
    )


@functools.cache
def _cached_clang_version(path: str) -> str:
    return _clang_version((path,))
