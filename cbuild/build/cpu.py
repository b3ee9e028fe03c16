"""The canonical CPU: one answer to "which x86-64 features are there?" on every machine.

Libraries that choose a kernel at run time (simdjson, zstd's BMI2 paths, xxHash's
dispatcher, ``target_clones``) would run, and count, different code on different
hosts. Before instrumentation the linked module is rewritten so that every such
question goes to the runtime's tables for one psABI level (``runtime/canonical_cpu.c``):

* ``cpuid`` and ``xgetbv`` inline assembly become calls of small functions added to the
  module, one per shape of statement (which registers it reads back), that fetch the
  answer from ``__instrbudget_cpuid_into`` / ``__instrbudget_xgetbv_into``; they are
  counted like the program's own code, the same on every machine;
* the ``llvm.x86.xgetbv`` intrinsic (``_xgetbv``) becomes ``__instrbudget_xgetbv64``;
* compiler-rt's ``__cpu_model``, ``__cpu_features2`` and ``__cpu_indicator_init``, which
  ``__builtin_cpu_supports``, ``__builtin_cpu_init`` and function multiversioning use,
  become the level's constant tables.

The module also gets ``__instrbudget_cpu_level``, which the runtime checks against
the host at start-up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cbuild.errors import CBuildError, InstrumentError

#: Accepted levels (the x86-64 psABI's), and the number the runtime knows each by.
CPU_LEVELS = {"x86-64": 1, "x86-64-v2": 2, "x86-64-v3": 3, "x86-64-v4": 4}
DEFAULT_CPU = "x86-64-v2"

_ASM_CALL = re.compile(
    r"(?P<head>(?:(?:tail|musttail|notail) )?call (?P<ret>\{[^}]*\}|[^ ]+) )"
    r"asm (?:sideeffect )?(?:alignstack )?(?:inteldialect )?(?:unwind )?"
    r'"(?P<asm>(?:[^"\\]|\\.)*)", "(?P<constraints>(?:[^"\\]|\\.)*)"\((?P<args>[^()]*)\)'
)
_REGISTER = {"ax": "a", "bx": "b", "cx": "c", "dx": "d", "a": "a", "b": "b", "c": "c", "d": "d"}
_DEFINE = re.compile(r"^define [^@]*@(\"[^\"]+\"|[\w.$]+)\(")
_XGETBV_CALL = re.compile(r"call i64 @llvm\.x86\.xgetbv\(")
_XGETBV_DECLARE = re.compile(r"^declare (.*)i64 @llvm\.x86\.xgetbv\(i32\)", re.MULTILINE)
_RENAMES = (
    (re.compile(r"@__cpu_model\b"), "@__instrbudget_cpu_model_{level}"),
    (re.compile(r"@__cpu_features2\b"), "@__instrbudget_cpu_features2_{level}"),
    (re.compile(r"@__cpu_indicator_init\b"), "@__instrbudget_cpu_indicator_init"),
)
#: What each instruction reads (registers) and writes, in the order ``canonical_cpu.c`` fills them.
_INPUTS = {"cpuid": ("a", "c"), "xgetbv": ("c",)}
_OUTPUTS = {"cpuid": "abcd", "xgetbv": "ad"}
#: The operand types a statement may use: 64-bit registers are read and written as their low 32 bits,
#: and the instructions zero-extend what they write.
_WIDTHS = {"i32", "i64"}


def applies(triple: str) -> bool:
    """Whether builds for ``triple`` get the canonical CPU (x86-64; other targets keep theirs)."""
    return triple.startswith("x86_64")


def cpu_level(name: str) -> int:
    """The runtime's number for a level name; ``CBuildError`` naming the accepted ones."""
    if name not in CPU_LEVELS:
        raise CBuildError(f"unknown cpu {name!r}; accepted: {', '.join(CPU_LEVELS)}")
    return CPU_LEVELS[name]


def _register(constraint: str) -> str:
    """``a`` for ``={ax}``, ``{ax}`` or ``a``; ``?`` for anything else (``r``, ``m``, ``0``)."""
    name = constraint.lstrip("=&").strip("{}")
    return _REGISTER.get(name, "?")


def _registers(asm: str, constraints: str) -> tuple[list[str], list[str]]:
    """Registers of the outputs and of the inputs (``?`` where not a fixed one)."""
    parts = [p for p in constraints.split(",") if not p.startswith("~")]
    outputs = [p for p in parts if p.startswith("=")]
    inputs = parts[len(outputs) :]
    out_regs = [_register(p) for p in outputs]
    if out_regs.count("?") == 1 and "rbx" in asm and "xchg" in asm:
        # <cpuid.h>'s and zstd's form: EBX comes back through another register swapped with RBX.
        out_regs = ["b" if r == "?" else r for r in out_regs]
    in_regs = [out_regs[int(p)] if p.isdigit() and int(p) < len(out_regs) else _register(p) for p in inputs]
    return out_regs, in_regs


def _types(ret: str) -> list[str]:
    """The types of an asm statement's results: ``{ i32, i64 }`` gives two, ``i32`` one."""
    if ret.startswith("{"):
        return [t.strip() for t in ret.strip("{} ").split(",") if t.strip()]
    return [ret]


