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
from dataclasses import dataclass
from pathlib import Path

from cbuild.cache import Cache, atomic_write, digest, file_digest
from cbuild.errors import CompileError, LinkError, ToolchainError
from cbuild.options import BuildOptions, language_of
from cbuild.toolchain import Toolchain, zig_cache_problem

_HEADER_LINE = re.compile(r"^\.+ (.+)$")
_GUARD_NOTE = "Multiple include guards may be useful for:"


@dataclass(frozen=True)
class CompiledUnit:
    """One translation unit's IR in the cache."""

    source: Path
    ir_path: Path
    #: Identity of the IR: changes whenever the source, a header or a flag does.
    key: str


#: Headers shipped with the plugin (instrbudget.h), on the include path of every build.
INCLUDE_DIR = Path(__file__).parent / "include"


def compile_command(tc: Toolchain, source: Path, options: BuildOptions, out: Path) -> list[str]:
    """The clang command that turns ``source`` into textual IR at ``out``."""
    lang = language_of(source)
    driver = tc.cxx if lang == "c++" else tc.cc
    flags = options.cxxflags if lang == "c++" else options.cflags
    return [
        *driver,
        "-target",
        tc.triple,
        "-S",
        "-emit-llvm",
        f"-O{options.opt_level}",
        "-g",  # full debug info: the C types of the exported functions (cbuild.signatures)
        "-fno-verbose-asm",
        "-H",
        "-fdiagnostics-color=never",
        "-Wno-unused-command-line-argument",
        *(f"-I{d}" for d in options.include_dirs),
        f"-I{INCLUDE_DIR}",  # instrbudget.h, the region markers
        "-DINSTRBUDGET=1",
        *(f"-D{d}" for d in options.defines),
        *flags,
        "-o",
        str(out),
        str(source),
    ]


def _split_stderr(stderr: str, system_root: str | None) -> tuple[list[Path], str]:
    """Headers from ``-H`` lines, and everything else (clang's diagnostics)."""
    headers: list[Path] = []
    diagnostics: list[str] = []
    in_guard_note = False
    for line in stderr.splitlines():
        m = _HEADER_LINE.match(line)
        if m:
            headers.append(Path(m.group(1)))
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


def compile_unit(tc: Toolchain, cache: Cache, source: Path, options: BuildOptions) -> CompiledUnit:
    """Compile ``source`` to IR, or find it in the cache."""
    source = source.resolve()
    if not source.is_file():
        raise CompileError(str(source), f"error: source file not found: {source}")
    src_hash = file_digest(source)
    if language_of(source) == "ir":
        # Textual IR goes straight to the instrumenter; its bytes are its identity.
        return CompiledUnit(source, source, digest("ir", str(source), src_hash))
    # The whole command (the engine's own flags too), with a fixed name for the output.
    cmd_key = digest(tc.identity, *compile_command(tc, source, options, Path("unit.ll")))
    manifest_path = cache.path("tu", cmd_key, ".json")
    hit = _lookup(cache, manifest_path, src_hash, source.name)
    if hit is not None:
        return CompiledUnit(source, *hit)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="instrbudget-cc-") as tmp:
        out = Path(tmp) / "unit.ll"
        proc = subprocess.run(compile_command(tc, source, options, out), capture_output=True, text=True, check=False)
        headers, diagnostics = _split_stderr(proc.stderr, tc.system_root)
        if proc.returncode != 0 or not out.exists():
            problem = zig_cache_problem(proc.stderr)
            if problem is not None:
                raise ToolchainError(problem)
            raise CompileError(str(source), diagnostics or f"clang exited with status {proc.returncode}")
        ir = out.read_bytes()
    deps = {str(h): file_digest(h) for h in headers if h.is_file()}
    ir_key = digest(cmd_key, src_hash, *(f"{p}={h}" for p, h in sorted(deps.items())))
    edited = file_digest(source) != src_hash or any(Path(h).stat().st_mtime >= started - 1 for h in deps)
    if edited:
        # A file changed while clang read it: use this IR once, remember nothing.
        ir_key = digest(ir_key, "unstable", str(time.time_ns()))
        ir_path = cache.path("ir", ir_key, ".ll")
        atomic_write(ir_path, ir)
        return CompiledUnit(source, ir_path, ir_key)
    ir_path = cache.path("ir", ir_key, ".ll")
    atomic_write(ir_path, ir)
    cache.seal("ir", ir_key, [ir_path])  # the IR, then its seal, then the manifest that finds them
    manifest = {"source_sha256": src_hash, "deps": deps, "ir": ir_key, "warnings": diagnostics}
    atomic_write(manifest_path, json.dumps(manifest, sort_keys=True).encode())
    return CompiledUnit(source, ir_path, ir_key)


def _lookup(cache: Cache, manifest_path: Path, src_hash: str, name: str) -> tuple[Path, str] | None:
    try:
        manifest = json.loads(manifest_path.read_text())
        ir_key = manifest["ir"]
        if not isinstance(ir_key, str):
            raise TypeError
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if manifest.get("source_sha256") != src_hash:
        return None
    for dep, expected in manifest.get("deps", {}).items():
        try:
            if file_digest(Path(dep)) != expected:
                return None
        except OSError:
            return None
    ir_path = cache.path("ir", ir_key, ".ll")
    if not cache.check("ir", ir_key, [ir_path], name=f"the IR of {name}"):
        return None
    return ir_path, ir_key


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
) -> Path:
    """Build C source of the engine's own (the runtime, the models' code, the host guard) with
    ``flags`` into one cache entry ending in ``suffix``; ``what`` names it in messages."""
    key = digest(tc.identity, code, *flags)

    def make(files: list[Path]) -> None:
        with tempfile.TemporaryDirectory(prefix="instrbudget-rt-") as tmp:
            src, out = Path(tmp) / f"{stem}.c", Path(tmp) / f"{stem}{suffix}"
            src.write_text(code)
            cmd = [*tc.cc, "-target", tc.triple, *flags, str(src), "-o", str(out)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise LinkError(f"building {what} failed:\n{proc.stderr}")
            atomic_write(files[0], out.read_bytes(), mode=mode)

    (path,) = cache.entry("rt", key, [suffix], make, name=what)
    return path
