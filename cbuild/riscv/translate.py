"""Translate the code a RISC-V build executed to LLVM IR, so that later runs execute natively.

The executor (``runtime/rv_executor.c`` built with ``RVX_TRANSLATED``) runs the translation in
place of unicorn. Its unit is unicorn's: a block starts where execution arrives and ends after a
branch, jump or ``ecall``, at a region marker, before a 4 KiB page boundary or after 512
instructions, so the blocks, their executions and the models' events are the same as unicorn's.
Which blocks to translate comes from runs that already happened (:func:`translate` takes their
start addresses): a later run that reaches any other code, an instruction outside RV32IM/RV64IM,
an access outside mapped memory or its instruction limit stops, and the caller runs it again in
unicorn (``RVX_FALLBACK``).

Each ELF function's blocks become one LLVM function ``i64 (ptr x, i64 pc)``: it starts at any of its
blocks (a switch on ``pc``), keeps the guest registers it uses and the count of executed
instructions in locals (loaded on entry, stored back on return; around a host call of another
translated function, those it wrote that the callee or what it calls may read or write, and back in
those they may write), branches directly between its blocks and returns the guest pc to go on at,
with the reason in ``x->cpu.reason``; the executor's dispatcher makes system calls and region
markers between calls. Every block first checks that its instructions (in a hot block, plus the
models' slack for it) stay within ``rvt_limit`` (past it, ``rvt_over`` says whether the instruction
limit or a cut-off on a model's clock stops the run there; within it, a hot block's models have
room), counts its executions in the run (``rvt_counts``; the first one checks the block in guest
memory against the translation, ``rvt_first_entry``), adds its instructions, and calls ``rvt_block``
(the models' block hook). A hot block's check also covers the hot blocks it goes to directly that
make one access at most (:func:`_covers`): where it found room for itself and the largest of them,
they start without a check of their own; every load and store calls ``rvt_access`` with the
instruction's index in its block (the models' access hook), except that in a block that runs often,
loads (or stores) through one base register ask the models once whether any of them matters
(``rvt_accesses_done``, :func:`_access_groups`). Linked with the executor's C code, the hooks are
inlined into the blocks that run often.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cbuild.riscv.decode import branch_offset, jal_offset
from cbuild.riscv.executor import MAX_MODELS, Image

#: Changes whenever the IR this module writes changes (part of a translation's cache key).
VERSION = "20"
#: Offsets in ``rvx_cpu`` (rv_executor.c): registers at 8-byte steps, then pc, memory base, reason,
#: the address ``lr`` reserved and the value it read.
_MEM, _REASON, _RESERVED, _RESERVED_VALUE = 264, 272, 280, 288
#: Why a translated function returned (RVT_* in rv_executor.c); ``rvt_first_entry`` returns 0 or
#: CHANGED (the code in guest memory is not the code translated).
JUMP, ECALL, MARKER, UNKNOWN, LIMIT, FAULT, CHANGED, STOPPED = range(8)
#: unicorn ends a block after this many instructions, and before a page boundary.
MAX_BLOCK = 512
PAGE = 4096
#: Guest calls nested as host calls of translated functions (rvt_depth deep), at most.
MAX_NESTED = 128


@dataclass(frozen=True)
class Block:
    """A block as unicorn forms it: ``size`` words from ``pc``, the last of which may be a region
    marker (not an instruction); ``words`` holds the instructions (no marker)."""

    pc: int
    size: int
    words: tuple[int, ...]
    marker: bool


def _sext(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


def _ends_block(word: int) -> bool:
    """A branch, jump, ``ecall`` or any system instruction: unicorn ends its block after it."""
    return word & 0x7F in (0x63, 0x6F, 0x67, 0x73)


def _word_reader(image: Image) -> Callable[[int], int | None]:
    starts = [s.vaddr for s in image.segments]
    order = sorted(range(len(starts)), key=starts.__getitem__)
    starts = [starts[i] for i in order]
    segments = [image.segments[i] for i in order]

    def word(address: int) -> int | None:
        i = bisect.bisect_right(starts, address) - 1
        if i < 0:
            return None
        seg = segments[i]
        at = address - seg.vaddr
        if at + 4 > len(seg.data):
            return None
        return int.from_bytes(seg.data[at : at + 4], "little")

    return word


def blocks_at(image: Image, starts: Iterable[int]) -> list[Block]:
    """The blocks unicorn forms from each of ``starts`` (those whose code the image holds)."""
    word = _word_reader(image)
    markers = {address for address, _, _ in image.markers}
    out = []
    for pc in sorted(set(starts)):
        words: list[int] = []
        address, marker = pc, False
        while len(words) < MAX_BLOCK:
            w = word(address)
            if w is None:
                break
            if address in markers:
                marker = True
                break
            words.append(w)
            address += 4
            if _ends_block(w) or address % PAGE == 0:
                break
        if words or marker:
            out.append(Block(pc, len(words) + marker, tuple(words), marker))
    return out


#: Guest memory's own type in clang's type-based alias analysis: the executor's and the models'
#: state is never guest memory, so their loads and stores stay in registers across the guest's.
_GUEST_MEMORY = """!0 = !{!"Simple C/C++ TBAA"}
!1 = !{!"instrbudget guest memory", !0, i64 0}
!2 = !{!1, !1, i64 0}
!3 = !{!"branch_weights", i32 1, i32 100000}"""


def accesses(word: int) -> int:
    """Memory accesses the executor reports for an instruction: a load or store one, lr and sc
    one, other atomics two (a read and a write)."""
    op = word & 0x7F
    if op in (0x03, 0x07, 0x23, 0x27):
        return 1
    if op == 0x2F:
        return 1 if word >> 27 in (0x02, 0x03) else 2
    return 0


#: Placeholders in a function's lines for the code that stores its locals into the machine before a
#: host call of another translated function, and loads them again after it; each is followed by the
#: callee's name, or by :data:`_ANY` for a callee found at run time.
_STATE = "; state"
_STATE_OUT, _STATE_IN = f"{_STATE} out", f"{_STATE} in"
_ANY = "*"

#: Every guest register but x0.
_REGISTERS = frozenset(range(1, 32))
#: Branch weights of a rare path (a block's first entry in a run, the instruction limit).
_RARE = "!3"


#: The widest span of a group of accesses (the models' contract: less than 1 KiB).
_GROUP_SPAN = 1024


@dataclass(eq=False)
class _Group:
    """Loads (or stores) of a block through one base register that no instruction between them
    writes, all within ``_GROUP_SPAN`` bytes: the models are asked once, at the ``first``, whether
    any of them matters to them (``rvt_accesses_done``)."""

    base: int
    store: int
    first: int
    low: int  # every member's bytes lie between base + low and base + high
    high: int
    done: str = field(default="")  # the answer, once asked


def _access_groups(words: Sequence[int]) -> dict[int, _Group]:
    """A block's loads and stores that share a group with another, by position."""
    groups: dict[tuple[int, int], _Group] = {}
    members: dict[int, _Group] = {}
    for position, w in enumerate(words):
        op, rd, f3, rs1 = w & 0x7F, (w >> 7) & 31, (w >> 12) & 7, (w >> 15) & 31
        if op in (0x03, 0x23):
            store = int(op == 0x23)
            offset = _sext(((w >> 25) << 5) | rd, 12) if store else _sext(w >> 20, 12)
            low, high = offset, offset + (1 << (f3 & 3)) - 1
            group = groups.get((rs1, store))
            if group is not None and max(group.high, high) - min(group.low, low) < _GROUP_SPAN:
                group.low, group.high = min(group.low, low), max(group.high, high)
            else:
                group = groups[rs1, store] = _Group(rs1, store, position, low, high)
            members[position] = group
        if rd and op not in (0x23, 0x27, 0x63, 0x0F, 0x73):  # it writes rd: groups on rd end
            for key in [key for key in groups if key[0] == rd]:
                del groups[key]
    sizes = Counter(map(id, members.values()))
    return {position: group for position, group in members.items() if sizes[id(group)] > 1}


