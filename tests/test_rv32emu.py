"""rv32emu: RV32IM builds with zig's clang, run in Unicorn, instruction counts and the 1 KiB page trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import rv32emu
from rv32emu import (
    Emulation,
    EmulatorError,
    build_rv32,
    elf_symbols,
    emulate,
    object_files,
    user_functions,
)

ROOT = Path(__file__).resolve().parent.parent
MINIKIT = ROOT / "example_project"
WORKLOADS = ROOT / "benchmarks" / "workloads"

WRITE_PAGES = 5
READ_PAGES = 3

PROGRAM = r"""
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 1024
static char buf[(NW + NR) * PAGE] __attribute__((aligned(1024)));

__attribute__((noinline)) int loop(int n)
{
    int s = 0;
#pragma clang loop unroll(disable)
    for (int i = 0; i < n; i++) {
        s = s * 31 + (i ^ (s >> 3));
    }
    return s;
}

/* musl has static functions called "dummy" too: user_functions must pick this one only. */
__attribute__((noinline)) static int dummy(int x)
{
    return x * 3 + 1;
}

/* Writes NW distinct pages of buf, then reads NR others. */
static int touch_pages(void)
{
    volatile char *b = buf;
    for (int i = 0; i < NW; i++) {
        b[i * PAGE + 17] = (char)(i + 1);
    }
    int sum = 0;
    for (int j = 0; j < NR; j++) {
        sum += b[(NW + j) * PAGE + 5];
    }
    return sum;
}

static unsigned char *volatile heap_sink; /* keeps clang from eliding malloc/free pairs */

