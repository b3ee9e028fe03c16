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

In a shared library the ifuncs of function multiversioning are resolved here, at build time:
the dynamic loader runs a library's resolvers while it relocates it, before the library's
runtime can give the resolver's (instrumented) code its counters, so each resolver that reads
only the canonical tables (as the compiler's do) is evaluated and its ifunc becomes an alias of
the function it picks, the one a program built for the level picks when it starts.
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


def _bits(*features: int) -> int:
    """The bits of ``features`` (LLVM's numbers) in their 32-bit word of the feature set."""
    return sum(1 << (n % 32) for n in features)


#: The runtime's tables as 32-bit words, by level, for resolving a library's ifuncs at build time
#: (``canonical_cpu.c``'s ``__instrbudget_cpu_model_*``: vendor 1, type 0, subtype 0, then word 0
#: of the feature set; ``__instrbudget_cpu_features2_*``: words 1-3; a test compares the two).
_W0 = {1: _bits(0, 1, 3, 4)}
_W0[2] = _W0[1] | _bits(2, 5, 6, 7, 8)
_W0[3] = _W0[2] | _bits(9, 10, 14, 16, 17)
_W0[4] = _W0[3] | _bits(15, 20, 21, 22, 23)
_W1 = {1: 0, 2: _bits(46, 54)}
_W1[3] = _W1[4] = _W1[2] | _bits(49, 57, 58)
_W2 = {1: _bits(95), 2: _bits(95), 3: _bits(95, 81), 4: _bits(95, 81)}
_W3 = {1: 0, 2: _bits(96), 3: _bits(96, 97), 4: _bits(96, 97, 98)}
_IFUNC = re.compile(r"^(?P<head>@[\w.$\"-]+ = [^=]*?)\bifunc (?P<type>.+), ptr (?P<resolver>@[\w.$\"-]+)\s*$")
_TABLE_LOAD = re.compile(
    r"^load i32, ptr (?:getelementptr (?:inbounds )?(?:nuw )?"
    r"\((?P<elem>.+?), ptr (?P<gep>@[\w.]+)(?P<idx>(?:, i\d+ \d+)*)\)|(?P<plain>@[\w.]+))(?:, align \d+)?$"
)
_TOKEN = r"(?:%[\w.$-]+|@[\w.$\"-]+|-?\d+|true|false|null|poison|undef)"
_INT_OPS = {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "shl": lambda a, b: a << b,
    "lshr": lambda a, b: a >> b,
}
#: icmp's predicates on unsigned operands; ``s``-predicates are given them as signed.
_PREDICATES = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "ugt": lambda a, b: a > b,
    "uge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b,
    "ule": lambda a, b: a <= b,
    "sgt": lambda a, b: a > b,
    "sge": lambda a, b: a >= b,
    "slt": lambda a, b: a < b,
    "sle": lambda a, b: a <= b,
}
#: Steps a resolver may take before it is judged one this interpreter does not follow.
_MAX_STEPS = 10_000


def _unsigned(value: int, width: int) -> int:
    """``value`` (a literal may be negative: ``-2147483648``) as an unsigned ``width``-bit integer."""
    return value & ((1 << width) - 1)


def _signed(value: int, width: int) -> int:
    """An unsigned ``width``-bit integer read as signed."""
    value = _unsigned(value, width)
    return value - (1 << width) if value >> (width - 1) else value


def _table_word(level: int, table: str, word: int) -> int | None:
    """Word ``word`` of the runtime's table ``table`` (renamed) for ``level``; None for another global."""
    if table == f"@__instrbudget_cpu_model_{level}":
        words = [1, 0, 0, _W0[level]]
    elif table == f"@__instrbudget_cpu_features2_{level}":
        words = [_W1[level], _W2[level], _W3[level]]
    else:
        return None
    return words[word] if 0 <= word < len(words) else None


