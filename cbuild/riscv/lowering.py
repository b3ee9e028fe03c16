"""RISC-V code for each IR block of a program, for models that cost machine instructions.

The program's linked module (the same IR whose blocks the host build counts) is
given fresh debug locations: every instruction of block N is placed on line N + 1
of an imaginary file. LLVM's RISC-V back end compiles the module at the build's
optimisation level, and the ``.loc`` directives of its assembly attribute every
machine instruction to the IR block it came from, wherever the scheduler moved
it. Debug locations never change the generated code, so the code attributed is
the code a plain build would run. A function's prologue is placed on the line of
its entry block; instructions without a location belong to the next located
instruction's block (see :func:`attribute`).

The host's IR has the host's data model: on x86-64 ``long``, ``size_t`` and
pointers are 64 bits wide, and RV32 would need several instructions for each
operation on them. For ``riscv32`` the sources are therefore compiled a second
time for a host twin with the same 32-bit data model as RV32 (``x86_64-linux-gnux32``:
32-bit ``long`` and pointers, 64-bit ``long long`` aligned to 8 bytes), never run,
only lowered. Where a function of the twin has the same control-flow graph as the
host's function (the usual case: the same optimiser decides both), its blocks
stand for the host's blocks one for one; other functions are lowered from the
host IR and listed as approximate.

Limits (docs/cost-models.md): instructions of a block the back end duplicated
count once per copy; a ``select`` that RV32IM lowers to a short branch counts
both of its arms; inline assembly written for the host costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from llvmlite import binding as llvm

from cbuild.build.blocks import ATTRIBUTE_GROUP, ParsedModule, defined_name, parse_module
from cbuild.build.codegen import initialise
from cbuild.errors import CBuildError
from cbuild.riscv.isa import Instruction, parse_line

#: Target triple, CPU and features of each RISC-V flavour the models use.
TARGETS = {
    "riscv32": ("riscv32-unknown-elf", "generic-rv32", "+m"),
    "riscv64": ("riscv64-unknown-elf", "generic-rv64", "+m"),
}
#: Host triple with the data model of each RISC-V flavour (None: the host's own, LP64).
TWINS: dict[str, str | None] = {"riscv32": "x86_64-linux-gnux32", "riscv64": None}
#: Where code is placed in the modelled address space (a typical RISC-V ELF text start).
TEXT_BASE = 0x10000
_LOC = re.compile(r"^\s*\.loc\s+\d+\s+(\d+)")
_FUNCTION = re.compile(r'^\s*\.type\s+("[^"]*"|\S+),\s*@function')
_DBG = re.compile(r",? !(?:dbg|llvm\.loop) !\d+")
_METADATA_ID = re.compile(r"^!(\d+) = ")
_HOST_ATTRIBUTES = re.compile(r'\s*"(?:target-cpu|target-features|tune-cpu|frame-pointer)"="[^"]*"')
_BLOCK_LABEL = re.compile(r'^(?:[\w.$]+|"[^"]*"):')
_INLINE_ASM = re.compile(r"^  (?:(%[-\w.$\"]+) = )?(?:tail |notail )?call (.*?)\basm\b")
_CALL_ATTRS = re.compile(r"^(?:(?:noundef|zeroext|signext|inreg|noalias|nonnull|range\([^)]*\)|\w+cc)\s+)*")


class LoweringError(CBuildError):
    """The program's IR cannot be compiled for the modelled RISC-V machine."""


@dataclass(frozen=True)
class LoweredBlock:
    """The machine code of one IR block."""

    instructions: tuple[Instruction, ...]
    #: Address of the block's first instruction in the modelled text segment.
    address: int = 0

    @property
    def words(self) -> int:
        """Machine instructions once assembled (pseudo-instructions expanded)."""
        return sum(i.words for i in self.instructions)