static int use_heap(void)
{
    unsigned long sum = 0;
    for (size_t size = 16; size <= (1u << 18); size *= 4) {
        unsigned char *p = malloc(size);
        if (p == NULL) {
            return 1;
        }
        heap_sink = p;
        memset(p, 1, size);
        sum += heap_sink[size - 1] + heap_sink[0]; /* an unknown pointer: the memset stays */
        free(p);
    }
    printf("heap %lu\n", sum);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "hello";
    if (strcmp(mode, "hello") == 0) {
        printf("hello, %s %d\n", "world", 42);
        return 7;
    }
    if (strcmp(mode, "args") == 0) {
        for (int i = 2; i < argc; i++) {
            printf("%s%s", argv[i], i + 1 < argc ? "|" : "\n");
        }
        return argc;
    }
    if (strcmp(mode, "pages") == 0) {
        return touch_pages();
    }
    if (strcmp(mode, "loop") == 0) {
        printf("%d\n", loop(atoi(argv[2])));
        return 0;
    }
    if (strcmp(mode, "dummy") == 0) {
        return dummy(argc);
    }
    if (strcmp(mode, "stdin") == 0) {
        char line[64];
        size_t n = fread(line, 1, sizeof line, stdin);
        for (size_t i = 0; i < n; i++) {
            line[i] = (char)toupper((unsigned char)line[i]);
        }
        fwrite(line, 1, n, stdout);
        return (int)n;
    }
    if (strcmp(mode, "heap") == 0) {
        return use_heap();
    }
    if (strcmp(mode, "abort") == 0) {
        abort();
    }
    if (strcmp(mode, "spin") == 0) {
        for (;;) {
            loop(1000);
        }
    }
    return 99;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rv32")
    source = tmp / "prog.c"
    source.write_text(PROGRAM)
    return build_rv32([source], tmp / "prog", cflags=[f"-DNW={WRITE_PAGES}", f"-DNR={READ_PAGES}", "-Wall", "-Werror"])


def test_binary_is_plain_rv32im(program: Path) -> None:
    e_flags = int.from_bytes(program.read_bytes()[36:40], "little")
    assert e_flags & 0x7 == 0  # no RVC, soft-float ABI
    result = emulate(program, ["hello"])
    assert result.extension_instructions == 0  # every executed instruction: 4-byte RV32IM


def test_hello_world(program: Path) -> None:
    result = emulate(program, ["hello"])
    assert result.exit_code == 7
    assert result.stdout == b"hello, world 42\n"
    assert result.stderr == b""
    assert result.instructions > 100
    assert result.instructions_by_function["main"] > 0  # all symbols are counted by default
    assert result.instructions_by_function["printf_core"] > 0


def test_argv(program: Path) -> None:
    result = emulate(program, ["args", "one", "two words", ""])
    assert result.stdout == b"one|two words|\n"
    assert result.exit_code == 5


def test_stdin(program: Path) -> None:
    result = emulate(program, ["stdin"], stdin=b"abc xyz\n")
    assert result.stdout == b"ABC XYZ\n"
    assert result.exit_code == 8


def test_heap_brk_and_mmap(program: Path) -> None:
    result = emulate(program, ["heap"])
    assert result.exit_code == 0
    assert result.stdout == b"heap 16\n"
    assert result.syscalls.get(rv32emu.SYS_MMAP2, 0) + result.syscalls.get(rv32emu.SYS_BRK, 0) > 0
    assert result.syscalls.get(rv32emu.SYS_MUNMAP, 0) > 0  # the 256 KiB block goes back


def test_abort_is_reported_as_a_signal_exit(program: Path) -> None:
    assert emulate(program, ["abort"]).exit_code == 128 + 6


def test_instruction_limit(program: Path) -> None:
    with pytest.raises(EmulatorError, match="more than 100000 instructions"):
        emulate(program, ["spin"], max_instructions=100_000)


def test_page_trace_counts_first_touches_in_buf(program: Path) -> None:
    # musl has a static "buf" as well: take the one from prog.c
    (buf,) = [s for s in elf_symbols(program, kind="object") if s.name == "buf" and str(s.file).endswith("prog.c")]
    assert buf.address % 1024 == 0
    assert buf.size == (WRITE_PAGES + READ_PAGES) * 1024
    first, end = buf.address // 1024, (buf.address + buf.size) // 1024
    result = emulate(program, ["pages"])
    assert result.exit_code == 0
    in_buf = [(index, page, kind) for index, page, kind in result.page_trace if first <= page < end]
    writes = [page for _, page, kind in in_buf if kind == "write"]
    reads = [page for _, page, kind in in_buf if kind == "read"]
    assert writes == list(range(first, first + WRITE_PAGES))
    assert reads == list(range(first + WRITE_PAGES, end))
    assert len(in_buf) == WRITE_PAGES + READ_PAGES


def test_page_trace_is_ordered_and_has_one_event_per_page_and_kind(program: Path) -> None:
    trace = emulate(program, ["heap"]).page_trace
    indices = [index for index, _, _ in trace]
    assert indices == sorted(indices)
    assert len({(page, kind) for _, page, kind in trace}) == len(trace)
    assert trace[0][2] == "fetch"  # the entry point's page is fetched before anything is read
    assert {kind for _, _, kind in trace} == {"fetch", "read", "write"}


def test_runs_are_deterministic(program: Path) -> None:
    first = emulate(program, ["heap"])
    second = emulate(program, ["heap"])
    assert first == second
    assert first.instructions == second.instructions


def test_function_count_grows_linearly(program: Path) -> None:
    def count(n: int) -> int:
        result = emulate(program, ["loop", str(n)], count_functions=["loop"])
        assert set(result.instructions_by_function) == {"loop"}
        return result.instructions_by_function["loop"]

    c100, c200, c300 = count(100), count(200), count(300)
    assert c200 - c100 == c300 - c200 > 0
    assert (c200 - c100) % 100 == 0  # a whole number of instructions per iteration


def test_user_functions_come_from_the_user_objects(program: Path) -> None:
    users = user_functions(program, object_files(program))
    names = sorted(s.name for s in users)
    assert names == ["dummy", "loop", "main"]  # static touch_pages/use_heap are inlined at -O2
    (dummy,) = [s for s in users if s.name == "dummy"]
    assert dummy.binding == "local"
    assert str(dummy.file).endswith("prog.c")
    musl_dummies = [s for s in elf_symbols(program) if s.name == "dummy" and s != dummy]
    assert musl_dummies  # the name clash the file check exists for
    assert [s.name for s in user_functions(program, ["loop", "no_such_function"])] == ["loop"]


def test_counting_only_user_functions(program: Path) -> None:
    users = [s.name for s in user_functions(program, object_files(program))]
    result = emulate(program, ["dummy"], count_functions=users)
    assert set(result.instructions_by_function) == set(users)
    assert result.instructions_by_function["dummy"] > 0
    assert result.instructions_by_function["loop"] == 0
    assert sum(result.instructions_by_function.values()) < result.instructions


def test_block_counting_matches_a_per_instruction_reference(program: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The block-hook counts and page trace equal those of a slow UC_HOOK_CODE reference on the same run."""
    import unicorn  # type: ignore[import-untyped,unused-ignore]

    ref: dict[str, Any] = {"n": 0, "current": 0, "events": [], "seen": set()}
    original_init = rv32emu._Machine.__init__

    def touch(page: int, kind: str) -> None:
        if (page, kind) not in ref["seen"]:
            ref["seen"].add((page, kind))
            ref["events"].append((ref["current"], page, kind))

    def on_code(_uc: Any, address: int, _size: int, _data: Any) -> None:
        ref["current"] = ref["n"]
        ref["n"] += 1
        touch(address // 1024, "fetch")

    def on_mem(kind: str) -> Any:
        def hook(_uc: Any, _access: int, address: int, size: int, _value: int, _data: Any) -> None:
            for page in range(address // 1024, (address + size - 1) // 1024 + 1):
                touch(page, kind)

        return hook

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.uc.hook_add(unicorn.UC_HOOK_CODE, on_code)
        self.uc.hook_add(unicorn.UC_HOOK_MEM_READ, on_mem("read"))
        self.uc.hook_add(unicorn.UC_HOOK_MEM_WRITE, on_mem("write"))

    monkeypatch.setattr(rv32emu._Machine, "__init__", init)
    result = emulate(program, ["heap"])
    assert result.instructions == ref["n"]
    assert result.page_trace == ref["events"]


def test_compile_error_carries_clang_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return undeclared_thing; }\n")
    with pytest.raises(EmulatorError, match="undeclared_thing"):
        build_rv32([bad], tmp_path / "bad")


def test_emulation_error_for_a_non_riscv_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF\x01\x01\x01" + bytes(64))
    with pytest.raises(EmulatorError, match="RISC-V"):
        emulate(junk)


@pytest.mark.parametrize(
    ("driver", "library", "expected"),
    [
        ("zk_sort", "sort.c", b"sort n=4000 rounds=2 sorted=1 "),
        ("zk_json", "json.c", b"json bytes=12095 rounds=4 tokens=18580 depth=4\n"),
        ("zk_hashmap", "hashmap.c", b"hashmap keys=1500 inserted=1099 size=1099 "),
    ],
)
def test_zk_workloads(tmp_path: Path, driver: str, library: str, expected: bytes) -> None:
    elf = build_rv32(
        [WORKLOADS / f"{driver}.c", MINIKIT / "src" / library],
        tmp_path / driver,
        include_dirs=[MINIKIT / "include"],
        cflags=["-std=c11", "-Wall", "-Wextra", "-Werror"],
    )
    users = [s.name for s in user_functions(elf, object_files(elf))]
    result: Emulation = emulate(elf, count_functions=users)
    assert result.exit_code == 0
    assert result.stdout.startswith(expected)
    assert 300_000 <= result.instructions <= 3_000_000
    assert 0 < sum(result.instructions_by_function.values()) <= result.instructions