def _evaluate(body: list[str], level: int) -> str | None:
    """What a resolver's ``body`` returns (``@name``) on the canonical CPU, if it asks nothing
    but the canonical tables; None for code this small interpreter does not follow."""
    blocks: dict[str, list[str]] = {}
    label = "%0"
    for line in body:
        code = re.sub(r", !\w+ !\d+", "", line.split(";", 1)[0]).strip()
        if not code:
            continue
        if code.endswith(":") and " " not in code:
            label = "%" + code[:-1]
            continue
        blocks.setdefault(label, []).append(code)
    values: dict[str, int | str] = {}

    def value(token: str) -> int | str | None:
        token = token.strip()
        if token.startswith("%"):
            return values.get(token)
        if token.startswith("@"):
            return token
        if token in ("true", "false"):
            return int(token == "true")
        return int(token) if re.fullmatch(r"-?\d+", token) else None

    label, came_from, steps = next(iter(blocks), "%0"), "", 0
    while steps < _MAX_STEPS:
        if label not in blocks:
            return None
        codes = blocks[label]
        for at, code in enumerate(codes):
            steps += 1
            m = re.match(r"(%[\w.$-]+) = (.*)$", code)
            name, expr = (m.group(1), m.group(2)) if m else ("", code)
            expr = re.sub(r"^(?:tail |notail )?call ", "call ", expr)
            if re.fullmatch(r"call (?:void|i32) @__instrbudget_cpu_indicator_init\(\)(?: #\d+)?", expr):
                values[name] = 0
                continue
            if (mm := _TABLE_LOAD.match(expr)) is not None:
                if mm.group("plain"):
                    table, word = mm.group("plain"), 0
                else:
                    indices = [int(i) for i in re.findall(r"i\d+ (\d+)", mm.group("idx"))]
                    table = mm.group("gep")
                    if mm.group("elem") == "i8":
                        if len(indices) != 1 or indices[0] % 4:
                            return None
                        word = indices[0] // 4
                    elif not indices or indices[0] != 0:
                        return None
                    else:  # every field of both tables is an i32
                        word = sum(indices[1:])
                got = _table_word(level, table, word)
                if got is None:
                    return None
                values[name] = got
                continue
            if mm := re.fullmatch(rf"(\w+)(?: nuw| nsw| exact| disjoint)* i(\d+) ({_TOKEN}), ({_TOKEN})", expr):
                op, width, a, b = mm.group(1), int(mm.group(2)), value(mm.group(3)), value(mm.group(4))
                if op not in _INT_OPS or not isinstance(a, int) or not isinstance(b, int):
                    return None
                values[name] = _unsigned(_INT_OPS[op](_unsigned(a, width), _unsigned(b, width)), width)
                continue
            if mm := re.fullmatch(rf"icmp (\w+) i(\d+) ({_TOKEN}), ({_TOKEN})", expr):
                pred, width, a, b = mm.group(1), int(mm.group(2)), value(mm.group(3)), value(mm.group(4))
                if pred not in _PREDICATES or not isinstance(a, int) or not isinstance(b, int):
                    return None
                read = _signed if pred.startswith("s") else _unsigned
                values[name] = int(_PREDICATES[pred](read(a, width), read(b, width)))
                continue
            if mm := re.fullmatch(rf"(zext|sext|trunc) i(\d+) ({_TOKEN}) to i(\d+)", expr):
                a = value(mm.group(3))
                if not isinstance(a, int):
                    return None
                if mm.group(1) == "sext":
                    a = _signed(a, int(mm.group(2)))
                values[name] = _unsigned(
                    a if mm.group(1) != "zext" else _unsigned(a, int(mm.group(2))), int(mm.group(4))
                )
                continue
            if mm := re.fullmatch(rf"select i1 ({_TOKEN}), \S+ ({_TOKEN}), \S+ ({_TOKEN})", expr):
                c = value(mm.group(1))
                if not isinstance(c, int):
                    return None
                chosen = value(mm.group(2) if c else mm.group(3))
                if chosen is None:
                    return None
                values[name] = chosen
                continue
            if mm := re.fullmatch(r"phi \S+ (.*)", expr):
                pairs = {lbl: v for v, lbl in re.findall(rf"\[ ({_TOKEN}), (%[\w.$-]+) \]", mm.group(1))}
                chosen = value(pairs[came_from]) if came_from in pairs else None
                if chosen is None:
                    return None
                values[name] = chosen
                continue
            if mm := re.fullmatch(r"br label (%[\w.$-]+)", expr):
                came_from, label = label, mm.group(1)
                break
            if mm := re.fullmatch(rf"br i1 ({_TOKEN}), label (%[\w.$-]+), label (%[\w.$-]+)", expr):
                c = value(mm.group(1))
                if not isinstance(c, int):
                    return None
                came_from, label = label, mm.group(2) if c else mm.group(3)
                break
            if mm := re.fullmatch(rf"switch i(\d+) ({_TOKEN}), label (%[\w.$-]+) \[", expr):
                # The cases follow, one per line, up to "]".
                width, c = int(mm.group(1)), value(mm.group(2))
                if not isinstance(c, int):
                    return None
                target = mm.group(3)
                for case in codes[at + 1 :]:
                    if case == "]":
                        break
                    if (cm := re.fullmatch(rf"i\d+ ({_TOKEN}), label (%[\w.$-]+)", case)) is None:
                        return None
                    k = value(cm.group(1))
                    if not isinstance(k, int):
                        return None
                    if _unsigned(k, width) == _unsigned(c, width):
                        target = cm.group(2)
                        break
                came_from, label = label, target
                break
            if mm := re.fullmatch(rf"ret ptr ({_TOKEN})", expr):
                chosen = value(mm.group(1))
                return chosen if isinstance(chosen, str) else None
            return None
        else:
            return None
    return None