def _retarget(lines: list[str], target: str, datalayout: str) -> list[str]:
    """Make host IR compilable for RISC-V: triple, data layout, host-only attributes, inline asm."""
    triple = TARGETS[target][0]
    out = []
    function = ""
    for line in lines:
        if line.startswith("target triple"):
            line = f'target triple = "{triple}"'
        elif line.startswith("target datalayout"):
            line = f'target datalayout = "{datalayout}"'
        elif line.startswith("define "):
            function = line
        elif ATTRIBUTE_GROUP.match(line):
            line = _HOST_ATTRIBUTES.sub("", line)
        elif "callbr " in line and " asm " in line:
            raise LoweringError(f"asm goto cannot be compiled for {target}; in: {function[:160]}")
        elif "@llvm.x86." in line and not line.startswith("declare "):
            raise LoweringError(f"x86 intrinsics cannot be compiled for {target}; in: {function[:160]}")
        else:
            m = _INLINE_ASM.match(line)
            if m is not None:
                # Host inline assembly has no RISC-V meaning: it costs nothing on the model.
                result, rest = m.group(1), _CALL_ATTRS.sub("", m.group(2)).strip()
                if result is None:
                    continue
                line = f"  {result} = freeze {rest} poison"
        out.append(line)
    return out


def located_ir(text: str, parsed: ParsedModule | None = None) -> str:
    """The module with every instruction of block N on line N + 1 (debug locations replaced);
    ``parsed`` is ``parse_module(text)`` when the caller has it already."""
    parsed = parsed or parse_module(text)
    lines = parsed.lines
    base = 1 + max((int(m.group(1)) for line in lines if (m := _METADATA_ID.match(line))), default=0)
    cu, file, subroutine = base, base + 1, base + 2
    next_id = base + 3
    nodes = [
        f'!{cu} = distinct !DICompileUnit(language: DW_LANG_C11, file: !{file}, producer: "instrbudget", '
        "isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly)",
        f'!{file} = !DIFile(filename: "blocks", directory: "/")',
        f"!{subroutine} = !DISubroutineType(types: !{{}})",
    ]
    line_block: dict[int, int] = {}
    subprogram: dict[str, int] = {}
    for number, block in enumerate(parsed.blocks):
        if block.function not in subprogram:
            subprogram[block.function] = next_id
            nodes.append(
                f'!{next_id} = distinct !DISubprogram(name: "f{next_id}", scope: !{file}, file: !{file}, '
                f"line: {number + 1}, type: !{subroutine}, scopeLine: {number + 1}, "
                f"spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !{cu})"
            )
            next_id += 1
        nodes.append(f"!{next_id} = !DILocation(line: {number + 1}, scope: !{subprogram[block.function]})")
        for index in range(block.first_line, block.term_end):
            line_block[index] = next_id
        next_id += 1
    out = []
    cu_listed = False
    for index, line in enumerate(lines):
        if line.startswith("    #dbg_"):
            continue  # debug records refer to the locations being replaced
        if line.startswith("define "):
            name = defined_name(line)
            line = _DBG.sub("", line)
            if name in subprogram:
                line = f"{line[: line.rfind('{')].rstrip()} !dbg !{subprogram[name]} {{"
        elif index in line_block and line.startswith("  ") and not line.startswith("   ") and line[-1] != "[":
            # Loop metadata holds locations in the old scopes: it goes too (code generation ignores it).
            line = f"{_DBG.sub('', line)}, !dbg !{line_block[index]}"
        elif line.startswith("!llvm.dbg.cu = !{"):
            line = f"{line[:-1]}, !{cu}}}" if line != "!llvm.dbg.cu = !{}" else f"!llvm.dbg.cu = !{{!{cu}}}"
            cu_listed = True
        elif line.startswith("module asm "):
            continue  # host assembly
        out.append(line)
    if not cu_listed:
        out.append(f"!llvm.dbg.cu = !{{!{cu}}}")
    if '!"Debug Info Version"' not in text:
        flag = next_id
        nodes.append(f'!{flag} = !{{i32 2, !"Debug Info Version", i32 3}}')
        flags = [i for i, line in enumerate(out) if line.startswith("!llvm.module.flags = !{")]
        if flags:
            line = out[flags[0]]
            out[flags[0]] = f"{line[:-1]}, !{flag}}}" if line.endswith("!{}") is False else f"{line[:-2]}!{flag}}}"
        else:
            out.append(f"!llvm.module.flags = !{{!{flag}}}")
    return "\n".join([*out, *nodes, ""])


