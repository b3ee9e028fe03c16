"""llvmlite behind one seam: parse and link IR, re-optimise, emit an object file.

A build runs :func:`link_units` and :func:`compile_module` in a worker process
(:mod:`cbuild.build.llvm_worker`), where an abort inside LLVM cannot end the session.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from llvmlite import binding as llvm

from cbuild.build import libc as libc_mod
from cbuild.build import libcxx as libcxx_mod
from cbuild.build.blocks import UNCOUNTED_INTRINSIC, BlockTable, region_marker
from cbuild.build.startup import place_structors
from cbuild.errors import InstrumentedIRRejected, InstrumentError, LinkError


@functools.cache
def initialise() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_asmparser()  # inline assembly is parsed while emitting objects


def parse(text: str, *, name: str, context: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    """Parse and verify IR text (into llvmlite's global context unless given one); errors name the module."""
    initialise()
    try:
        module = llvm.parse_assembly(text, context)
        module.verify()
    except RuntimeError as exc:
        raise InstrumentError(f"LLVM rejected the IR of {name}: {exc}") from exc
    _check_debug_info(text, module, name)
    module.name = name
    return module


#: A function's definition with its debug information attached, and its name.
_DEFINE_WITH_DBG = re.compile(r'^define [^\n]*?@("(?:[^"\\]|\\.)*"|[-\w$.]+)\([^\n]*\) [^\n]*!dbg !\d+', re.M)


def _check_debug_info(text: str, module: llvm.ModuleRef, name: str) -> None:
    """Fail where LLVM dropped the module's debug information as invalid (it only warns on stderr):
    source lines, reports and a library's C signatures need it, and would quietly degrade."""
    found = _DEFINE_WITH_DBG.search(text)
    if found is None:
        return
    symbol = found.group(1)
    if symbol.startswith('"'):
        symbol = symbol[1:-1]
    try:
        function = module.get_function(symbol)
    except NameError:  # a quoted name with escapes: not worth decoding for this check
        return
    head = next((line for line in str(function).splitlines() if line.startswith("define ")), "")
    if "!dbg" not in head:
        raise InstrumentError(
            f"LLVM found the debug information in the IR of {name} invalid and would drop it, which "
            "source lines, reports and C signatures need: a defect of the IR the build made from the "
            "sources (report it with the source), or of IR given as a source"
        )


_MULTIPLY_DEFINED = re.compile(r"Linking globals named '([^']*)': symbol multiply defined")


def _definitions(module: llvm.ModuleRef) -> set[str]:
    """Names of the symbols ``module`` defines for other modules to use."""
    local = (llvm.Linkage.internal, llvm.Linkage.private)
    symbols = [*module.functions, *module.global_variables]
    return {s.name for s in symbols if not s.is_declaration and s.linkage not in local}


def link(modules: list[llvm.ModuleRef]) -> llvm.ModuleRef:
    """Link translation units into one module (internal symbols are renamed apart).

    A symbol two units define raises :class:`LinkError` naming the symbol and both units.
    """
    first, *rest = modules
    # Who defined what so far: ``link_in`` consumes the module it links, even when it fails.
    defined_by = dict.fromkeys(_definitions(first), first.name)
    for other in rest:
        name = other.name
        mine = _definitions(other)
        try:
            first.link_in(other)
        except RuntimeError as exc:
            m = _MULTIPLY_DEFINED.search(str(exc))
            if m and m.group(1) in defined_by:
                symbol = m.group(1)
                raise LinkError(
                    f"symbol {symbol!r} is defined in both {defined_by[symbol]} and {name} (LLVM: {str(exc).strip()})"
                ) from None
            raise LinkError(f"linking the IR of {name} into the build failed: {exc}") from None
        for symbol in mine:
            defined_by.setdefault(symbol, name)
    return first


def _statics_apart(modules: Sequence[llvm.ModuleRef], names: Sequence[str]) -> None:
    """Name a static function that shares its name with a function of another unit ``f (file.c)``.

    The linker would keep one ``f`` and number the others (``f.26``) by how many names it
    had seen, so removing an unrelated source renamed them; this name depends on the unit alone.
    """
    local = (llvm.Linkage.internal, llvm.Linkage.private)
    defined = Counter(fn.name for m in modules for fn in m.functions if not fn.is_declaration)
    shared = {name for name, n in defined.items() if n > 1}
    if not shared:
        return
    for module, tag in zip(modules, _unit_tags(names), strict=True):
        for fn in module.functions:
            if fn.name in shared and not fn.is_declaration and fn.linkage in local:
                fn.name = f"{fn.name} ({tag})"


def _unit_tags(names: Sequence[str]) -> list[str]:
    """Each unit's file name, with as many of its folders as tell it from the others'."""
    parts = [Path(name).parts for name in names]
    depth = 1
    while depth < max((len(p) for p in parts), default=1):
        tags = ["/".join(p[-depth:]) for p in parts]
        if len(set(tags)) == len(tags):
            return tags
        depth += 1
    return ["/".join(p[-depth:]) for p in parts]


_DEBUG_RECORD = re.compile(r"^[ \t]+#dbg_\w+\(.*\n", re.MULTILINE)
_RETAINED_NODES = re.compile(r", retainedNodes: !\d+")


def line_tables_only(text: str) -> str:
    """``text`` with its debug information reduced to line tables (what ``-gline-tables-only`` keeps).

    Sources are compiled with full DWARF so that :mod:`cbuild.build.signatures` can read
    their C types; generating code for all of it would cost a quarter of a cold build,
    and nothing reads it from the binary. Line tables stay for debuggers and profilers.
    """
    text = _RETAINED_NODES.sub("", _DEBUG_RECORD.sub("", text))
    return text.replace("emissionKind: FullDebug", "emissionKind: LineTablesOnly")


def link_units(
    paths: Sequence[str],
    names: Sequence[str],
    *,
    libc: Sequence[str] = (),
    libcxx: str | None = None,
    size_bits: int = 64,
) -> str:
    """The text of one module linking the IR files at ``paths`` in order; errors name each by ``names``.

    With ``libc`` (the counted C library's IR files, :mod:`cbuild.build.libc`) the units call it
    instead of the host's C library; with ``libcxx`` (the counted part of libc++,
    :mod:`cbuild.build.libcxx`) the libc++ functions they call are linked in. Either way
    the library functions they use become internal to the module and the rest are dropped.
    A fresh context per call: struct type names (``%struct.s.3``) then depend on these
    units alone, not on what the process parsed before.
    """
    context = llvm.create_context()
    texts = [Path(p).read_text() for p in paths]
    own = libc_mod.defined_names(texts)
    library_texts: list[tuple[str, str]] = []
    if libcxx is not None:
        library_texts.append((libcxx_mod.prepare(Path(libcxx).read_text()), "the counted C++ library"))
    if libc:
        texts = [libc_mod.point_at_libc(text, own=own, size_bits=size_bits) for text in texts]
        library_texts = [(libc_mod.point_at_libc(t, own=own, size_bits=size_bits), n) for t, n in library_texts]
    modules = [parse(text, name=n, context=context) for text, n in zip(texts, names, strict=True)]
    _statics_apart(modules, names)
    counted: set[str] = set()
    for text, name in library_texts:
        library = parse(text, name=name, context=context)
        # The user's own definition of a function wins (a replaced ``operator new``).
        counted.update(fn.name for fn in library.functions if not fn.is_declaration and fn.name not in own)
        modules.append(library)
    # The library's own module always (the heap the heap model reads is there), and the musl
    # modules the build reaches through it or its own calls.
    libc_texts = [Path(libc[0]).read_text()] if libc else []
    reaching = [*texts, *(t for t, _ in library_texts), *libc_texts]
    libc_texts += [Path(p).read_text() for p in libc_mod.needed_modules(reaching, libc[1:])]
    for libc_text in libc_texts:
        library = parse(libc_text, name="the counted C library", context=context)
        for fn in library.functions:  # its helpers too, so that reports tell them apart
            if not fn.is_declaration and not fn.name.startswith(libc_mod.PREFIX):
                fn.name = libc_mod.PREFIX + fn.name
        counted.update(fn.name for fn in library.functions if not fn.is_declaration)
        modules.append(library)
    module = link(modules)
    _bind_own_libc_names(module, own)
    if not counted:
        return str(module)
    _keep_used(module, counted)
    # An internal function keeps no comdat: the linker would otherwise keep the host libc++'s
    # group of the same name and leave this module's calls pointing at nothing.
    return _INTERNAL_COMDAT.sub(r"\1", str(module))


_INTERNAL_COMDAT = re.compile(
    r'^(define (?:internal|private) [^\n]*?) comdat(?:\(\$(?:[-\w.$]+|"[^"]*")\))?', re.MULTILINE
)


def _bind_own_libc_names(module: llvm.ModuleRef, own: set[str]) -> None:
    """A C library function the build defines itself (its own ``strlen``) called as that definition.

    In a shared library, a call of a function of default visibility binds to the first definition
    the process has of its name, which for ``strlen`` is the host's C library, loaded first: the
    user's function would never run, and the host's would run uncounted in its place. Protected
    visibility keeps the name exported (``lib.strlen`` finds it) and binds the build's own calls to
    it, as a program's are."""
    names = own & libc_mod.functions()
    for fn in module.functions:
        # Bound to it already, or a stand-in for a definition elsewhere (C99 inline).
        local = fn.linkage in (llvm.Linkage.internal, llvm.Linkage.private, llvm.Linkage.available_externally)
        if fn.name in names and not fn.is_declaration and not local and fn.visibility == llvm.Visibility.default:
            fn.visibility = llvm.Visibility.protected


def _keep_used(module: llvm.ModuleRef, counted: set[str]) -> None:
    """The counted libraries' functions made internal to the build, the unused ones dropped."""
    for fn in module.functions:
        if fn.name in counted and not fn.is_declaration:
            fn.visibility = llvm.Visibility.default
            fn.linkage = llvm.Linkage.internal
    tm = target_machine(module.triple, 0)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_global_dead_code_eliminate_pass()
    mpm.run(module, pb)


def compile_module(text: str, models: str | None, *, triple: str, speed_level: int) -> bytes:
    """Object code for the instrumented module ``text``.

    ``models`` is the IR of the cost models' dynamic phases: linked in, and their hooks
    inlined where the counting code calls them. LLVM refusing ``text`` itself raises
    :class:`InstrumentedIRRejected`.
    """
    context = llvm.create_context()
    text = place_structors(line_tables_only(text))
    try:
        module = parse(text, name="instrumented", context=context)
    except InstrumentError as exc:
        raise InstrumentedIRRejected(str(exc)) from None
    if models is not None:
        module = link([module, parse(models, name="cost models", context=context)])
    tm = target_machine(triple, speed_level)
    optimise(module, tm, speed_level, inline_hooks=models is not None)
    return emit_object(module, tm)


def llvmlite_sizes(module: llvm.ModuleRef) -> list[tuple[str, int]]:
    """Per-block (function, counted instruction count) as llvmlite sees the module; a region
    marker ends a block for counting, as in the block table (:func:`~cbuild.build.blocks.parse_module`)."""
    out = []
    for fn in module.functions:
        if fn.is_declaration:
            continue
        for block in fn.blocks:
            size = 0
            for instr in block.instructions:
                if instr.opcode == "call":
                    callee = list(instr.operands)[-1].name
                    if not callee and region_marker(str(instr)):
                        out.append((fn.name, size))
                        size = 0
                        continue
                    if UNCOUNTED_INTRINSIC.match(callee):
                        continue
                size += 1
            out.append((fn.name, size))
    return out


def check_table(module: llvm.ModuleRef, table: BlockTable) -> None:
    """Fail loudly if the text-derived block table disagrees with llvmlite."""
    expected = llvmlite_sizes(module)
    got = [(b.function, b.size) for b in table.blocks]
    if expected != got:
        for i, (e, g) in enumerate(zip(expected, got, strict=False)):
            if e != g:
                raise InstrumentError(f"block table mismatch at block {i}: llvmlite {e}, text {g}")
        raise InstrumentError(f"block table has {len(got)} blocks, llvmlite counts {len(expected)}")


def target_machine(triple: str, opt_level: int) -> llvm.TargetMachine:
    """A position-independent target machine for ``triple`` (generic CPU: same code everywhere)."""
    initialise()
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(opt=opt_level, reloc="pic", codemodel="default")


def optimise(module: llvm.ModuleRef, tm: llvm.TargetMachine, speed_level: int, *, inline_hooks: bool = False) -> None:
    """Clean up after instrumentation; counts stay exact since counters are memory effects.

    clang has already optimised the IR at the user's level, so a second full
    pipeline mostly costs build time (twice the front end's) and reshuffles code that
    was good already. With ``inline_hooks`` the cost models' hooks are inlined first.
    SROA turns each function's running-total accumulator into a register,
    instcombine folds the counting arithmetic, simplifycfg tidies up.
    """
    if speed_level <= 0:
        return
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=speed_level))
    mpm = llvm.create_new_module_pass_manager()
    if inline_hooks:
        mpm.add_always_inliner_pass()  # the cost models' dynamic phases, linked into the module
    mpm.add_sroa_pass()
    mpm.add_instruction_combine_pass()
    mpm.add_simplify_cfg_pass()
    mpm.run(module, pb)


