"""Random C programs: edge counters (a spanning tree per function) give exactly the block counts
of one counter per block, at -O0 and -O2, on whatever control flow the generator comes up with.

The generator writes two to four helpers ``unsigned fK(unsigned x, int d)`` (plain, ``static``,
``static inline`` or ``noinline``) and a ``main`` that calls each of them. Their bodies nest
for/while/do loops, if/else-if chains, switches with fallthrough and default, break/continue,
early returns, forward gotos (also out of loops and switches), ternaries and ``&&``/``||`` with
calls inside, direct, indirect and recursive calls (mutual recursion too, bounded by ``d``) and
tight one-block loops. Some programs also ``exit(0)`` from deep in a call, ``longjmp`` back to a
``setjmp`` in main (only while it is live), make ``musttail`` calls, or use computed gotos
(``indirectbr``) and ``asm goto`` (``callbr``); the last three make the edge placement fall back
to one counter per block for that function, so they are kept to a minority of programs.

Every program is valid C, deterministic and terminates: all arithmetic is unsigned (no
undefined overflow), every loop has a small bound *and* burns a global ``fuel`` counter in its
condition, and every function returns at once when its depth argument or the fuel is used up,
so the total work is bounded by the fuel (a few thousand steps) whatever the call graph looks
like. The input comes from a volatile global, so -O2 cannot fold the program away; the output is
a checksum of everything the program computed.

Shrinking is off: every example costs four builds, so a failure reports the whole program
(its source is in the failure message) and is best cut down by hand.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cbuild import Builder, BuildOptions, run_program

T = TypeVar("T")

#: Function qualifiers: plain, static, static inline, noinline (static or not).
QUALIFIERS = ("", "static ", "static inline ", "__attribute__((noinline)) ", "static __attribute__((noinline)) ")


@dataclass(frozen=True)
class _Ctx:
    """Where a statement is being generated."""

    func: int | None  # index of the helper, None in main
    names: tuple[str, ...]  # readable unsigned variables in scope
    writable: tuple[str, ...]  # variables statements may assign
    in_loop: bool = False  # `continue` allowed
    breakable: bool = False  # `break` allowed (loop or switch)
    labels: tuple[str, ...] = ()  # forward goto targets (emitted after the current statement)
    depth: int = 0


@dataclass
class _Gen:
    """Writes one program, taking every decision from ``rnd``."""

    rnd: random.Random
    n_funcs: int
    use_exit: bool
    use_longjmp: bool
    use_indirect: bool
    use_musttail: bool
    use_jump_tricks: bool
    counter: int = 0

    # -- small helpers -------------------------------------------------------------------------

    def pick(self, options: tuple[T, ...] | list[T]) -> T:
        return self.rnd.choice(options)

    def num(self, lo: int, hi: int) -> int:
        return self.rnd.randint(lo, hi)

    def chance(self, percent: int) -> bool:
        return self.num(0, 99) < percent

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # -- expressions ---------------------------------------------------------------------------

    def call(self, ctx: _Ctx, depth: int) -> str:
        arg = self.expr(ctx, depth + 1)
        if self.use_indirect and self.chance(20):
            return f"ftab[({self.expr(ctx, depth + 1)}) % {self.n_funcs}u](({arg}), d - 1)"
        return f"f{self.num(0, self.n_funcs - 1)}(({arg}), d - 1)"

    def expr(self, ctx: _Ctx, depth: int = 0) -> str:
        """An unsigned expression with no undefined behaviour."""
        kind = self.num(0, 3 if depth >= 2 else 13)
        if kind <= 1:
            return self.pick(ctx.names)
        if kind == 2:
            return f"{self.num(0, 40)}u"
        if kind == 3:
            return self.pick(("g", "(unsigned)acc", "tab[g & 15u]"))
        a = self.expr(ctx, depth + 1)
        if kind == 4:
            b = self.expr(ctx, depth + 1)
            return f"({a} {self.pick(('+', '-', '*', '^', '&', '|'))} {b})"
        if kind == 5:
            return f"({a} {self.pick(('>>', '<<'))} {self.num(0, 5)})"
        if kind == 6:
            return f"({a} % {self.num(1, 13)}u)"
        if kind == 7:
            return f"(unsigned)({a} {self.pick(('<', '<=', '==', '!=', '>'))} {self.expr(ctx, depth + 1)})"
        if kind == 8:
            return f"({self.cond(ctx, depth + 1)} ? {a} : {self.expr(ctx, depth + 1)})"
        if kind == 9:
            return f"(unsigned)({self.cond(ctx, depth + 1)} {self.pick(('&&', '||'))} {self.cond(ctx, depth + 1)})"
        if kind == 10:
            return f"tab[({a}) & 15u]"
        if kind == 11:
            return f"(unsigned)!({a})"
        return self.call(ctx, depth)  # kinds 12, 13

    def cond(self, ctx: _Ctx, depth: int = 0) -> str:
        kind = self.num(0, 4 if depth < 2 else 1)
        a = self.expr(ctx, depth + 1)
        if kind == 0:
            return f"({a} % {self.num(2, 7)}u == {self.num(0, 1)}u)"
        if kind == 1:
            return f"({a} {self.pick(('<', '>', '!=', '=='))} {self.num(0, 30)}u)"
        if kind == 2:
            return f"(({a} & {self.num(1, 7)}u) != 0u)"
        if kind == 3:
            op = self.pick(("&&", "||"))
            return f"({self.cond(ctx, depth + 1)} {op} {self.cond(ctx, depth + 1)})"
        return f"(!{self.cond(ctx, depth + 1)})"

    # -- statements ----------------------------------------------------------------------------

    def block(self, ctx: _Ctx, lo: int, hi: int) -> list[str]:
        """A statement list; sometimes with a label at its end that nested statements jump to."""
        out: list[str] = []
        label = None
        if self.chance(25):
            label = self.fresh("L")
            ctx = replace(ctx, labels=(*ctx.labels, label))
        for _ in range(self.num(lo, hi)):
            out.extend(self.stmt(ctx))
        if label is not None:
            out.append(f"{label}:;")
        return out

    def body(self, ctx: _Ctx) -> list[str]:
        return ["    " + line for line in self.block(replace(ctx, depth=ctx.depth + 1), 1, 3)]

    def stmt(self, ctx: _Ctx) -> list[str]:
        kinds = ["assign", "assign", "acc", "call", "tight"]
        if ctx.depth < 3:
            kinds += ["if", "if", "for", "while", "do", "switch"]
        if ctx.in_loop:
            kinds += ["continue"]
        if ctx.breakable:
            kinds += ["break", "break"]
        if ctx.func is not None:
            kinds += ["return"]
            if self.use_musttail:
                kinds += ["tailcall"]
            if self.use_exit:
                kinds += ["exit"]
            if self.use_longjmp:
                kinds += ["longjmp"]
        if ctx.labels:
            kinds += ["goto", "goto", "goto"]
            if self.use_jump_tricks:
                kinds += ["computed_goto", "asm_goto"]
        kind = self.pick(kinds)
        if kind == "assign":
            target = self.pick((*ctx.writable, "g", "tab[g % 16u]"))
            return [f"{target} {self.pick(('=', '+=', '^=', '-='))} {self.expr(ctx)};"]
        if kind == "acc":
            return [f"acc = acc * 31u + ({self.expr(ctx)});"]
        if kind == "call":
            return [f"{self.pick(ctx.writable)} += {self.call(ctx, 0)};"]
        if kind == "continue":
            return [f"if {self.cond(ctx)} continue;"]
        if kind == "break":
            return [f"if {self.cond(ctx)} break;"]
        if kind == "return":
            return [f"if {self.cond(ctx)} return {self.expr(ctx)};"]
        if kind == "tight":  # a loop of one block at -O2: a self-loop edge
            t = self.fresh("t")
            return [f"for (unsigned {t} = 0u; {t} < ({self.pick(ctx.names)} & 7u); {t}++) z = (z * 3u + {t}) ^ g;"]
        if kind == "tailcall":  # nothing may come between a musttail call and its ret
            callee = self.num(0, self.n_funcs - 1)
            return [f"if {self.cond(ctx)} MUSTTAIL return f{callee}({self.expr(ctx)}, d - 1);"]
        if kind == "goto":
            return [f"if {self.cond(ctx)} goto {self.pick(ctx.labels)};"]
        if kind == "computed_goto":  # indirectbr
            targets = ", ".join(f"&&{self.pick(ctx.labels)}" for _ in range(self.num(1, 3)))
            return [
                f"if {self.cond(ctx)} {{",
                f"    static void *const targets[] = {{{targets}}};",
                f"    goto *targets[({self.expr(ctx)}) % (sizeof targets / sizeof *targets)];",
                "}",
            ]
        if kind == "asm_goto":  # callbr
            return [f"if {self.cond(ctx)} JUMP_TO({self.pick(ctx.labels)});"]
        if kind == "exit":
            return [
                f"if (((unsigned)fuel + {self.expr(ctx)}) % {self.num(8, 120)}u == 0u) {{",
                '    printf("exit %llu %u\\n", acc, g);',
                "    exit(0);",
                "}",
            ]
        if kind == "longjmp":
            return [f"if (jb_live && {self.cond(ctx)}) longjmp(jb, (int)({self.expr(ctx)} % 3u) + 1);"]
        if kind == "if":
            out = [f"if {self.cond(ctx)} {{", *self.body(ctx)]
            for _ in range(self.num(0, 2)):
                out += [f"}} else if {self.cond(ctx)} {{", *self.body(ctx)]
            if self.chance(50):
                out += ["} else {", *self.body(ctx)]
            return [*out, "}"]
        loop = replace(ctx, in_loop=True, breakable=True)
        if kind == "for":
            i = self.fresh("i")
            inner = replace(loop, names=(*ctx.names, i))
            return [
                f"for (unsigned {i} = {self.num(0, 2)}u; {i} < {self.num(0, 6)}u && --fuel > 0; {i}++) {{",
                *self.body(inner),
                "}",
            ]
        if kind == "while":
            w = self.fresh("w")
            inner = replace(loop, names=(*ctx.names, w))
            extra = f" && {self.cond(ctx)}" if self.chance(40) else ""
            return [
                "{",
                f"    unsigned {w} = {self.num(0, 6)}u;",
                f"    while ({w} > 0u && --fuel > 0{extra}) {{",
                f"        {w}--;",
                *["    " + line for line in self.body(inner)],
                "    }",
                "}",
            ]
        if kind == "do":
            n = self.fresh("n")
            return [
                "{",
                f"    unsigned {n} = 0u;",
                "    do {",
                *["    " + line for line in self.body(replace(loop, names=(*ctx.names, n)))],
                f"    }} while (++{n} < {self.num(1, 5)}u && --fuel > 0);",
                "}",
            ]
        # switch, with fallthrough, default, and breaks that leave the switch (not the loop)
        values = self.rnd.sample(range(7), self.num(1, 4))
        modulus = self.num(2, 8)
        out = [f"switch (({self.expr(ctx)}) % {modulus}u) {{"]
        inner = replace(ctx, breakable=True, depth=ctx.depth + 1)
        cases = [f"case {v}:" for v in values]
        if self.chance(70):
            cases.insert(self.num(0, len(cases)), "default:")
        for case in cases:
            out += [case + " {", *["    " + line for line in self.block(inner, 0, 2)]]
            out += ["    break;", "}"] if self.chance(50) else ["}  /* fallthrough */"]
        return [*out, "}"]

    # -- whole program -------------------------------------------------------------------------

    def program(self) -> str:
        quals = [self.pick(QUALIFIERS) for _ in range(self.n_funcs)]
        out = [
            "#include <setjmp.h>",
            "#include <stdio.h>",
            "#include <stdlib.h>",
            "",
            "#if defined(__x86_64__) || defined(__i386__)",
            '#define JUMP_TO(label) asm goto("jmp %l0" :::: label)',
            "#elif defined(__aarch64__)",
            '#define JUMP_TO(label) asm goto("b %l0" :::: label)',
            "#else",
            '#define JUMP_TO(label) asm goto("" :::: label)',
            "#endif",
            "/* clang 22 -O1 and up can turn musttail calls into invalid IR (a fastcc caller of a",
            "   ccc callee; an accumulator added after the call): musttail at -O0 only. */",
            "#ifdef __OPTIMIZE__",
            "#define MUSTTAIL",
            "#else",
            "#define MUSTTAIL __attribute__((musttail))",
            "#endif",
            "",
            f"static volatile unsigned seed = {self.num(0, 1000)}u;",
            f"static long fuel = {self.num(200, 4000)};",
            "static unsigned long long acc;",
            "static unsigned g;",
            "static unsigned tab[16];",
            "static jmp_buf jb;",
            "static volatile int jb_live;",
            "static unsigned jumps;",
            "",
        ]
        out += [f"{q}unsigned f{k}(unsigned x, int d);" for k, q in enumerate(quals)]
        if self.use_indirect:
            names = ", ".join(f"f{k}" for k in range(self.n_funcs))
            out.append(f"static unsigned (*const ftab[])(unsigned, int) = {{{names}}};")
        for k, q in enumerate(quals):
            ctx = _Ctx(func=k, names=("x", "y", "z"), writable=("y", "z"))
            out += [
                "",
                f"{q}unsigned f{k}(unsigned x, int d) {{",
                f"    unsigned y = x ^ {self.num(0, 99)}u, z = {self.num(0, 99)}u;",
                "    if (d <= 0 || --fuel <= 0) return x + y;",
                *["    " + line for line in self.block(ctx, 1, 5)],
                f"    return {self.expr(ctx)} ^ z;",
                "}",
            ]
        ctx = _Ctx(func=None, names=("x", "y", "z"), writable=("y", "z"))
        out += [
            "",
            "int main(int argc, char **argv) {",
            "    (void)argv;",
            f"    int d = {self.num(2, 6)};",
            "    unsigned x = seed + (unsigned)argc, y = x * 3u, z = 1u;",
        ]
        if self.use_longjmp:
            # Only globals and volatiles change between setjmp and a longjmp back to it.
            rounds = self.num(1, 4)
            calls = [f"        acc += f{self.num(0, self.n_funcs - 1)}(x + r, d);" for _ in range(self.num(1, 2))]
            out += [
                "    static volatile unsigned r;",
                f"    for (r = 0u; r < {rounds}u; r++) {{",
                "        if (setjmp(jb) == 0) {",
                "            jb_live = 1;",
                *["    " + c for c in calls],
                "            jb_live = 0;",
                "        } else {",
                "            jb_live = 0;",
                "            acc = acc * 7u + r;",
                "            jumps++;",
                "        }",
                "    }",
            ]
        # Every helper runs at least once, from a loop of its own.
        order = self.rnd.sample(range(self.n_funcs), self.n_funcs)
        out += [
            f"    for (unsigned k = 0u; k < {self.num(1, 4)}u; k++) {{",
            *[f"        acc = acc * 31u + f{j}(x + k * {self.num(1, 9)}u, d);" for j in order],
            "    }",
        ]
        out += ["    " + line for line in self.block(ctx, 1, 5)]
        out += [
            '    printf("%llu %u %u %ld %u\\n", acc, g, x ^ y ^ z, fuel, jumps);',
            "    return (int)(acc % 5u);",
            "}",
            "",
        ]
        return "\n".join(out)


def c_program(rnd: random.Random) -> str:
    """One random program: two to four helpers and main, some of them with exits and longjmps."""
    gen = _Gen(
        rnd,
        n_funcs=rnd.randint(2, 4),
        use_exit=rnd.random() < 0.4,
        use_longjmp=rnd.random() < 0.5,
        use_indirect=rnd.random() < 0.4,
        use_musttail=rnd.random() < 0.2,
        use_jump_tricks=rnd.random() < 0.25,
    )
    return gen.program()


def _run(builder: Builder, source: Path, level: str, placement: str) -> tuple[tuple[int, ...], bytes, int]:
    run = run_program(builder.build([source], options=BuildOptions(opt_level=level, placement=placement)), [])
    assert run.counts is not None
    return run.counts.counts, run.stdout, run.returncode


@pytest.mark.slow
@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=st.randoms(use_true_random=True).map(c_program))
def test_placement_edges_equal_blocks_on_random_programs(builder: Builder, tmp_path: Path, program: str) -> None:
    source = tmp_path / f"random_{hashlib.sha256(program.encode()).hexdigest()[:12]}.c"
    source.write_text(program)
    for level in ("0", "2"):
        edges = _run(builder, source, level, "edges")
        blocks = _run(builder, source, level, "blocks")
        if edges != blocks:
            diff = [(i, e, b) for i, (e, b) in enumerate(zip(edges[0], blocks[0], strict=False)) if e != b]
            pytest.fail(
                f"-O{level}: edge placement differs from block placement ({len(edges[0])} vs {len(blocks[0])} blocks)\n"
                f"blocks differing (index, edges, blocks): {diff[:20]}\n"
                f"stdout edges={edges[1]!r} blocks={blocks[1]!r}; returncode edges={edges[2]} blocks={blocks[2]}\n"
                f"--- {source} ---\n{program}"
            )