_X87_CONSTANT = re.compile(r"0xK([0-9A-Fa-f]{20})")
_X87_TYPE = re.compile(r"\bx86_fp80\b")
_X87_SUFFIX = re.compile(r"\.f80\b")
_X87_BITS = re.compile(r"\bi80\b")


def long_double_as_quad(text: str) -> str:
    """``text`` with the host's 80-bit ``long double`` (``x86_fp80``) as RISC-V's, IEEE quad
    (``fp128``): its type, constants (the same values) and intrinsics' names, and its bits
    (``i80``) as 128. Code of the counted C library's formatting uses it; a RISC-V build
    of the same source has quad there too. The text is lowered, never run.
    """

    def constant(m: re.Match[str]) -> str:
        digits = m.group(1)
        sign_exponent, mantissa = int(digits[:4], 16), int(digits[4:], 16)
        # The explicit integer bit goes; the 63 fraction bits become the top of quad's 112.
        fraction = (mantissa & ((1 << 63) - 1)) << 49
        high, low = sign_exponent << 48 | fraction >> 64, fraction & ((1 << 64) - 1)
        return f"0xL{low:016X}{high:016X}"  # LLVM writes fp128's low word first

    text = _X87_CONSTANT.sub(constant, text)
    return _X87_BITS.sub("i128", _X87_SUFFIX.sub(".f128", _X87_TYPE.sub("fp128", text)))


def compile_riscv(text: str, *, target: str, opt_level: int) -> str:
    """RISC-V assembly of IR text (markers included)."""
    if target not in TARGETS:
        raise LoweringError(f"unknown RISC-V target {target!r}; expected one of {', '.join(TARGETS)}")
    if "x86_fp80" in text:
        text = long_double_as_quad(text)
    initialise()
    triple, cpu, features = TARGETS[target]
    tm = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=opt_level, reloc="static", codemodel="small"
    )
    lines = _retarget(text.split("\n"), target, str(tm.target_data))
    try:
        module = llvm.parse_assembly("\n".join(lines))
        module.verify()
    except RuntimeError as exc:
        raise LoweringError(f"LLVM rejected the program's IR for {target}: {exc}") from exc
    return str(tm.emit_assembly(module))


_ENDS_BLOCK = frozenset({"j", "jr", "ret", "tail", "beq", "bne", "blt", "bge", "bltu", "bgeu"}) | {
    "beqz",
    "bnez",
    "blez",
    "bgez",
    "bltz",
    "bgtz",
    "bgt",
    "ble",
    "bgtu",
    "bleu",
}


@dataclass
class _Placed:
    instr: Instruction
    pc: int
    block: int
    #: Index of the machine basic block (within the function) the instruction sits in.
    mbb: int