class _Unknown(Exception):
    """An instruction the translation does not handle."""


class _Emitter:
    """The LLVM IR of one translated function."""

    def __init__(self, xlen: int, index: dict[int, int], here: dict[int, str], owner: dict[int, str]) -> None:
        self.xlen = xlen
        self.t = f"i{xlen}"
        self.index = index  # block pc -> block number (its slot in rvt_block_slot)
        self.here = here  # block pc -> label, for the blocks of this function
        self.entries = here  # block pc -> its checked start (where a jump through a register goes)
        self.owner = owner  # block pc -> the translated function that has it
        self.lines: list[str] = []
        self.n = 0
        self.current = "entry"
        self.hook = ""  # "" in a hot block (the hooks inline there), "_cold" in others
        self.used: set[int] = set()  # guest registers read or written
        self.cover: set[int] = set()  # blocks the current block's check covers (entered unchecked if it had room)
        self.written: set[int] = set()
        self.callees: set[str] = set()  # translated functions it calls as host calls, _ANY if found at run time
        self.known: dict[int, int] = {}  # registers whose value this block set to a constant
        self.groups: dict[int, _Group] = {}  # the block's grouped accesses, by position (hot blocks)
        self.block_pc = 0  # the block being emitted, and its number
        self.block_number: int | None = None

    def tmp(self) -> str:
        self.n += 1
        return f"%v{self.n}"

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")
        self.current = name

    def new_label(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    # registers

    def get(self, r: int) -> str:
        if r == 0:
            return "0"
        self.used.add(r)
        v = self.tmp()
        self.emit(f"{v} = load {self.t}, ptr %r{r}.at")
        return v

    def put(self, r: int, value: str, known: int | None = None) -> None:
        """Write register ``r``; ``known``: the value is that constant (a later ``jalr`` from it
        has a known target)."""
        if r:
            self.used.add(r)
            self.written.add(r)
            self.emit(f"store {self.t} {value}, ptr %r{r}.at")
            self.known.pop(r, None)
            if known is not None:
                self.known[r] = known & ((1 << self.xlen) - 1)

    # the machine's state, which the function keeps in locals (promoted to registers)

    def state_in(self, registers: Iterable[int]) -> list[str]:
        """Lines that load ``registers`` and the executed instructions into the function's locals."""
        return self._copy(registers, inward=True)

    def state_out(self, registers: Iterable[int]) -> list[str]:
        """Lines that store ``registers`` and the executed instructions back into the machine."""
        return self._copy(registers, inward=False)

    def _copy(self, registers: Iterable[int], *, inward: bool) -> list[str]:
        places = [("i64", "@rvt_executed", "%exec.at")]
        places += [(self.t, f"%r{r}.x", f"%r{r}.at") for r in sorted(registers)]
        out = []
        for kind, machine, local in places:
            source, target = (machine, local) if inward else (local, machine)
            v = self.tmp()
            out += [f"{v} = load {kind}, ptr {source}", f"store {kind} {v}, ptr {target}"]
        return out

    def op(self, text: str) -> str:
        v = self.tmp()
        self.emit(f"{v} = {text}")
        return v

    def const(self, value: int) -> str:
        return str(_sext(value & ((1 << self.xlen) - 1), self.xlen))

    # leaving the function

    def mark(self) -> None:
        """Record the current block as the one the run is in (``rvt_current``): on the way out of
        the function and on every way back into a loop (a backward branch, a jump table), so that
        the executor knows it at a system call and a caller whose time limit passed learns where
        the run goes round; not in every block, where the store would cost more than it tells."""
        if self.block_number is not None:
            self.emit(f"store i32 {self.block_number}, ptr @rvt_current")

    def leave(self, pc: str, reason: int | str) -> None:
        self.mark()
        self.emit(f"store i64 {pc}, ptr %npc")
        self.emit(f"store i32 {reason}, ptr %why")
        self.emit("br label %exit")

    def go(self, target: int, *, checked: bool = False) -> None:
        """Continue at guest address ``target``: a branch if it is a block of this function, to
        its unchecked start where the current block's check covered it and found room (unless
        ``checked``: other code ran on the way)."""
        label = self.here.get(target)
        if label is not None:
            if target <= self.block_pc:
                self.mark()
            if target in self.cover and not checked:
                covered = self.op("load i1, ptr %cover.at")
                self.emit(f"br i1 {covered}, label %{label}.s, label %{label}")
            else:
                self.emit(f"br label %{label}")
        else:
            self.leave(str(target), JUMP)

    def call(self, target: int, back: int) -> None:
        """A guest call (``jal ra``, or ``jalr ra`` to a known address) of a translated block: a
        host call of its function (see :meth:`host_call`), recursion included."""
        self.host_call(self.owner[target], str(target), back)

    def call_dynamic(self, target: str, back: int) -> None:
        """A guest call through a register: a host call of the translated function with a block
        at ``target`` (found by the executor, ``rvt_find``), else through the dispatcher."""
        pc = self.op(f"zext {self.t} {target} to i64") if self.xlen == 32 else target
        code = self.op(f"call ptr @rvt_find(i64 {pc})")
        found, missing = self.new_label("found"), self.new_label("missing")
        self.emit(f"br i1 {self.op(f'icmp ne ptr {code}, null')}, label %{found}, label %{missing}")
        self.label(found)
        self.host_call(_ANY, pc, back, code)
        self.label(missing)
        self.leave(pc, JUMP)

    def host_call(self, name: str, target: str, back: int, function: str | None = None) -> None:
        """Call the translated function ``name`` (or ``function``, found at run time: ``name`` is
        :data:`_ANY`) at guest address ``target`` as a host call, so that
        the callee's return comes back here instead of through the dispatcher; whatever else it
        returns for (a jump elsewhere, a system call, a stop) goes on through the dispatcher. Past
        :data:`MAX_NESTED` nested calls, the call too goes through it. Around the call, of the
        registers the callee ``name`` (or :data:`_ANY`) and what it calls may read or write, those
        this function wrote go out, and those the callee may write come back in
        (:meth:`_Lifted.text`)."""
        self.callees.add(name)
        depth = self.op("load i32, ptr @rvt_depth")
        deep = self.op(f"icmp uge i32 {depth}, {MAX_NESTED}")
        near, far = self.new_label("call"), self.new_label("far")
        self.emit(f"br i1 {deep}, label %{far}, label %{near}")
        self.label(near)
        self.emit(f"store i32 {self.op(f'add i32 {depth}, 1')}, ptr @rvt_depth")
        self.emit(f"{_STATE_OUT} {name}")
        next_pc = self.op(f"call i64 {function or '@' + name}(ptr %x, i64 {target})")
        self.emit(f"{_STATE_IN} {name}")
        self.emit(f"store i32 {depth}, ptr @rvt_depth")
        reason = self.op(f"load i32, ptr {self.op(f'getelementptr i8, ptr %x, i64 {_REASON}')}")
        jumped = self.op(f"icmp eq i32 {reason}, {JUMP}")
        returned = self.op(f"and i1 {jumped}, {self.op(f'icmp eq i64 {next_pc}, {back}')}")
        home, elsewhere = self.new_label("returned"), self.new_label("elsewhere")
        self.emit(f"br i1 {returned}, label %{home}, label %{elsewhere}")
        self.label(home)
        self.go(back, checked=True)
        self.label(elsewhere)
        self.leave(next_pc, reason)
        self.label(far)
        self.leave(target, JUMP)

    def go_dynamic(self, target: str, within: bool) -> None:
        """Continue at the guest address in ``target``; ``within``: often a block of this function
        (a jump table), so a switch over them comes first."""
        pc = self.op(f"zext {self.t} {target} to i64") if self.xlen == 32 else target
        if within and self.entries:
            self.mark()
            away = self.new_label("away")
            cases = " ".join(f"i64 {start}, label %{label}" for start, label in self.entries.items())
            self.emit(f"switch i64 {pc}, label %{away} [ {cases} ]")
            self.label(away)
        self.leave(pc, JUMP)

    # memory

    def address(self, base: int, offset: int) -> tuple[str, str]:
        """The guest address (XLEN) and its host pointer; RV64 addresses beyond 32 bits fault."""
        a = self.op(f"add {self.t} {self.get(base)}, {self.const(offset)}")
        if self.xlen == 32:
            wide = self.op(f"zext i32 {a} to i64")
        else:
            wide = a
            high = self.op(f"lshr i64 {a}, 32")
            bad = self.op(f"icmp ne i64 {high}, 0")
            ok = self.new_label("in")
            self.emit(f"br i1 {bad}, label %fault, label %{ok}")
            self.label(ok)
        return wide, self.op(f"getelementptr i8, ptr %mem, i64 {wide}")

    def access(self, wide: str, size: int, store: int, position: int) -> None:
        group = self.groups.get(position)
        if group is None:
            self.emit(f"call void @rvt_access{self.hook}(i64 {wide}, i32 {size}, i32 {store}, i32 {position})")
            return
        if position == group.first:  # the base register holds what every member adds its offset to
            base = self.get(group.base)
            ends = [self.op(f"add {self.t} {base}, {self.const(offset)}") for offset in (group.low, group.high)]
            if self.xlen == 32:
                ends = [self.op(f"zext i32 {end} to i64") for end in ends]
            group.done = self.op(f"call i32 @rvt_accesses_done(i64 {ends[0]}, i64 {ends[1]}, i32 {store})")
        args = f"i64 {wide}, i32 {size}, i32 {store}, i32 {position}"
        self.emit(f"call void @rvt_access_unless(i32 {group.done}, {args})")

    # instructions

    def instruction(self, w: int, pc: int, position: int) -> bool:
        """Emit one instruction; True if it ended the block (a transfer or an ecall)."""
        t, xlen = self.t, self.xlen
        op, rd, f3, rs1, rs2, f7 = w & 0x7F, (w >> 7) & 31, (w >> 12) & 7, (w >> 15) & 31, (w >> 20) & 31, w >> 25
        imm_i = _sext(w >> 20, 12)
        if op == 0x37:  # lui
            self.put(rd, self.const(_sext(w & 0xFFFFF000, 32)), _sext(w & 0xFFFFF000, 32))
        elif op == 0x17:  # auipc
            self.put(rd, self.const(pc + _sext(w & 0xFFFFF000, 32)), pc + _sext(w & 0xFFFFF000, 32))
        elif op == 0x6F:  # jal
            imm = jal_offset(w)
            self.put(rd, self.const(pc + 4))
            callee = (pc + imm) & ((1 << xlen) - 1)
            if rd == 1 and callee in self.owner:
                self.call(callee, pc + 4)
            else:
                self.go(callee)
            return True
        elif op == 0x67 and f3 == 0:  # jalr
            base = self.known.get(rs1)
            if base is not None:  # auipc + jalr (a call or jump the assembler could not reach with jal)
                target = (base + imm_i) & ((1 << xlen) - 1) & ~1
                self.put(rd, self.const(pc + 4))
                if rd == 1 and target in self.owner:
                    self.call(target, pc + 4)
                else:
                    self.go(target)
                return True
            dynamic = self.op(f"and {t} {self.op(f'add {t} {self.get(rs1)}, {imm_i}')}, -2")
            self.put(rd, self.const(pc + 4))
            if rd == 1:
                self.call_dynamic(dynamic, pc + 4)
            else:
                self.go_dynamic(dynamic, within=rs1 != 1)
            return True
        elif op == 0x63 and f3 not in (2, 3):  # branches
            imm = branch_offset(w)
            cond = ("eq", "ne", "", "", "slt", "sge", "ult", "uge")[f3]
            taken = self.op(f"icmp {cond} {t} {self.get(rs1)}, {self.get(rs2)}")
            yes, no = self.new_label("taken"), self.new_label("fall")
            self.emit(f"br i1 {taken}, label %{yes}, label %{no}")
            self.label(yes)
            self.go((pc + imm) & ((1 << xlen) - 1))
            self.label(no)
            self.go(pc + 4)
            return True
        elif op == 0x03:  # loads
            kinds = {0: (8, "sext"), 1: (16, "sext"), 2: (32, "sext"), 4: (8, "zext"), 5: (16, "zext")}
            if xlen == 64:
                kinds |= {3: (64, ""), 6: (32, "zext")}
            if f3 not in kinds:
                raise _Unknown
            bits, extend = kinds[f3]
            wide, ptr = self.address(rs1, imm_i)
            value = self.op(f"load i{bits}, ptr {ptr}, align 1, !tbaa !2")
            self.access(wide, bits // 8, 0, position)
            self.put(rd, self.op(f"{extend} i{bits} {value} to {t}") if bits < xlen else value)
        elif op == 0x23:  # stores
            if f3 > (3 if xlen == 64 else 2):
                raise _Unknown
            bits = 8 << f3
            imm = _sext((f7 << 5) | ((w >> 7) & 31), 12)
            wide, ptr = self.address(rs1, imm)
            value = self.get(rs2)
            if bits < xlen:
                value = self.op(f"trunc {t} {value} to i{bits}")
            self.emit(f"store i{bits} {value}, ptr {ptr}, align 1, !tbaa !2")
            self.access(wide, bits // 8, 1, position)
        elif op == 0x13:  # immediate arithmetic
            known = self.known.get(rs1, 0 if rs1 == 0 else None) if f3 == 0 else None
            self.put(rd, self._imm(f3, w, self.get(rs1), imm_i, xlen, t), None if known is None else known + imm_i)
        elif op == 0x33 and f7 in (0, 0x20, 1):
            self.put(rd, self._reg(f3, f7, self.get(rs1), self.get(rs2), xlen, t))
        elif op == 0x1B and xlen == 64:  # addiw, slliw, srliw, sraiw
            low = self.op(f"trunc i64 {self.get(rs1)} to i32")
            self.put(rd, self.op(f"sext i32 {self._imm(f3, w, low, imm_i, 32, 'i32')} to i64"))
        elif op == 0x3B and xlen == 64 and f7 in (0, 0x20, 1):
            a = self.op(f"trunc i64 {self.get(rs1)} to i32")
            b = self.op(f"trunc i64 {self.get(rs2)} to i32")
            if f7 == 1 and f3 in (1, 2, 3):
                raise _Unknown
            if f7 != 1 and f3 not in (0, 1, 5):
                raise _Unknown
            self.put(rd, self.op(f"sext i32 {self._reg(f3, f7, a, b, 32, 'i32')} to i64"))
        elif op == 0x2F and f3 in ((2, 3) if xlen == 64 else (2,)) and w >> 27 in (2, 3):  # lr, sc
            self._reserve(w >> 27 == 3, f3, rd, rs1, rs2, position)
        elif op == 0x0F and f3 == 0:  # fence: nothing to order in one hart
            pass
        elif w == 0x00000073:  # ecall
            self.leave(str(pc + 4), ECALL)
            return True
        else:
            raise _Unknown
        return False

    def _reserve(self, store: bool, f3: int, rd: int, rs1: int, rs2: int, position: int) -> None:
        """``lr``: load and reserve. ``sc``: store if the address is the reserved one and memory still
        holds the value ``lr`` read (a compare-and-exchange, one store access), else no access; rd
        is 0 on success, 1 on failure; the reservation ends either way."""
        t, bits = self.t, 32 if f3 == 2 else 64
        wide, ptr = self.address(rs1, 0)
        at = self.op(f"getelementptr i8, ptr %x, i64 {_RESERVED}")
        value_at = self.op(f"getelementptr i8, ptr %x, i64 {_RESERVED_VALUE}")
        if not store:
            value = self.op(f"load i{bits}, ptr {ptr}, align 1, !tbaa !2")
            self.access(wide, bits // 8, 0, position)
            if bits < self.xlen:
                value = self.op(f"sext i{bits} {value} to {t}")
            self.emit(f"store i64 {wide}, ptr {at}")
            self.emit(f"store {t} {value}, ptr {value_at}")
            self.put(rd, value)
            return
        reserved = self.op(f"icmp eq i64 {self.op(f'load i64, ptr {at}')}, {wide}")
        before, yes, done = self.current, self.new_label("sc"), self.new_label("sc.done")
        self.emit(f"br i1 {reserved}, label %{yes}, label %{done}")
        self.label(yes)
        expected = self.op(f"load {t}, ptr {value_at}")
        new = self.get(rs2)
        if bits < self.xlen:
            expected = self.op(f"trunc {t} {expected} to i{bits}")
            new = self.op(f"trunc {t} {new} to i{bits}")
        old = self.op(f"load i{bits}, ptr {ptr}, align 1, !tbaa !2")
        same = self.op(f"icmp eq i{bits} {old}, {expected}")
        chosen = self.op(f"select i1 {same}, i{bits} {new}, i{bits} {old}")
        self.emit(f"store i{bits} {chosen}, ptr {ptr}, align 1, !tbaa !2")
        self.access(wide, bits // 8, 1, position)
        failed = self.op(f"zext i1 {self.op(f'xor i1 {same}, true')} to {t}")
        self.emit(f"br label %{done}")
        self.label(done)
        outcome = self.op(f"phi {t} [ 1, %{before} ], [ {failed}, %{yes} ]")
        self.emit(f"store i64 -1, ptr {at}")
        self.put(rd, outcome)

    def _imm(self, f3: int, w: int, a: str, imm: int, bits: int, t: str) -> str:
        if f3 in (1, 5):  # shifts
            shamt_bits = 6 if bits == 64 else 5
            shamt = (w >> 20) & ((1 << shamt_bits) - 1)
            high = w >> (20 + shamt_bits)
            if f3 == 1 and high == 0:
                return self.op(f"shl {t} {a}, {shamt}")
            if f3 == 5 and high == 0:
                return self.op(f"lshr {t} {a}, {shamt}")
            if f3 == 5 and high == 0x400 >> shamt_bits:
                return self.op(f"ashr {t} {a}, {shamt}")
            raise _Unknown
        if bits == 32 and t == "i32" and self.xlen == 64 and f3 != 0:
            raise _Unknown  # of the OP-IMM-32 group only addiw has no shift
        c = str(imm)
        if f3 == 0:
            return self.op(f"add {t} {a}, {c}")
        if f3 in (2, 3):
            flag = self.op(f"icmp {'slt' if f3 == 2 else 'ult'} {t} {a}, {c}")
            return self.op(f"zext i1 {flag} to {t}")
        return self.op(f"{('', '', '', '', 'xor', '', 'or', 'and')[f3]} {t} {a}, {c}")

    def _reg(self, f3: int, f7: int, a: str, b: str, bits: int, t: str) -> str:
        if f7 == 1:
            return self._muldiv(f3, a, b, bits, t)
        if f7 == 0x20 and f3 not in (0, 5):
            raise _Unknown
        if f3 in (1, 5):
            amount = self.op(f"and {t} {b}, {bits - 1}")
            kind = "shl" if f3 == 1 else ("ashr" if f7 == 0x20 else "lshr")
            return self.op(f"{kind} {t} {a}, {amount}")
        if f3 in (2, 3):
            flag = self.op(f"icmp {'slt' if f3 == 2 else 'ult'} {t} {a}, {b}")
            return self.op(f"zext i1 {flag} to {t}")
        name = ("sub" if f7 == 0x20 else "add", "", "", "", "xor", "", "or", "and")[f3]
        return self.op(f"{name} {t} {a}, {b}")

    def _muldiv(self, f3: int, a: str, b: str, bits: int, t: str) -> str:
        if f3 == 0:
            return self.op(f"mul {t} {a}, {b}")
        if f3 in (1, 2, 3):  # high halves
            wide = f"i{2 * bits}"
            ea = self.op(f"{'zext' if f3 == 3 else 'sext'} {t} {a} to {wide}")
            eb = self.op(f"{'sext' if f3 == 1 else 'zext'} {t} {b} to {wide}")
            product = self.op(f"mul {wide} {ea}, {eb}")
            return self.op(f"trunc {wide} {self.op(f'lshr {wide} {product}, {bits}')} to {t}")
        # division: by zero and the one signed overflow as RISC-V defines them
        zero = self.op(f"icmp eq {t} {b}, 0")
        signed = f3 in (4, 6)
        if signed:
            minimum = str(-(1 << (bits - 1)))
            overflow = self.op(f"and i1 {self.op(f'icmp eq {t} {a}, {minimum}')}, {self.op(f'icmp eq {t} {b}, -1')}")
            unsafe = self.op(f"or i1 {zero}, {overflow}")
        else:
            unsafe = zero
        divisor = self.op(f"select i1 {unsafe}, {t} 1, {t} {b}")
        name = {4: "sdiv", 5: "udiv", 6: "srem", 7: "urem"}[f3]
        result = self.op(f"{name} {t} {a}, {divisor}")
        if f3 in (4, 5):  # x / 0 = all ones; MIN / -1 = MIN
            if signed:
                result = self.op(f"select i1 {overflow}, {t} {a}, {t} {result}")
            return self.op(f"select i1 {zero}, {t} -1, {t} {result}")
        if signed:  # MIN % -1 = 0
            result = self.op(f"select i1 {overflow}, {t} 0, {t} {result}")
        return self.op(f"select i1 {zero}, {t} {a}, {t} {result}")


def _function(
    xlen: int,
    name: str,
    blocks: list[Block],
    index: dict[int, int],
    hot: Mapping[int, Sequence[Sequence[int] | None]],
    owner: dict[int, str],
) -> _Lifted:
    """One LLVM function for ``blocks`` (of one ELF function). The executor's hooks inline into the
    ``hot`` blocks, with their models' data as constants (see :func:`translate`); a function with
    none is not optimised."""
    here = {b.pc: f"b{b.pc:x}" for b in blocks}
    e = _Emitter(xlen, index, here, owner)
    cold = "" if any(b.pc in hot for b in blocks) else " noinline optnone"
    covers = _covers(blocks, hot, owner)
    covered_by: dict[int, list[Block]] = {}
    for block in blocks:
        for target in covers.get(block.pc, ()):
            covered_by.setdefault(target.pc, []).append(block)
    regions = _regions(blocks, hot, owner)
    for block in blocks:
        e.label(here[block.pc])
        e.hook = "" if block.pc in hot else "_cold"
        e.known = {}
        e.groups = _access_groups(block.words) if block.pc in hot else {}
        e.block_pc, e.block_number = block.pc, index[block.pc]
        e.cover = {t.pc for t in covers.get(block.pc, ())}
        if block.pc in regions.checks:
            _region_check(e, block.pc)
        _enter(e, block, index[block.pc], hot.get(block.pc), covers.get(block.pc, []), covered_by.get(block.pc, []))
        _body(e, block)
    if regions.checks:
        _unchecked(e, blocks, regions, index, hot)
    e.block_number = None  # no block of the function: the run's current block stays as it was
    e.label("unknown")
    e.leave("%pc", UNKNOWN)
    e.label("fault")
    e.leave("%pc", FAULT)
    e.label("exit")
    e.emit(f"%reason.at = getelementptr i8, ptr %x, i64 {_REASON}")
    e.emit("%reason = load i32, ptr %why")
    e.emit("store i32 %reason, ptr %reason.at")
    for line in e.state_out(e.written):
        e.emit(line)
    e.emit("%next = load i64, ptr %npc")
    e.emit("ret i64 %next")
    body = e.lines
    e.lines = []
    if regions.checks:
        _longest(e, blocks, regions)
    ways = e.lines
    # The guest registers the function uses, and the instructions executed, are locals: loaded on
    # entry and stored back on return, and around host calls of other translated functions.
    e.lines = [f"define internal i64 @{name}(ptr noalias %x, i64 %pc){cold} {{", "entry:"]
    e.emit("%npc = alloca i64")
    e.emit("%why = alloca i32")
    e.emit("%exec.at = alloca i64")
    if covers:
        e.emit("%cover.at = alloca i1")
        e.emit("store i1 0, ptr %cover.at")
    for r in sorted(e.used):
        e.emit(f"%r{r}.at = alloca {e.t}")
    e.emit(f"%mem.at = getelementptr i8, ptr %x, i64 {_MEM}")
    e.emit("%mem = load ptr, ptr %mem.at")
    for r in sorted(e.used):
        e.emit(f"%r{r}.x = getelementptr i8, ptr %x, i64 {8 * r}")
    for line in e.state_in(e.used):
        e.emit(line)
    e.lines += ways
    cases = " ".join(f"i64 {b.pc}, label %{here[b.pc]}" for b in blocks)
    e.emit(f"switch i64 %pc, label %unknown [ {cases} ]")
    return _Lifted(name, e, e.lines, body, [b.pc for b in blocks])


def _body(e: _Emitter, block: Block) -> None:
    """A block's instructions, after its start, and where it goes at its end."""
    pc, ended = block.pc, False
    for position, word in enumerate(block.words):
        mark = len(e.lines)
        try:
            ended = e.instruction(word, pc, position)
        except _Unknown:
            del e.lines[mark:]
            e.leave(str(pc), UNKNOWN)
            ended = True
            break
        pc += 4
    if block.marker:
        e.leave(str(pc + 4), MARKER)
    elif not ended:
        e.go(pc)


def _successors(block: Block, owner: Mapping[int, str]) -> list[int] | None:
    """Where a block goes next within the translation without other code running first: the target
    of its branch or jump and where it falls through; None for one that calls (its callee runs
    first, and the call returns to a block of its own), jumps through a register, makes a system
    call or ends at a marker."""
    if not block.words or block.marker:
        return None
    last = block.pc + 4 * (len(block.words) - 1)
    w = block.words[-1]
    op, rd = w & 0x7F, (w >> 7) & 31
    if op == 0x63 and (w >> 12) & 7 not in (2, 3):
        return [last + branch_offset(w), last + 4]
    if op == 0x6F:
        target = last + jal_offset(w)
        return None if rd == 1 and target in owner else [target]
    if _ends_block(w):
        return None
    return [last + 4]


@dataclass
class _Regions:
    """A function's hot blocks for its unchecked copy (:func:`_unchecked`): ``checks``, where the
    copy is entered after a check for the longest way on to the next check (the blocks other code
    enters: the function's entries, a call's return, the heads of loops, so that every way round a
    loop has one), and for each block, where it goes within the copy (``succ``), in an order where
    each comes before the blocks it goes to that are not checks (``order``)."""

    checks: set[int]
    succ: dict[int, list[int]]
    order: list[int]


def _regions(blocks: Sequence[Block], hot: Container[int], owner: Mapping[int, str]) -> _Regions:
    by_pc = {b.pc: b for b in blocks}
    members = [b for b in blocks if b.pc in hot and b.words and not b.marker]
    succ = {b.pc: [t for t in dict.fromkeys(_successors(b, owner) or ()) if t in by_pc] for b in members}
    entered = {t for targets in succ.values() for t in targets}
    checks = {b.pc for b in members if b.pc not in entered}  # entered from elsewhere only
    for b in blocks:  # a call's return
        last = b.words[-1] if b.words else 0
        if b.words and _successors(b, owner) is None and last & 0x7F in (0x6F, 0x67) and (last >> 7) & 31 == 1:
            checks.add(b.pc + 4 * len(b.words))
    checks |= _depth_first(succ, lambda t: True)[1]  # the heads of loops
    order = _depth_first(succ, lambda t: t not in checks)[0]  # edges to checks left out: no cycle
    return _Regions(checks & set(succ), succ, order)


def _depth_first(succ: Mapping[int, list[int]], follow: Callable[[int], bool]) -> tuple[list[int], set[int]]:
    """A depth-first search of the blocks ``succ`` has, from each in address order, along the edges
    to those ``follow`` accepts: the blocks in postorder (each after those it goes to, where the
    edges followed form no cycle), and the targets of back edges (one on every cycle)."""
    order: list[int] = []
    heads: set[int] = set()
    state: dict[int, int] = {}  # 1 on the path, 2 done
    for root in sorted(succ):
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(succ[root]))]
        while stack:
            pc, rest = stack[-1]
            for t in rest:
                if t not in succ or not follow(t):
                    continue
                if state.get(t) == 1:
                    heads.add(t)
                elif t not in state:
                    state[t] = 1
                    stack.append((t, iter(succ[t])))
                    break
            else:
                state[pc] = 2
                order.append(pc)
                stack.pop()
    return order, heads


def _longest(e: _Emitter, blocks: Sequence[Block], regions: _Regions) -> None:
    """Emit, for the function's entry, each unchecked block's longest way from its start to the
    next check, in instructions and the models' slack of each block on it (``%way.<pc>``;
    constants once the hooks are inlined)."""
    by_pc = {b.pc: b for b in blocks}
    for pc in regions.order:  # the blocks a block goes to come first
        block = by_pc[pc]
        most = "0"
        for t in regions.succ[pc]:
            if t in regions.succ and t not in regions.checks:
                most = e.op(f"call i64 @llvm.umax.i64(i64 {most}, i64 %way.{t:x})")
        e.emit(f"%way.{pc:x} = add i64 {e.op(f'add i64 {_slack(e, block)}, {len(block.words)}')}, {most}")


def _region_check(e: _Emitter, pc: int) -> None:
    """At a check of the unchecked copy: where the models allow it (``rvt_regions``) and the limit
    leaves room for the longest way from here to the next check (each block with its slack), the
    copy runs from here; else the blocks as they are, each with its own check. Within that room
    every block on the way would have found room at its own check: each block's slack covers what
    its models' hooks may take from the limit."""
    end = e.op(f"add i64 {e.op('load i64, ptr %exec.at')}, %way.{pc:x}")
    fits = e.op(f"icmp ule i64 {end}, {e.op('load i64, ptr @rvt_limit')}")
    can = e.op(f"icmp ne i32 {e.op('call i32 @rvt_regions()')}, 0")
    checked = e.new_label("checked")
    e.emit(f"br i1 {e.op(f'and i1 {can}, {fits}')}, label %u{pc:x}, label %{checked}")
    e.label(checked)


def _unchecked(
    e: _Emitter,
    blocks: Sequence[Block],
    regions: _Regions,
    index: dict[int, int],
    hot: Mapping[int, Sequence[Sequence[int] | None]],
) -> None:
    """The copy of the function's hot blocks that start without a check of their own, with room (as
    :func:`_region_check` found): they go to each other's copies, and to their checked starts at a
    check or outside the copy."""
    checked = e.here
    e.here = {**checked, **{pc: f"u{pc:x}" for pc in regions.succ if pc not in regions.checks}}
    by_pc = {b.pc: b for b in blocks}
    entering: dict[int, list[Block]] = {}  # the blocks of the copy that go to a block's copy
    for pc, targets in regions.succ.items():
        for t in targets:
            if t in regions.succ and t not in regions.checks:
                entering.setdefault(t, []).append(by_pc[pc])
    for block in blocks:
        if block.pc not in regions.succ:
            continue
        e.label(f"u{block.pc:x}")
        e.hook, e.known, e.cover = "", {}, set()
        e.groups = _access_groups(block.words)
        e.block_pc, e.block_number = block.pc, index[block.pc]
        executed = e.op(f"add i64 {e.op('load i64, ptr %exec.at')}, {len(block.words)}")
        # Its code lies on pages the blocks entering it lie on, which are in, with the room found
        into, pages = entering.get(block.pc, []), _pages(block)
        follows = int(bool(into) and all(pages <= _pages(b) for b in into))
        _start(e, block, index[block.pc], hot.get(block.pc), executed, 1, follows)
        _body(e, block)
    e.here = checked


@dataclass(eq=False)
class _Lifted:
    """A translated function before its host calls' state lines are written (they depend on what
    the functions it calls do): its emitter, the lines up to its first block, and the rest."""

    name: str
    emitter: _Emitter
    head: list[str]
    body: list[str]
    starts: list[int]  # the blocks it can start at

    def text(self, reach: Mapping[str, tuple[frozenset[int], frozenset[int]]]) -> str:
        """The function's IR, where ``reach`` gives for each translated function the registers it
        and what it calls may read or write, and those they may write: before a host call, the
        locals the caller wrote and the callee may read or write go out (the callee loads those it
        uses and stores those it writes); after it, those the callee may write come back."""
        e, lines = self.emitter, list(self.head)
        placeholder = f"  {_STATE}"  # as the emitter indents it
        for line in self.body:
            if not line.startswith(placeholder):
                lines.append(line)
                continue
            tag, _, callee = line.strip().rpartition(" ")
            if tag == _STATE_OUT:
                touched = reach[callee][0] if callee != _ANY else _REGISTERS
                lines += ["  " + text for text in e.state_out(e.written & touched)]
            elif tag == _STATE_IN:
                changed = reach[callee][1] if callee != _ANY else _REGISTERS
                lines += ["  " + text for text in e.state_in(e.used & changed)]
        lines.append("}")
        return "\n".join(lines)


def _reach(functions: Iterable[_Lifted]) -> dict[str, tuple[frozenset[int], frozenset[int]]]:
    """For each function, the guest registers it and the functions it calls (transitively) may read
    or write, and those they may write; all of them for one that calls a function found at run
    time."""
    functions = list(functions)
    touched = {f.name: set(f.emitter.used) for f in functions}
    changed = {f.name: set(f.emitter.written) for f in functions}
    for f in functions:
        if _ANY in f.emitter.callees:
            touched[f.name] |= _REGISTERS
            changed[f.name] |= _REGISTERS
    growing = True
    while growing:
        growing = False
        for f in functions:
            for callee in f.emitter.callees - {_ANY}:
                if not (touched[callee] <= touched[f.name] and changed[callee] <= changed[f.name]):
                    touched[f.name] |= touched[callee]
                    changed[f.name] |= changed[callee]
                    growing = True
    return {name: (frozenset(touched[name]), frozenset(changed[name])) for name in touched}


def _enter(
    e: _Emitter,
    block: Block,
    number: int,
    data: Sequence[Sequence[int] | None] | None,
    covers: Sequence[Block] = (),
    covered_by: Sequence[Block] = (),
) -> None:
    """A block's start: the instructions executed and the limit, its count in the run
    (``rvt_counts``; the first entry checks the block in guest memory against the translation) and
    the models' block hook (inlined where ``data`` is given, that is, in a hot block).

    Where the models allow it (``rvt_covers``, a constant), a hot block's check also covers the hot
    blocks it may go to directly (``covers``): where it finds room for itself and for the largest of
    them, they start unchecked (their second start, for the blocks in ``covered_by``), with room,
    and tell the models' hook whether their code lies on the pages of every block that enters them
    so (``RVX_FOLLOWS``)."""
    n = len(block.words)
    # Past rvt_limit (the instruction limit, where a cut-off looks at the models' clocks next, or
    # the models' room), the executor says whether the block may start: before it is counted. A hot
    # block checks its end plus the models' slack for it (a constant), so that within the limit the
    # models' hooks know that they have room, and have a copy of the block's start each way.
    before = e.op("load i64, ptr %exec.at")
    executed = e.op(f"add i64 {before}, {n}")
    end, can = executed, "false"
    if not e.hook:
        end = e.op(f"add i64 {executed}, {_slack(e, block)}")
        if covers:
            most = "0"
            for target in covers:
                need = e.op(f"add i64 {_slack(e, target)}, {len(target.words)}")
                most = e.op(f"call i64 @llvm.umax.i64(i64 {most}, i64 {need})")
            can = e.op(f"icmp ne i32 {e.op('call i32 @rvt_covers()')}, 0")
            end = e.op(f"add i64 {end}, {e.op(f'select i1 {can}, i64 {most}, i64 0')}")
    over, go = e.new_label("over"), e.new_label("go")
    limit = e.op("load i64, ptr @rvt_limit")
    e.emit(f"br i1 {e.op(f'icmp ugt i64 {end}, {limit}')}, label %{over}, label %{go}, !prof {_RARE}")
    e.label(over)
    why = e.op(f"call i32 @rvt_over(i64 {before}, i32 {n})")
    stop, goes = e.new_label("stop"), e.new_label("goes")
    e.emit(f"br i1 {e.op(f'icmp ne i32 {why}, 0')}, label %{stop}, label %{goes}")
    e.label(stop)
    e.leave(str(block.pc), why)
    e.label(goes)
    if e.hook:
        e.emit(f"br label %{go}")
        e.label(go)
        _start(e, block, number, data, executed, 0)
        return
    body = e.new_label("body")
    if covers:
        e.emit("store i1 0, ptr %cover.at")
    _start(e, block, number, data, executed, 0)
    e.emit(f"br label %{body}")
    e.label(go)
    if covers:
        e.emit(f"store i1 {can}, ptr %cover.at")
    _start(e, block, number, data, executed, 1)
    e.emit(f"br label %{body}")
    if covered_by:
        e.label(f"{e.here[block.pc]}.s")
        if covers:
            e.emit("store i1 0, ptr %cover.at")
        executed = e.op(f"add i64 {e.op('load i64, ptr %exec.at')}, {n}")
        pages = _pages(block)
        _start(e, block, number, data, executed, 1, int(all(pages <= _pages(b) for b in covered_by)))
        e.emit(f"br label %{body}")
    e.label(body)


def _slack(e: _Emitter, block: Block) -> str:
    """The models' slack for a hot block (a constant once the hooks are inlined)."""
    n, nmem = len(block.words), sum(map(accesses, block.words))
    return e.op(f"call i64 @rvt_slack(i64 {block.pc}, i32 {n}, i32 {nmem})")


def _pages(block: Block) -> set[int]:
    """The 1 KiB pages a block's instructions lie on."""
    return {(block.pc + 4 * i) >> 10 for i in range(len(block.words))}


#: The most accesses a block covered by another's check makes: one with more has a larger slack,
#: which would widen the covering check, and more work of its own, next to which its check costs
#: less (at most one measured fastest on json, wordfreq and yyjson, docs/cost-models.md).
_COVERED_ACCESSES = 1


def _covers(blocks: Sequence[Block], hot: Container[int], owner: Mapping[int, str]) -> dict[int, list[Block]]:
    """For each hot block, the hot blocks of the same function with instructions and at most
    :data:`_COVERED_ACCESSES` accesses that it goes to directly: the target of its branch or jump and
    where it falls through (not a call's return, where the callee ran in between)."""
    by_pc = {b.pc: b for b in blocks}
    out: dict[int, list[Block]] = {}
    for block in blocks:
        if block.pc not in hot:
            continue
        targets = _successors(block, owner) or []
        found = [
            by_pc[t]
            for t in dict.fromkeys(targets)
            if t in by_pc and t in hot and by_pc[t].words and sum(map(accesses, by_pc[t].words)) <= _COVERED_ACCESSES
        ]
        if found:
            out[block.pc] = found
    return out


def _start(
    e: _Emitter,
    block: Block,
    number: int,
    data: Sequence[Sequence[int] | None] | None,
    executed: str,
    roomy: int,
    follows: int = 0,
) -> None:
    """A block that may start: counted, its first entry checked, the models' block hook told."""
    slot = f"getelementptr ([{len(e.index)} x ptr], ptr @rvt_block_slot, i64 0, i64 {number})"
    counter = f"getelementptr ([{len(e.index)} x i64], ptr @rvt_counts, i64 0, i64 {number})"
    tables = _tables(block.pc, data)
    count = e.op(f"load i64, ptr {counter}")
    if _ready(data):  # checked before the run starts (rvt_ready)
        e.emit(f"store i64 {e.op(f'add i64 {count}, 1')}, ptr {counter}")
        _started(e, block, slot, tables, executed, roomy, follows)
        return
    n, nmem = len(block.words), sum(map(accesses, block.words))
    first, counted = e.new_label("first"), e.new_label("counted")
    e.emit(f"br i1 {e.op(f'icmp eq i64 {count}, 0')}, label %{first}, label %{counted}, !prof {_RARE}")
    e.label(first)
    checked = e.op(
        f"call i32 @rvt_first_entry(ptr {slot}, i64 {block.pc}, i32 {block.size}, i32 {n}, i32 {nmem}, {tables})"
    )
    changed = e.new_label("changed")
    e.emit(f"br i1 {e.op(f'icmp ne i32 {checked}, 0')}, label %{changed}, label %{counted}, !prof {_RARE}")
    e.label(changed)
    e.leave(str(block.pc), CHANGED)
    e.label(counted)
    e.emit(f"store i64 {e.op(f'add i64 {count}, 1')}, ptr {counter}")
    _started(e, block, slot, tables, executed, roomy, follows)


def _started(e: _Emitter, block: Block, slot: str, tables: str, executed: str, roomy: int, follows: int) -> None:
    """A block counted: the instructions executed, and the models' block hook."""
    n, nmem = len(block.words), sum(map(accesses, block.words))
    e.emit(f"store i64 {executed}, ptr %exec.at")
    if n == 0:
        return
    if e.hook:
        e.emit(f"call void @rvt_block_cold(ptr {slot}, i64 {executed})")
    else:
        args = f"i64 {block.pc}, i32 {n}, i32 {nmem}, {tables}, i64 {executed}, i32 {roomy}, i32 {follows}"
        e.emit(f"call void @rvt_block(ptr {slot}, {args})")


def _tables(pc: int, data: Sequence[Sequence[int] | None] | None) -> str:
    """The arguments naming a hot block's tables of models' data (:func:`_block_data`), or nulls."""
    return f"ptr @rvt_dt{pc:x}, ptr @rvt_dl{pc:x}" if data is not None and any(data) else "ptr null, ptr null"


def _ready(data: Sequence[Sequence[int] | None] | None) -> bool:
    """Whether a hot block's every model's data is in the translation (empty for a model without
    block data): the executor then finds the block, and checks it against guest memory, before the
    run starts (``rvt_ready``), and its count needs no check for a first entry."""
    return data is not None and all(d is not None for d in data)


def _ready_table(
    blocks: list[Block], index: dict[int, int], hot: Mapping[int, Sequence[Sequence[int] | None]]
) -> list[str]:
    """``rvt_ready``: the blocks :func:`_ready` says the executor finds before a run starts, each as
    its pc, number, size, instructions, accesses and data tables (``rvt_ready_count`` of them)."""
    rows = []
    for b in blocks:
        data = hot.get(b.pc)
        if b.pc in hot and _ready(data):
            n, nmem = len(b.words), sum(map(accesses, b.words))
            tables = _tables(b.pc, data)
            rows.append(f"{_READY} {{ i64 {b.pc}, i32 {index[b.pc]}, i32 {b.size}, i32 {n}, i32 {nmem}, {tables} }}")
    values = f"[{', '.join(rows)}]" if rows else "zeroinitializer"
    return [
        f"@rvt_ready_count = constant i32 {len(rows)}",
        f"@rvt_ready = constant [{len(rows)} x {_READY}] {values}",
    ]


#: A row of ``rvt_ready`` (``rvt_ready_block`` in rv_executor.c).
_READY = "{ i64, i32, i32, i32, i32, ptr, ptr }"


def _code_ranges(blocks: list[Block]) -> list[tuple[int, int]]:
    """The page-aligned ranges [start, end) of guest memory that hold the translated code."""
    ranges: list[tuple[int, int]] = []
    for block in blocks:
        start = block.pc // PAGE * PAGE
        end = (block.pc + 4 * block.size + PAGE - 1) // PAGE * PAGE
        if ranges and start <= ranges[-1][1]:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], end))
        else:
            ranges.append((start, end))
    return ranges


