"""C and C++ sources to LLVM IR with clang, cached in direct mode; and the engine's own C.

clang's ``-H`` output (one line per opened header, in the same invocation as the
compile) gives the headers a translation unit read. The cache keeps, per source
and flags, a manifest of those headers with their hashes; a later build whose
source and headers all still hash the same reuses the IR without running clang.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from cbuild.build.cache import Cache, atomic_write, digest, file_digest
from cbuild.build.options import BuildOptions, language_of
from cbuild.build.portable import PathMap
from cbuild.build.sources import Source
from cbuild.build.toolchain import Toolchain, zig_cache_problem
from cbuild.errors import CompileError, LinkError, ToolchainError

_HEADER_LINE = re.compile(r"^\.+ (.+)$")
_GUARD_NOTE = "Multiple include guards may be useful for:"


@dataclass(frozen=True)
class CompiledUnit:
    """One translation unit's IR in the cache."""

    source: Path
    ir_path: Path
    #: Identity of the IR: changes whenever the source, a header or a flag does.
    key: str
    #: clang's warnings for the unit (kept with its IR, so a build from the cache has them too).
    warnings: str = ""


#: Headers shipped with the plugin (instrbudget.h), on the include path of every build.
INCLUDE_DIR = Path(__file__).parent.parent / "include"


def compile_command(tc: Toolchain, source: Source | Path, options: BuildOptions, out: Path) -> list[str]:
    """The clang command that turns ``source`` into textual IR at ``out``: the source's own flags
    first, then the build's (whose defines and ``-std=`` so win)."""
    unit = Source.of(source)
    lang = language_of(unit.path)
    driver = tc.cxx if lang == "c++" else tc.cc
    flags = options.cxxflags if lang == "c++" else options.cflags
    return [
        *driver,
        "-target",
        tc.triple,
        "-S",
        "-emit-llvm",
        f"-O{options.opt_level}",
        "-g",  # full debug info: the C types of the exported functions (cbuild.build.signatures)
        "-fno-verbose-asm",
        "-H",
        "-fdiagnostics-color=never",
        "-Wno-unused-command-line-argument",
        *unit.flags,
        *(f"-I{d}" for d in options.include_dirs),
        f"-I{INCLUDE_DIR}",  # instrbudget.h, the region markers
        "-DINSTRBUDGET=1",
        "-UNDEBUG" if options.assertions else "-DNDEBUG",
        *(f"-D{d}" for d in options.defines),
        # Debug information and __FILE__ name the project's files relative to it.
        *([f"-ffile-prefix-map={options.root}=."] if options.root is not None else []),
        *(["-fdebug-compilation-dir=."] if options.root is not None and unit.cwd is None else []),
        *flags,
        "-o",
        str(out),
        str(unit.path),
    ]


def path_map(options: BuildOptions) -> PathMap:
    """How keys of ``options``' builds name the project's and the engine's files."""
    return PathMap(options.root, INCLUDE_DIR)


def command_key(tc: Toolchain, cmd: Sequence[str], paths: PathMap) -> str:
    """The key of a clang command: the driver by its part (the toolchain's identity says which
    one), paths as :class:`PathMap` writes them."""
    cxx = list(cmd[: len(tc.cxx)]) == list(tc.cxx)
    driver = tc.cxx if cxx else tc.cc
    return digest(tc.identity, "c++" if cxx else "cc", *paths.args(cmd[len(driver) :]))


def _split_stderr(stderr: str, system_root: str | None, cwd: Path | None = None) -> tuple[list[Path], str]:
    """Headers from ``-H`` lines (relative ones taken from ``cwd``), and everything else (clang's diagnostics)."""
    headers: list[Path] = []
    diagnostics: list[str] = []
    in_guard_note = False
    for line in stderr.splitlines():
        m = _HEADER_LINE.match(line)
        if m:
            headers.append(cwd / m.group(1) if cwd is not None else Path(m.group(1)))
            continue
        if line.startswith(_GUARD_NOTE):
            in_guard_note = True
            continue
        if in_guard_note and os.path.exists(line):
            continue
        in_guard_note = False
        if line.startswith("zig: warning: argument unused"):
            continue
        diagnostics.append(line)
    user_headers = sorted({h.resolve() for h in headers if not (system_root and str(h).startswith(system_root))})
    return user_headers, "\n".join(diagnostics)