def _glue(name: str, kind: str, regs: str, ret: str, types: Sequence[str], params: Sequence[str]) -> str:
    """A function returning the registers ``regs`` of ``kind`` as the asm statement did (as ``ret``,
    whose ``types`` are each an ``i32``, or an ``i64`` that the instruction zero-extends), from
    ``params``: the level and the registers it reads, each ``i32`` or ``i64`` (of which it reads
    the low 32 bits)."""
    size = len(_OUTPUTS[kind])
    names = ("level", *_INPUTS[kind])
    lines = [
        f"define internal {ret} @{name}({', '.join(f'{t} %{n}' for t, n in zip(params, names, strict=True))}) "
        "nounwind alwaysinline {",
        f"  %out = alloca [{size} x i32], align 4",
    ]
    passed = []
    for t, param in zip(params, names, strict=True):
        if t == "i64":
            lines.append(f"  %{param}.32 = trunc i64 %{param} to i32")
        passed.append(f"i32 %{param}.32" if t == "i64" else f"i32 %{param}")
    lines.append(f"  call void @__instrbudget_{kind}_into({', '.join(passed)}, ptr %out)")
    for n, (reg, t) in enumerate(zip(regs, types, strict=True)):
        lines.append(f"  %p{n} = getelementptr inbounds i32, ptr %out, i64 {_OUTPUTS[kind].index(reg)}")
        lines.append(f"  %v{n} = load i32, ptr %p{n}, align 4")
        if t == "i64":
            lines.append(f"  %v{n}.64 = zext i32 %v{n} to i64")
    values = [f"%v{n}.64" if t == "i64" else f"%v{n}" for n, t in enumerate(types)]
    if not ret.startswith("{"):
        lines.append(f"  ret {ret} {values[0]}")
    else:
        previous = "poison"
        for n, (t, value) in enumerate(zip(types, values, strict=True)):
            lines.append(f"  %r{n} = insertvalue {ret} {previous}, {t} {value}, {n}")
            previous = f"%r{n}"
        lines.append(f"  ret {ret} {previous}")
    lines.append("}")
    return "\n".join(lines)


def canonical_cpu(text: str, cpu: str) -> str:
    """``text`` (a linked module) asking the runtime, not the processor, about the CPU."""
    level = cpu_level(cpu)
    shapes: dict[tuple[str, str], str] = {}  # (instruction, registers read back) -> the glue function
    function = "?"
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("define "):
            m = _DEFINE.match(line)
            function = m.group(1) if m else "?"
            continue
        if " asm " not in line:
            continue
        m = _ASM_CALL.search(line)
        if m is None:
            continue
        asm = m.group("asm")
        words = set(re.findall(r"[a-z]+", asm.lower()))
        kind = "cpuid" if "cpuid" in words else "xgetbv" if "xgetbv" in words else None
        if kind is None:
            continue
        out_regs, in_regs = _registers(asm, m.group("constraints"))
        regs = "".join(out_regs)
        ret = m.group("ret")
        types = _types(ret)
        if (
            not regs
            or "?" in regs
            or len(set(regs)) != len(regs)
            or set(regs) - set(_OUTPUTS[kind])
            or len(types) != len(regs)
            or (len(regs) > 1) != ret.startswith("{")
            or set(types) - _WIDTHS
        ):
            raise InstrumentError(
                f"{function}: inline assembly with `{kind}` in a form the canonical CPU cannot answer "
                f"(result {ret}, outputs in registers {','.join(out_regs) or 'none'}); use <cpuid.h>'s "
                f"__cpuid_count / __get_cpuid, or `{kind}` asm with 32- or 64-bit outputs in fixed registers"
            )
        args = [a.strip() for a in m.group("args").split(",")] if m.group("args").strip() else []
        given = dict(zip(in_regs, args, strict=False))
        call_args = [f"i32 {level}", *(given.get(r, "i32 0") for r in _INPUTS[kind])]
        params = [a.split(" ", 1)[0] for a in call_args]
        if set(params) - _WIDTHS:
            raise InstrumentError(
                f"{function}: `{kind}` inline assembly with operands other than i32 or i64: {m.group(0)}"
            )
        suffix = "".join("q" if t == "i64" else "d" for t in (*types, *params[1:]))
        name = f"__instrbudget_{kind}_{regs}_{suffix}"
        shapes.setdefault((kind, name), _glue(name, kind, regs, ret, types, params))
        call = f"{m.group('head')}@{name}({', '.join(call_args)})"
        lines[i] = line[: m.start()] + call + line[m.end() :]
    text = "\n".join(lines)
    if _XGETBV_CALL.search(text):
        text = _XGETBV_CALL.sub(f"call i64 @__instrbudget_xgetbv64(i32 {level}, ", text)
        text = _XGETBV_DECLARE.sub(r"declare \1i64 @__instrbudget_xgetbv64(i32, i32)", text)
    if "@__cpu_" in text:
        for pattern, replacement in _RENAMES:
            text = pattern.sub(replacement.format(level=level), text)
    extra = [shapes[shape] for shape in sorted(shapes)]
    kinds = sorted({kind for kind, _ in shapes})
    extra += [f"declare void @__instrbudget_{k}_into(i32, {'i32, ' * len(_INPUTS[k])}ptr)" for k in kinds]
    extra.append(f"@__instrbudget_cpu_level = dso_local constant i32 {level}")
    return text.rstrip("\n") + "\n\n" + "\n\n".join(extra) + "\n"