def _resolve_ifuncs(text: str, level: int) -> str:
    """``text`` with each ifunc whose resolver can be evaluated here an alias of what it resolves to."""
    lines = text.split("\n")
    bodies: dict[str, list[str]] = {}
    for i, line in enumerate(lines):
        if line.startswith("define ") and "ptr @" in line and line.rstrip().endswith("{"):
            m = _DEFINE.match(line)
            if m is None or not line[m.end() :].startswith(")"):  # a resolver takes no arguments
                continue
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("}")), None)
            if end is not None:
                bodies["@" + m.group(1)] = lines[i + 1 : end]
    for i, line in enumerate(lines):
        m = _IFUNC.match(line) if " ifunc " in line else None
        if m is None:
            continue
        body = bodies.get(m.group("resolver"))
        chosen = _evaluate(body, level) if body is not None else None
        if chosen is None:
            # Left to the loader, it would run instrumented code before the library's runtime can.
            name = m.group("head").split(" =", 1)[0]
            raise InstrumentError(
                f"the multiversioned function {name} of a shared library picks its version in "
                f"{m.group('resolver')}, which asks more than the canonical CPU's tables (or in a way this build "
                "does not follow); a library's versions are chosen when it is built: use target_clones or "
                "target attributes on CPU features, or build a program"
            )
        lines[i] = f"{m.group('head')}alias {m.group('type')}, ptr {chosen}"
    return "\n".join(lines)


def canonical_cpu(text: str, cpu: str, *, library: bool = False) -> str:
    """``text`` (a linked module) asking the runtime, not the processor, about the CPU; for a shared
    ``library``, with the ifuncs whose resolvers only read the canonical tables resolved."""
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
    if library and " ifunc " in text:
        text = _resolve_ifuncs(text, level)
    extra = [shapes[shape] for shape in sorted(shapes)]
    kinds = sorted({kind for kind, _ in shapes})
    extra += [f"declare void @__instrbudget_{k}_into(i32, {'i32, ' * len(_INPUTS[k])}ptr)" for k in kinds]
    extra.append(f"@__instrbudget_cpu_level = hidden constant i32 {level}")
    return text.rstrip("\n") + "\n\n" + "\n\n".join(extra) + "\n"