def _reassign_outside_loops(placed: list[_Placed], loops: list[tuple[int, int]]) -> None:
    """Code of a loop's IR block that the back end placed outside the loop runs once per loop entry or exit.

    Hoisted invariants in a preheader, and a jump in the loop's exit path, keep the
    location of the loop block they came from. A loop is the machine blocks from a
    backward branch's target to the branch. Code located in a block that occurs in
    a loop but placed outside all loops holding that block belongs to the block
    before it (ahead of the loop) or after it (behind the loop).
    """
    if not loops:
        return
    inside: dict[int, list[int]] = {}  # machine block -> loops containing it
    for number, (head, tail) in enumerate(loops):
        for mbb in range(head, tail + 1):
            inside.setdefault(mbb, []).append(number)
    spans: dict[int, set[int]] = {}  # IR block -> loops holding some of its code
    for p in placed:
        if p.mbb in inside:
            spans.setdefault(p.block, set()).update(inside[p.mbb])
    n = len(placed)
    before: list[int | None] = [None] * n  # nearest earlier instruction's block, if different
    after: list[int | None] = [None] * n
    for k in range(1, n):
        before[k] = placed[k - 1].block if placed[k - 1].block != placed[k].block else before[k - 1]
    for k in range(n - 2, -1, -1):
        after[k] = placed[k + 1].block if placed[k + 1].block != placed[k].block else after[k + 1]
    moves: list[tuple[int, int]] = []
    for k, p in enumerate(placed):
        held = spans.get(p.block)
        if not held or any(number in held for number in inside.get(p.mbb, ())):
            continue
        ahead = p.mbb < min(loops[number][0] for number in held)
        other = before[k] if ahead else after[k]
        if other is not None:
            moves.append((k, other))
    for k, block in moves:
        placed[k].block = block


def attribute(assembly: str, nblocks: int) -> list[LoweredBlock]:
    """Split assembly by its line directives: the machine code of each of ``nblocks`` IR blocks.

    Instructions at line 0 (no location: hoisted constants, shrink-wrapped prologues,
    register copies) belong to the next located instruction's block in the same
    function, else to the last located block before them. Code that the back end
    moved out of a loop goes with the blocks around the loop
    (:func:`_reassign_outside_loops`).
    """
    code: list[list[Instruction]] = [[] for _ in range(nblocks)]
    address = [-1] * nblocks
    pc = TEXT_BASE
    current = -1  # block of the last located instruction in this function
    located = False  # whether instructions now carry a location
    unlocated: list[tuple[Instruction, int, int]] = []
    placed: list[_Placed] = []  # this function's instructions
    mbb = 0
    labels: dict[str, int] = {}
    branches: list[tuple[str, int]] = []
    new_mbb = False

    def flush(block: int, number: int) -> None:
        if unlocated and block < 0:
            raise LoweringError(f"a function's code before assembly line {number} has no block location")
        for instr, at, where in unlocated:
            placed.append(_Placed(instr, at, block, where))
        unlocated.clear()

    def end_function(number: int) -> None:
        nonlocal mbb
        flush(current, number)
        loops = [(labels[t], at) for t, at in branches if t in labels and labels[t] <= at]
        _reassign_outside_loops(placed, loops)
        for p in placed:
            code[p.block].append(p.instr)
            if address[p.block] < 0 or p.pc < address[p.block]:
                address[p.block] = p.pc
        placed.clear()
        labels.clear()
        branches.clear()
        mbb = 0

    for number, line in enumerate(assembly.splitlines(), start=1):
        m = _LOC.match(line)
        if m is not None:
            where = int(m.group(1))
            if where > nblocks:
                raise LoweringError(f"assembly line {number} names block {where - 1}, the program has {nblocks}")
            located = where > 0
            if located:
                current = where - 1
                flush(current, number)
            continue
        if _FUNCTION.match(line) or line.startswith(".Lfunc_end"):
            end_function(number)
            current, located = -1, False
            continue
        if _BLOCK_LABEL.match(line):
            if line.startswith(".LBB"):
                mbb += 1
                new_mbb = False
                labels[line.split(":", 1)[0]] = mbb
            continue
        instr = parse_line(line, number)
        if instr is None:
            continue
        if new_mbb:
            mbb += 1
            new_mbb = False
        if located:
            placed.append(_Placed(instr, pc, current, mbb))
        else:
            unlocated.append((instr, pc, mbb))
        if instr.mnemonic in _ENDS_BLOCK:
            new_mbb = True
            if instr.operands and instr.operands[-1].startswith(".LBB"):
                branches.append((instr.operands[-1], mbb))
        pc += 4 * instr.words
    end_function(0)
    return [LoweredBlock(tuple(c), max(a, 0)) for c, a in zip(code, address, strict=True)]