def _block_data(hot: Mapping[int, Sequence[Sequence[int] | None]]) -> list[str]:
    """Constants with the models' data of the hot blocks: per block, the table of each model's
    data (``rvt_dt<pc>``, null for a model without) and of its lengths (``rvt_dl<pc>``)."""
    out = []
    for pc, per_model in sorted(hot.items()):
        if not any(per_model):
            continue
        pointers, lengths = [], []
        for m in range(MAX_MODELS):
            data = per_model[m] if m < len(per_model) else None
            if data:
                values = ", ".join(f"i32 {v}" for v in data)
                out.append(f"@rvt_d{pc:x}_{m} = private unnamed_addr constant [{len(data)} x i32] [{values}]")
                pointers.append(f"ptr @rvt_d{pc:x}_{m}")
                lengths.append(f"i32 {len(data)}")
            else:
                pointers.append("ptr null")
                lengths.append("i32 0")
        out.append(f"@rvt_dt{pc:x} = private unnamed_addr constant [{MAX_MODELS} x ptr] [{', '.join(pointers)}]")
        out.append(f"@rvt_dl{pc:x} = private unnamed_addr constant [{MAX_MODELS} x i32] [{', '.join(lengths)}]")
    return out


def translate(
    image: Image, starts: Iterable[int], hot: Mapping[int, Sequence[Sequence[int] | None]] | None = None
) -> str:
    """LLVM IR for the blocks unicorn forms from ``starts`` (the starts of blocks that ran; the
    executor's hooks inline into those in ``hot``, with each model's data for the block, in the
    order of the executor's models, as constants: None where the host gives it at the first
    entry; the rest call them), with the
    tables the executor's dispatcher reads: ``rvt_entry_pc``/``rvt_entry_code`` (sorted by pc),
    ``rvt_entry_count``, ``rvt_block_count`` and the pages of the code (``rvt_code_ranges``,
    start and end pairs, ``rvt_code_range_count`` of them)."""
    blocks = blocks_at(image, starts)
    index = {b.pc: i for i, b in enumerate(blocks)}
    function_starts = [f[0] for f in image.functions]
    groups: dict[int, list[Block]] = {}
    for block in blocks:
        i = bisect.bisect_right(function_starts, block.pc) - 1
        inside = i >= 0 and block.pc < image.functions[i][0] + image.functions[i][1]
        groups.setdefault(image.functions[i][0] if inside else block.pc, []).append(block)
    hot = hot or {}
    parts = [
        *_block_data(hot),
        "declare i32 @rvt_first_entry(ptr, i64, i32, i32, i32, ptr, ptr)",
        "declare void @rvt_block(ptr, i64, i32, i32, ptr, ptr, i64, i32, i32)",
        "declare i64 @llvm.umax.i64(i64, i64)",
        "declare i32 @rvt_covers()",
        "declare i32 @rvt_regions()",
        "declare i64 @rvt_slack(i64, i32, i32)",
        "declare void @rvt_access(i64, i32, i32, i32)",
        "declare void @rvt_block_cold(ptr, i64)",
        "declare void @rvt_access_cold(i64, i32, i32, i32)",
        "declare i32 @rvt_accesses_done(i64, i64, i32)",
        "declare void @rvt_access_unless(i32, i64, i32, i32, i32)",
        "declare ptr @rvt_find(i64)",
        "declare i32 @rvt_over(i64, i32)",
        "@rvt_depth = external global i32",
        "@rvt_executed = external global i64",
        "@rvt_limit = external global i64",
        "@rvt_current = external global i32",
    ]
    owner = {b.pc: f"rvt_f{start:x}" for start, group in groups.items() for b in group}
    functions = [
        _function(image.xlen, f"rvt_f{start:x}", group, index, hot, owner) for start, group in sorted(groups.items())
    ]
    reach = _reach(functions)
    entries: list[tuple[int, str]] = []
    for function in functions:
        parts.append(function.text(reach))
        entries.extend((pc, function.name) for pc in function.starts)
    entries.sort()
    n = len(entries)
    parts.append(f"@rvt_block_count = constant i32 {len(blocks)}")
    parts.append(f"@rvt_block_slot = global [{len(blocks)} x ptr] zeroinitializer")
    parts.append(f"@rvt_counts = global [{len(blocks)} x i64] zeroinitializer")
    parts += _ready_table(blocks, index, hot)
    parts.append(f"@rvt_entry_count = constant i32 {n}")
    ranges = _code_ranges(blocks)
    parts.append(f"@rvt_code_range_count = constant i32 {len(ranges)}")
    parts.append(
        f"@rvt_code_ranges = constant [{2 * len(ranges)} x i64] [{', '.join(f'i64 {v}' for r in ranges for v in r)}]"
    )
    parts.append(f"@rvt_entry_pc = constant [{n} x i64] [{', '.join(f'i64 {pc}' for pc, _ in entries)}]")
    parts.append(f"@rvt_entry_code = constant [{n} x ptr] [{', '.join(f'ptr @{name}' for _, name in entries)}]")
    parts.append(_GUEST_MEMORY)
    return "\n\n".join(parts) + "\n"