def emit_object(module: llvm.ModuleRef, tm: llvm.TargetMachine) -> bytes:
    """Native object code for ``module``."""
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    return bytes(tm.emit_object(module))


def signatures(module: llvm.ModuleRef, text: str) -> dict[str, dict[str, object]]:
    """C-callable signatures of the module's exported functions, from their IR types.

    ``signext``/``zeroext`` attributes (on parameters, and on the return value in the
    ``define`` line of ``text``) tell signed from unsigned narrow integers.
    """
    define_lines = {}
    for line in text.split("\n"):
        if line.startswith("define "):
            at = line.find(" @")
            name_end = line.find("(", at)
            define_lines[line[at + 2 : name_end].strip('"')] = line[:at]
    out: dict[str, dict[str, object]] = {}
    for fn in module.functions:
        if fn.is_declaration or fn.linkage != llvm.Linkage.external or fn.name.startswith("__instrbudget"):
            continue
        fty = fn.global_value_type
        ret = str(fty.get_function_return())
        params = []
        for arg in fn.arguments:
            attrs = {a.decode() if isinstance(a, bytes) else str(a) for a in arg.attributes}
            ext = "s" if "signext" in attrs else "z" if "zeroext" in attrs else ""
            flags = "byval" if any(a.startswith(("byval", "sret", "inalloca")) for a in attrs) else ""
            params.append({"type": str(arg.type), "ext": ext, "flags": flags})
        head = define_lines.get(fn.name, "")
        ret_ext = "s" if "signext" in head else "z" if "zeroext" in head else ""
        out[fn.name] = {
            "ret": ret,
            "ret_ext": ret_ext,
            "params": params,
            "vararg": bool(fty.is_function_vararg),
        }
    return out
