"""A function's count does not move when other data is added around the data it reads."""

from __future__ import annotations

from pathlib import Path

from cbuild import Builder, BuildOptions, Library
from cbuild.build.data_layout import DATA_ALIGN, aligned_data
from cbuild.models import default_registry

# A literal of 21 bytes with its zero: the counted strlen reads it in one aligned 32-byte block
# or in two, by where it starts.
KEY_C = """
#include <string.h>
#include <instrbudget.h>
const char *volatile other = "%s";
const char *volatile key = "the-key-of-the-record";
size_t key_length(void) { return strlen(key); }
size_t other_length(void) {
    INSTRBUDGET_REGION_START("other");
    size_t n = strlen(other);
    INSTRBUDGET_REGION_STOP();
    return n;
}
"""


def key_length_cost(builder: Builder, tmp_path: Path, padding: str, *cflags: str) -> int:
    source = tmp_path / f"key{len(padding)}{len(cflags)}.c"
    source.write_text(KEY_C % padding)
    with Library(builder.build([source], kind="library", options=BuildOptions(cflags=cflags))) as lib:
        assert lib.key_length() == 21
        before = lib.snapshot()
        lib.key_length()
        counts = lib.counts(before)
    (cost,) = default_registry().create("ir-count").evaluate(counts)
    return cost.total


def test_a_longer_literal_elsewhere_or_region_markers_leave_a_strlen_count_as_it_was(
    builder: Builder, tmp_path: Path
) -> None:
    """The literal before the key grows by 9 bytes at a time, which moved the key across a 32-byte
    boundary of the counted strlen's blocks and its count with it; so did region markers (their
    names are literals too). Aligned, the key costs the same in every build."""
    costs = {key_length_cost(builder, tmp_path, "x" * n) for n in (1, 10, 19, 28)}
    costs.add(key_length_cost(builder, tmp_path, "x", "-DINSTRBUDGET_NO_REGIONS"))
    assert len(costs) == 1, costs


#: Global definitions as LLVM prints them, and the alignment each should end with.
GLOBALS = [
    ('@.str = private unnamed_addr constant [3 x i8] c"ab\\00", align {}, !dbg !0', 1, DATA_ALIGN),
    ("@table = local_unnamed_addr global [7 x i32] zeroinitializer, align {}", 16, DATA_ALIGN),
    ('@thing = global %struct.s {{ [20 x i8] c"hello", i32 3 }}, align {}, !dbg !22', 4, DATA_ALIGN),
    ("@big = internal global [4 x i64] zeroinitializer, align {}", 64, 64),
    ("@n = internal global i32 0, align {}", 4, 4),
    ("@outside = external global [3 x i8], align {}", 1, 1),
    ('@member = global [4 x i8] c"ab\\00\\00", section "set_x", align {}', 1, 1),
    ("@_ZTV1A = linkonce_odr unnamed_addr constant {{ [3 x ptr] }} zeroinitializer, comdat, align {}", 8, 8),
    ("@shared = available_externally global [4 x i32] zeroinitializer, align {}", 16, 16),
    # What a string holds is its own: never read as the definition's alignment or linkage.
    ('@.str.1 = private unnamed_addr constant [18 x i8] c"pad, align 4, xy\\0A\\00", align {}', 1, DATA_ALIGN),
    ('@.str.2 = private unnamed_addr constant [16 x i8] c"the common case\\00", align {}', 1, DATA_ALIGN),
    ('@"a b" = internal global [2 x i8] zeroinitializer, align {} #0', 1, DATA_ALIGN),
]


def test_aggregate_globals_are_aligned_and_others_left_alone() -> None:
    used = '@llvm.used = appending global [1 x ptr] [ptr @n], section "llvm.metadata"'
    ir = "\n".join([*(line.format(before) for line, before, _ in GLOBALS), used])
    assert aligned_data(ir).split("\n") == [*(line.format(after) for line, _, after in GLOBALS), used]


def test_a_literal_that_reads_like_an_alignment_keeps_its_text(builder: Builder, tmp_path: Path) -> None:
    source = tmp_path / "text.c"
    source.write_text(
        'const char *text(void) { return "pad, align 10, xy"; }\n'
        'const char *shorter(void) { return "pad, align 4, xy"; }\n'
    )
    with Library(builder.build([source], kind="library")) as lib:
        assert lib.text().string() == b"pad, align 10, xy"
        assert lib.shorter().string() == b"pad, align 4, xy"


def key_length_riscv_instructions(builder: Builder, tmp_path: Path, padding: str, *cflags: str) -> int:
    source = tmp_path / f"rv{len(padding)}{len(cflags)}.c"
    source.write_text(KEY_C % padding)
    model = default_registry().create("zkvm", {"execute": True})
    artifact = builder.build([source], kind="library", options=BuildOptions(cflags=cflags), models=[model])
    with Library(artifact) as lib:
        before = lib.snapshot()
        assert lib.key_length() == 21
        return lib.counts(before).machine_run("riscv32").instructions


def test_the_riscv_build_a_model_executes_keeps_a_strlen_count_as_it_was(builder: Builder, tmp_path: Path) -> None:
    """The RISC-V build's counted strlen goes a word at a time from the first aligned word, so
    its count moved with where the key starts within 8 bytes; aligned, it moves no more."""
    counts = {key_length_riscv_instructions(builder, tmp_path, "x" * n) for n in (1, 2, 3, 4, 5, 6, 7, 8)}
    counts.add(key_length_riscv_instructions(builder, tmp_path, "x", "-DINSTRBUDGET_NO_REGIONS"))
    assert len(counts) == 1, counts


#: strerror's messages are one structure of the counted library's (musl's table): where it lies
#: moved with the program's own data before it.
MESSAGE_C = """
#include <string.h>
const char *volatile other = "%s";
size_t message_length(void) { return strlen(strerror(22)); }
"""


def test_the_riscv_builds_counted_library_data_is_aligned_too(builder: Builder, tmp_path: Path) -> None:
    counts = set()
    for n in range(1, 9):
        source = tmp_path / f"message{n}.c"
        source.write_text(MESSAGE_C % ("x" * n))
        model = default_registry().create("zkvm", {"execute": True})
        with Library(builder.build([source], kind="library", models=[model])) as lib:
            before = lib.snapshot()
            assert lib.message_length() == len("Invalid argument")
            counts.add(lib.counts(before).machine_run("riscv32").instructions)
    assert len(counts) == 1, counts