def lower_blocks(text: str, *, target: str, opt_level: int, parsed: ParsedModule | None = None) -> list[LoweredBlock]:
    """The RISC-V code of every block of ``text`` (linked module IR), in block-table order."""
    parsed = parsed or parse_module(text)
    assembly = compile_riscv(located_ir(text, parsed), target=target, opt_level=opt_level)
    return attribute(assembly, len(parsed.blocks))


def _shapes(module: ParsedModule) -> dict[str, tuple[list[int], list[tuple[str, tuple[int, ...]]]]]:
    """Per function: its block indices, and its control-flow graph as (terminator, successor positions)."""
    members: dict[str, list[int]] = {}
    for index, block in enumerate(module.blocks):
        members.setdefault(block.function, []).append(index)
    out = {}
    for function, indices in members.items():
        position = {module.blocks[i].label: n for n, i in enumerate(indices)}
        graph = []
        for i in indices:
            b = module.blocks[i]
            succ = tuple(position.get(lbl, -1) for lbl in (*b.successors, *b.fixed_successors))
            graph.append((b.terminator, succ))
        out[function] = (indices, graph)
    return out


def match_blocks(host: ParsedModule, twin: ParsedModule) -> tuple[dict[int, int], list[str]]:
    """Host block -> twin block for functions with the same control-flow graph; the other functions."""
    twin_shapes = _shapes(twin)
    mapping: dict[int, int] = {}
    unmatched = []
    for function, (indices, graph) in _shapes(host).items():
        other = twin_shapes.get(function)
        if other is None or other[1] != graph:
            unmatched.append(function)
            continue
        mapping.update(zip(indices, other[0], strict=True))
    return mapping, unmatched


@dataclass(frozen=True)
class LoweredProgram:
    """The RISC-V code of every block of a program, and the functions only approximated."""

    blocks: list[LoweredBlock]
    #: Functions whose code came from the host IR (their twin's control flow differed).
    approximate: list[str]


def lower_program(host_ir: str, twin_ir: str | None, *, target: str, opt_level: int) -> LoweredProgram:
    """RISC-V code per host block, from the twin's IR where it has the same shape (see the module doc)."""
    host = parse_module(host_ir)
    if twin_ir is None:
        return LoweredProgram(lower_blocks(host_ir, target=target, opt_level=opt_level, parsed=host), [])
    twin = parse_module(twin_ir)
    mapping, unmatched = match_blocks(host, twin)
    twin_code = attribute(compile_riscv(located_ir(twin_ir), target=target, opt_level=opt_level), len(twin.blocks))
    blocks = [twin_code[mapping[i]] if i in mapping else LoweredBlock(()) for i in range(len(host.blocks))]
    if unmatched:
        located = _only_functions(located_ir(host_ir, host), set(unmatched))
        host_code = attribute(compile_riscv(located, target=target, opt_level=opt_level), len(host.blocks))
        for i in range(len(host.blocks)):
            if i not in mapping:
                blocks[i] = host_code[i]
    return LoweredProgram(blocks, sorted(unmatched))


def _only_functions(text: str, keep: set[str]) -> str:
    """The module with the bodies of all other functions replaced by ``unreachable`` (faster to compile)."""
    out = []
    skipping = False
    for line in text.split("\n"):
        if skipping:
            if line == "}":
                out.append("  unreachable")
                out.append(line)
                skipping = False
            continue
        out.append(line)
        if line.startswith("define ") and defined_name(line) not in keep:
            skipping = True
    return "\n".join(out)


def total_words(blocks: Sequence[LoweredBlock]) -> int:
    """Machine instructions in all blocks (for reports and tests)."""
    return sum(b.words for b in blocks)