def compile_unit(tc: Toolchain, cache: Cache, source: Source | Path, options: BuildOptions) -> CompiledUnit:
    """Compile ``source`` (with its own flags, in its own directory) to IR, or find it in the cache."""
    unit = Source.of(source)
    path = unit.path.resolve()
    unit = replace(unit, path=path)
    if not path.is_file():
        raise CompileError(str(path), f"error: source file not found: {path}")
    src_hash = file_digest(path)
    if language_of(path) == "ir":
        # Textual IR goes straight to the instrumenter; its bytes are its identity.
        return CompiledUnit(path, path, digest("ir", str(path), src_hash))
    # The whole command (the engine's own flags too), with a fixed name for the output.
    paths = path_map(options)
    cmd_key = command_key(tc, compile_command(tc, unit, options, Path("unit.ll")), paths)
    if unit.cwd is not None:
        # The directory clang runs in is in the IR (the debug info's compilation directory).
        cmd_key = digest(cmd_key, f"cwd={paths.text(str(unit.cwd))}")
        if not unit.cwd.is_dir():
            raise CompileError(str(path), f"error: the directory to compile it in does not exist: {unit.cwd}")
    manifest_path = cache.path("tu", cmd_key, ".json")
    hit = _lookup(cache, manifest_path, src_hash, path.name, paths)
    if hit is not None:
        cache.touch(manifest_path)
        cache.count("tu", hit=True)
        return CompiledUnit(path, *hit)
    cache.count("tu", hit=False)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="instrbudget-cc-") as tmp:
        out = Path(tmp) / "unit.ll"
        cmd = compile_command(tc, unit, options, out)
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=unit.cwd)
        headers, diagnostics = _split_stderr(proc.stderr, tc.system_root, unit.cwd)
        if proc.returncode != 0 or not out.exists():
            problem = zig_cache_problem(proc.stderr)
            if problem is not None:
                raise ToolchainError(problem)
            raise CompileError(str(path), diagnostics or f"clang exited with status {proc.returncode}")
        ir = out.read_bytes()
    deps = {paths.text(str(h)): file_digest(h) for h in headers if h.is_file()}
    ir_key = digest(cmd_key, src_hash, *(f"{p}={h}" for p, h in sorted(deps.items())))
    edited = file_digest(path) != src_hash or any(paths.path(h).stat().st_mtime >= started - 1 for h in deps)
    if edited:
        # A file changed while clang read it: use this IR once, remember nothing.
        ir_key = digest(ir_key, "unstable", str(time.time_ns()))
        ir_path = cache.path("ir", ir_key, ".ll")
        atomic_write(ir_path, ir)
        return CompiledUnit(path, ir_path, ir_key, diagnostics)
    ir_path = cache.path("ir", ir_key, ".ll")
    atomic_write(ir_path, ir)
    cache.seal("ir", ir_key, [ir_path])  # the IR, then its seal, then the manifest that finds them
    # Paths in the warnings as in the key: a checkout elsewhere sharing the cache names its own files.
    manifest = {"source_sha256": src_hash, "deps": deps, "ir": ir_key, "warnings": paths.text(diagnostics)}
    if cache.label:
        manifest["toolchain"] = cache.label
    atomic_write(manifest_path, json.dumps(manifest, sort_keys=True).encode())
    return CompiledUnit(path, ir_path, ir_key, diagnostics)


def locate_inline_asm(tc: Toolchain, sources: Sequence[Source | Path], options: BuildOptions) -> CompileError | None:
    """Clang's diagnostic, with file and line, for inline assembly the target's assembler rejects.

    Code generation from IR can only say ``<inline asm>:1:2``; compiled from its source to an
    object, clang names the statement's line. Returns the first source's error, or None if
    every source compiles."""
    with tempfile.TemporaryDirectory(prefix="instrbudget-asm-") as tmp:
        for source in sources:
            unit = Source.of(source)
            if language_of(unit.path) == "ir":
                continue
            cmd = [
                arg
                for arg in compile_command(tc, unit, options, Path(tmp) / "unit.o")
                if arg not in ("-emit-llvm", "-H")
            ]
            cmd[cmd.index("-S")] = "-c"
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=unit.cwd)
            if proc.returncode != 0:
                _, diagnostics = _split_stderr(proc.stderr, tc.system_root, unit.cwd)
                return CompileError(str(unit.path), diagnostics or f"clang exited with status {proc.returncode}")
    return None


def _lookup(
    cache: Cache, manifest_path: Path, src_hash: str, name: str, paths: PathMap
) -> tuple[Path, str, str] | None:
    try:
        manifest = json.loads(manifest_path.read_text())
        ir_key = manifest["ir"]
        diagnostics = manifest.get("warnings", "")
        if not isinstance(ir_key, str) or not isinstance(diagnostics, str):
            raise TypeError
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if manifest.get("source_sha256") != src_hash:
        return None
    for dep, expected in manifest.get("deps", {}).items():
        try:
            if file_digest(paths.path(dep)) != expected:
                return None
        except OSError:
            return None
    ir_path = cache.path("ir", ir_key, ".ll")
    if not cache.check("ir", ir_key, [ir_path], name=f"the IR of {name}"):
        return None
    return ir_path, ir_key, paths.real(diagnostics)


def compile_own(
    tc: Toolchain,
    cache: Cache,
    code: str,
    *,
    what: str,
    stem: str,
    flags: Sequence[str],
    suffix: str,
    mode: int = 0o644,
    cxx: bool = False,
) -> Path:
    """Build C source of the engine's own (the runtime, the models' code, the host guard) with
    ``flags`` into one cache entry ending in ``suffix``; ``what`` names it in messages.
    With ``cxx`` the code is C++."""
    # Its debug info names files as the code's #line directives do, not under the current directory.
    flags = [*flags, "-fdebug-compilation-dir=."]
    key = digest(tc.identity, code, *flags, *(["c++"] if cxx else []))

    def make(files: list[Path]) -> None:
        with tempfile.TemporaryDirectory(prefix="instrbudget-rt-") as tmp:
            src, out = Path(tmp) / f"{stem}.{'cpp' if cxx else 'c'}", Path(tmp) / f"{stem}{suffix}"
            src.write_text(code)
            cmd = [*(tc.cxx if cxx else tc.cc), "-target", tc.triple, *flags, str(src), "-o", str(out)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise LinkError(f"building {what} failed:\n{proc.stderr}")
            atomic_write(files[0], out.read_bytes(), mode=mode)

    (path,) = cache.entry("rt", key, [suffix], make, name=what)
    return path
