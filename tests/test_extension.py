"""CPython extension modules through the instrumenting pipeline (cbuild.run.extension), run in a library host."""

from __future__ import annotations

import array
import itertools
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import mmh3
import pytest

from cbuild import Builder, BuildOptions, CBuildError, LibraryCrashed
from cbuild.run.extension import Extension, ExtensionError, RemoteObject, extension_options
from tests.sdists import sdist

DEMO_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

static PyObject *DemoError;

/* Work that depends on the argument's hash: one loop turn per set bit. */
static PyObject *hash_bits(PyObject *self, PyObject *arg) {
    Py_hash_t h = PyObject_Hash(arg);
    if (h == -1) return NULL;
    unsigned long long v = (unsigned long long)h;
    long bits = 0;
    while (v) { bits += (long)(v & 1); v >>= 1; }
    return Py_BuildValue("(nl)", h, bits);
}

/* The sum of 0..n-1, one loop turn each. */
static PyObject *triangle(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0) { PyErr_SetString(DemoError, "n must not be negative"); return NULL; }
    volatile long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return PyLong_FromLong(s);
}

static PyObject *boom(PyObject *self, PyObject *arg) { *(volatile int *)0 = 1; Py_RETURN_NONE; }
static PyObject *quit(PyObject *self, PyObject *arg) { exit(0); }

static PyMethodDef methods[] = {
    {"hash_bits", hash_bits, METH_O, NULL},
    {"triangle", triangle, METH_O, NULL},
    {"boom", boom, METH_NOARGS, NULL},
    {"quit", quit, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "demo", NULL, -1, methods};

PyMODINIT_FUNC PyInit_demo(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    DemoError = PyErr_NewException("demo.Error", PyExc_ValueError, NULL);
    PyModule_AddObject(m, "Error", DemoError);
    PyModule_AddIntConstant(m, "answer", 42);
    return m;
}
"""


@pytest.fixture(scope="module")
def mmh3_sources() -> list[Path]:
    root = sdist("mmh3", "5.3.1") / "src" / "mmh3"
    return [root / "mmh3module.c", root / "murmurhash3.c"]


@pytest.fixture(scope="module")
def mmh3_artifact(builder: Builder, mmh3_sources: list[Path]):  # type: ignore[no-untyped-def]
    return builder.build(mmh3_sources, options=extension_options(BuildOptions()), kind="library")


@pytest.fixture
def built_mmh3(mmh3_artifact) -> Iterator[Extension]:  # type: ignore[no-untyped-def]
    with Extension(mmh3_artifact, "mmh3") as module:
        yield module


@pytest.fixture(scope="module")
def demo_artifact(builder: Builder, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    source = tmp_path_factory.mktemp("demo") / "demo.c"
    source.write_text(DEMO_C)
    return builder.build([source], options=extension_options(BuildOptions(opt_level="1")), kind="library")


def total(module: Extension) -> int:
    """IR instructions the module's code executed since it was imported."""
    counts = module._library.counts(module._origin)
    return sum(count * block.size for count, block in zip(counts.counts, counts.table.blocks, strict=True))


def test_mmh3_from_its_sdist_agrees_with_the_official_wheel(built_mmh3: Extension) -> None:
    rng = random.Random(5)
    for size in [0, 1, 3, 4, 15, 16, 17, 31, 64, 100, 1000]:
        data = rng.randbytes(size)
        seed = rng.randrange(2**32)
        assert built_mmh3.hash(data, seed) == mmh3.hash(data, seed)
        assert built_mmh3.hash(data, seed, signed=False) == mmh3.hash(data, seed, signed=False)
        assert built_mmh3.hash64(data, seed) == mmh3.hash64(data, seed)
        assert built_mmh3.hash128(data, seed, x64arch=False) == mmh3.hash128(data, seed, x64arch=False)
        assert built_mmh3.hash_bytes(data, seed) == mmh3.hash_bytes(data, seed)
        assert built_mmh3.mmh3_32_digest(data, seed) == mmh3.mmh3_32_digest(data, seed)
        assert built_mmh3.mmh3_x64_128_sintdigest(data, seed) == mmh3.mmh3_x64_128_sintdigest(data, seed)
    assert built_mmh3.hash("unicode ✓ text") == mmh3.hash("unicode ✓ text")


def test_objects_the_module_makes_stay_in_its_process(built_mmh3: Extension) -> None:
    hasher = built_mmh3.mmh3_x64_128(seed=7)
    assert isinstance(hasher, RemoteObject)
    reference = mmh3.mmh3_x64_128(seed=7)
    for chunk in [b"abc", b"", b"0123456789abcdef" * 3, b"tail"]:
        hasher.update(chunk)
        reference.update(chunk)
    assert hasher.digest() == reference.digest()
    assert hasher.sintdigest() == reference.sintdigest()
    assert hasher.copy().utupledigest() == reference.copy().utupledigest()
    assert repr(hasher).startswith("<mmh3.mmh3_x64_128 object at ")
    assert hasher.name == "mmh3_x64_128"
    assert hasher.digest_size == 16


def test_errors_are_the_wheels_errors(built_mmh3: Extension) -> None:
    for call in [lambda m: m.hash(1.5), lambda m: m.hash(b"x", seed=2**70), lambda m: m.hash(b"x", nope=1)]:
        with pytest.raises((TypeError, ValueError)) as expected:
            call(mmh3)
        with pytest.raises(expected.type) as got:
            call(built_mmh3)
        assert str(got.value) == str(expected.value)
    with pytest.raises(AttributeError, match="no_such_function"):
        built_mmh3.no_such_function  # noqa: B018


def test_counts_are_the_modules_own_code_and_grow_with_the_input(mmh3_artifact) -> None:  # type: ignore[no-untyped-def]
    totals = []
    for blocks in (4, 5, 6, 7):
        with Extension(mmh3_artifact, "mmh3") as module:
            assert total(module) == 0  # importing (PyInit_mmh3) is not counted
            module.hash128(bytes(16 * blocks), 42)
            totals.append(total(module))
    steps = {b - a for a, b in itertools.pairwise(totals)}
    assert len(steps) == 1  # one more 16-byte block, the same number of instructions each time
    assert steps.pop() > 0


def test_counts_repeat_in_fresh_processes(mmh3_artifact) -> None:  # type: ignore[no-untyped-def]
    seen = set()
    for _ in range(3):
        with Extension(mmh3_artifact, "mmh3") as module:
            hasher = module.mmh3_x64_128(seed=1)
            for n in range(20):
                hasher.update(bytes(range(n)))
                module.hash(str(n) * n)
            seen.add(total(module))
    assert len(seen) == 1


def test_string_hashes_are_fixed_in_the_modules_process(demo_artifact) -> None:  # type: ignore[no-untyped-def]
    """Code whose work follows str hashes counts the same every run: the host fixes PYTHONHASHSEED."""
    fixed = subprocess.run(
        [sys.executable, "-c", "print(hash('instrbudget'))"],
        env={"PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        check=True,
    )
    results = set()
    for _ in range(3):
        with Extension(demo_artifact, "demo") as demo:
            h, bits = demo.hash_bits("instrbudget")
            results.add((h, bits, total(demo)))
    assert len(results) == 1
    h, bits, _ = results.pop()
    assert h == int(fixed.stdout)
    assert bits == bin(h & (2**64 - 1)).count("1")


def test_exact_count_follows_the_loop(demo_artifact) -> None:  # type: ignore[no-untyped-def]
    totals = []
    for n in (80, 160, 240):  # multiples of 8: the optimiser unrolls the loop by 4 at -O1
        with Extension(demo_artifact, "demo") as demo:
            assert demo.triangle(n) == n * (n - 1) // 2
            totals.append(total(demo))
    assert totals[2] - totals[1] == totals[1] - totals[0] > 0
    with Extension(demo_artifact, "demo") as demo:
        assert demo.answer == 42


def test_the_modules_own_exception_types(demo_artifact) -> None:  # type: ignore[no-untyped-def]
    with Extension(demo_artifact, "demo") as demo:
        with pytest.raises(ValueError, match=r"demo\.Error: n must not be negative") as raised:
            demo.triangle(-1)
        assert isinstance(raised.value, ExtensionError)
        assert raised.value.type_name == "demo.Error"
        with pytest.raises(OverflowError):
            demo.triangle(2**80)


def test_a_crash_in_the_module_ends_its_process_only(demo_artifact) -> None:  # type: ignore[no-untyped-def]
    for name in ("boom", "quit"):
        with Extension(demo_artifact, "demo") as demo:
            with pytest.raises(LibraryCrashed, match=rf"demo\.{name}\(\)"):
                getattr(demo, name)()
            with pytest.raises(LibraryCrashed, match="ended earlier"):
                demo.triangle(3)
    with Extension(demo_artifact, "demo") as demo:
        assert demo.triangle(4) == 6


def test_arguments_the_host_could_not_rebuild_are_refused(demo_artifact) -> None:  # type: ignore[no-untyped-def]
    class Local:
        pass

    with Extension(demo_artifact, "demo") as demo:
        with pytest.raises(CBuildError, match=r"demo\.triangle\(\): an argument cannot be sent .*Local"):
            demo.triangle(Local())
        assert demo.triangle(3) == 3


def test_limited_api(builder: Builder, tmp_path: Path) -> None:
    source = tmp_path / "demo.c"
    source.write_text(DEMO_C)
    artifact = builder.build([source], options=extension_options(BuildOptions(), limited_api="3.8"), kind="library")
    with Extension(artifact, "demo") as demo:
        assert demo.triangle(5) == 10
    with pytest.raises(CBuildError, match=r"limited_api: expected a Python version such as '3\.8', got 'three'"):
        extension_options(BuildOptions(), limited_api="three")
    with pytest.raises(CBuildError, match="not a Python identifier"):
        Extension(artifact, "de-mo")


SESSION_TESTS = """\
import mmh3
import pytest


@pytest.fixture
def built(cbuild):
    return cbuild.extension("mmh3/mmh3module.c", "mmh3/murmurhash3.c", name="mmh3")


@pytest.mark.budget(max_instr=100_000)
@pytest.mark.parametrize("size", [0, 100, 1000])
def test_hash128(built, size):
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert built.hash128(data, 42) == mmh3.hash128(data, 42)


def test_hasher(built):
    h = built.mmh3_32(b"abc", 3)
    h.update(b"def")
    assert h.digest() == mmh3.mmh3_32(b"abcdef", 3).digest()


def test_demo_crash(cbuild):
    cbuild.extension("demo.c", name="demo").boom()


def test_demo_after_the_crash(cbuild):
    assert cbuild.extension("demo.c", name="demo", limited_api="3.8").triangle(8) == 28
"""


def test_extension_through_the_fixture(pytester: pytest.Pytester, mmh3_sources: list[Path]) -> None:
    """cbuild.extension in real sessions: counts against the baseline, serial and under xdist, and a crash
    that fails its own test only."""
    (pytester.path / "mmh3").mkdir()
    for source in mmh3_sources:
        for path in source.parent.iterdir():
            if path.suffix in (".c", ".h"):
                (pytester.path / "mmh3" / path.name).write_bytes(path.read_bytes())
    pytester.makefile(".c", demo=DEMO_C)
    pytester.makepyfile(test_ext=SESSION_TESTS)
    out = pytester.path / "r.json"
    docs = []
    for args in (["--instrbudget-update"], [], ["-n", "2"]):
        result = pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-json={out}", *args)
        result.assert_outcomes(passed=5, failed=1)
        result.stdout.fnmatch_lines(["*LibraryCrashed: demo.boom() crashed: killed by SIGSEGV*"])
        docs.append(json.loads(out.read_text()))
    totals = [
        {name: test["metrics"]["ir_instructions"]["value"] for name, test in doc["tests"].items() if test["metrics"]}
        for doc in docs
    ]
    assert totals[0] == totals[1] == totals[2]
    sizes = [totals[0][f"test_ext.py::test_hash128[{n}]"] for n in (0, 100, 1000)]
    assert 0 < sizes[0] < sizes[1] < sizes[2]
    assert {t["status"] for n, t in docs[1]["tests"].items() if "hash128" in n} == {"ok"}


def test_objects_of_another_process_are_refused(mmh3_artifact) -> None:  # type: ignore[no-untyped-def]
    with Extension(mmh3_artifact, "mmh3") as first, Extension(mmh3_artifact, "mmh3") as second:
        hasher = first.mmh3_32(b"abc")
        with pytest.raises(CBuildError, match=r"mmh3\.mmh3_32 object lives in another library process"):
            second.hash(hasher)
        assert second.hash(b"abc") == mmh3.hash(b"abc")


HOSTILE_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *Error, *SubError;

static PyObject *echo(PyObject *self, PyObject *args) { Py_INCREF(args); return args; }
static PyObject *call(PyObject *self, PyObject *arg) { return PyObject_CallNoArgs(arg); }
static PyObject *interrupt(PyObject *self, PyObject *arg) { PyErr_SetNone(PyExc_KeyboardInterrupt); return NULL; }
static PyObject *leave(PyObject *self, PyObject *arg) { PyErr_SetObject(PyExc_SystemExit, arg); return NULL; }
static PyObject *fail(PyObject *self, PyObject *arg) {
    PyErr_SetObject(PyObject_IsTrue(arg) ? SubError : Error, arg);
    return NULL;
}

/* A number kept in the module's process: arithmetic and comparisons go there. */
typedef struct { PyObject_HEAD long v; } Num;
static PyObject *num_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    long v = 0;
    if (!PyArg_ParseTuple(args, "|l", &v)) return NULL;
    Num *n = (Num *)type->tp_alloc(type, 0);
    if (n != NULL) n->v = v;
    return (PyObject *)n;
}
static PyObject *num_add(PyObject *a, PyObject *b) {
    if (PyLong_Check(a) || !PyLong_Check(b)) Py_RETURN_NOTIMPLEMENTED;
    return PyLong_FromLong(((Num *)a)->v + PyLong_AsLong(b));
}
static PyObject *num_compare(PyObject *a, PyObject *b, int op) {
    if (!PyLong_Check(b)) Py_RETURN_NOTIMPLEMENTED;
    long x = ((Num *)a)->v, y = PyLong_AsLong(b);
    Py_RETURN_RICHCOMPARE(x, y, op);
}
static PyObject *num_negative(PyObject *a) { return PyLong_FromLong(-((Num *)a)->v); }
static PyObject *num_int(PyObject *a) { return PyLong_FromLong(((Num *)a)->v); }
static PyType_Slot num_slots[] = {
    {Py_tp_new, num_new}, {Py_nb_add, num_add}, {Py_tp_richcompare, num_compare},
    {Py_nb_negative, num_negative}, {Py_nb_int, num_int}, {0, NULL},
};
static PyType_Spec num_spec = {"hostile.Num", sizeof(Num), 0, Py_TPFLAGS_DEFAULT, num_slots};

/* 0, 1, 2, ...: for ever, or up to (not including) a limit given. */
typedef struct { PyObject_HEAD long next, limit; } Naturals;
static PyObject *naturals_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    long limit = -1;
    if (!PyArg_ParseTuple(args, "|l", &limit)) return NULL;
    Naturals *n = (Naturals *)type->tp_alloc(type, 0);
    if (n != NULL) { n->next = 0; n->limit = limit; }
    return (PyObject *)n;
}
static PyObject *naturals_iter(PyObject *self) { Py_INCREF(self); return self; }
static PyObject *naturals_next(PyObject *self) {
    Naturals *n = (Naturals *)self;
    if (n->limit >= 0 && n->next >= n->limit) return NULL;
    return PyLong_FromLong(n->next++);
}
static PyType_Slot naturals_slots[] = {
    {Py_tp_new, naturals_new}, {Py_tp_iter, naturals_iter}, {Py_tp_iternext, naturals_next}, {0, NULL},
};
static PyType_Spec naturals_spec = {"hostile.Naturals", sizeof(Naturals), 0, Py_TPFLAGS_DEFAULT, naturals_slots};

/* Writes `byte` into every byte of a writable buffer, then fails when `byte` is 0. */
static PyObject *fill(PyObject *self, PyObject *args) {
    Py_buffer view;
    unsigned char byte;
    if (!PyArg_ParseTuple(args, "w*b", &view, &byte)) return NULL;
    memset(view.buf, byte, (size_t)view.len);
    PyBuffer_Release(&view);
    if (byte == 0) { PyErr_SetString(PyExc_ValueError, "filled with zeros"); return NULL; }
    Py_RETURN_NONE;
}
static PyObject *grow(PyObject *self, PyObject *arg) {
    if (PyByteArray_Resize(arg, PyByteArray_Size(arg) + 1) < 0) return NULL;
    PyByteArray_AS_STRING(arg)[PyByteArray_Size(arg) - 1] = '!';
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fill", fill, METH_VARARGS, NULL},
    {"grow", grow, METH_O, NULL},
    {"echo", echo, METH_VARARGS, NULL},
    {"call", call, METH_O, NULL},
    {"interrupt", interrupt, METH_NOARGS, NULL},
    {"leave", leave, METH_O, NULL},
    {"fail", fail, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hostile", NULL, -1, methods};

PyMODINIT_FUNC PyInit_hostile(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Error = PyErr_NewException("hostile.Error", PyExc_KeyError, NULL);
    SubError = PyErr_NewException("hostile.SubError", Error, NULL);
    PyModule_AddObject(m, "Error", Error);
    PyModule_AddObject(m, "SubError", SubError);
    PyModule_AddObject(m, "Num", PyType_FromSpec(&num_spec));
    PyModule_AddObject(m, "Naturals", PyType_FromSpec(&naturals_spec));
    PyModule_AddStringConstant(m, "__version__", "1.2");
    return m;
}
"""


@pytest.fixture(scope="module")
def hostile_artifact(builder: Builder, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    source = tmp_path_factory.mktemp("hostile") / "hostile.c"
    source.write_text(HOSTILE_C)
    return builder.build([source], options=extension_options(BuildOptions(opt_level="1")), kind="library")


def test_keyboard_interrupt_and_system_exit_from_the_module_end_neither_process(hostile_artifact) -> None:  # type: ignore[no-untyped-def]
    with Extension(hostile_artifact, "hostile") as hostile:
        with pytest.raises(ExtensionError) as info:
            hostile.interrupt()
        assert not isinstance(info.value, KeyboardInterrupt)  # it would end the test session
        assert (str(info.value), info.value.type_name) == ("KeyboardInterrupt", "KeyboardInterrupt")
        with pytest.raises(ExtensionError) as info:
            hostile.leave(3)
        assert not isinstance(info.value, SystemExit)
        assert (str(info.value), info.value.type_name) == ("SystemExit: 3", "SystemExit")
        assert hostile.echo(1) == (1,)


def test_the_modules_exception_classes_catch_its_errors(hostile_artifact) -> None:  # type: ignore[no-untyped-def]
    with Extension(hostile_artifact, "hostile") as hostile:
        with pytest.raises(hostile.Error) as info:
            hostile.fail(0)
        assert type(info.value) is hostile.Error
        assert isinstance(info.value, KeyError)
        assert str(info.value) == "'hostile.Error: 0'"
        with pytest.raises(hostile.Error) as info:  # hostile.SubError derives from hostile.Error
            hostile.fail(1)
        assert type(info.value) is hostile.SubError
        assert info.value.type_name == "hostile.SubError"
        assert hostile.echo(hostile.SubError, hostile.Error) == (hostile.SubError, hostile.Error)
        assert repr(hostile.Error) == "<class 'hostile.Error'>"
        with Extension(hostile_artifact, "hostile") as other:
            with pytest.raises(CBuildError) as refused:
                other.echo(hostile.Error)
            assert str(refused.value) == (
                "hostile.echo(): an argument cannot be sent to the library's process: hostile.Error of the test "
                "process stands for no class of this library process"
            )


def a_function_of_the_tests() -> int:
    return 1


class AClassOfTheTests:
    pass


def test_the_tests_own_functions_and_classes_are_refused(hostile_artifact) -> None:  # type: ignore[no-untyped-def]
    prefix = "hostile.call(): an argument cannot be sent to the library's process: "
    callback = (
        "is the test's own function: code in the library's process cannot call back into the test's (only "
        "built-in and standard-library functions travel, by name)"
    )
    with Extension(hostile_artifact, "hostile") as hostile:
        for value, message in [
            (lambda: 1, f"{__name__}.{test_the_tests_own_functions_and_classes_are_refused.__name__}.<locals>.<lambda> "
                        f"{callback}"),
            (a_function_of_the_tests, f"{__name__}.a_function_of_the_tests {callback}"),
            (AClassOfTheTests, f"{__name__}.AClassOfTheTests is the test's own class, which the library's process "
                               "cannot import"),
            (_nested(5000), "maximum recursion depth exceeded"),
        ]:  # fmt: skip
            with pytest.raises(CBuildError) as info:
                hostile.call(value)
            assert str(info.value).startswith(prefix + message), str(info.value)
        assert hostile.call(dict) == {}  # built-in classes and functions travel by name


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


def test_a_limited_api_newer_than_this_python_is_refused() -> None:
    newer = f"3.{sys.version_info.minor + 1}"
    with pytest.raises(CBuildError) as info:
        extension_options(BuildOptions(), limited_api=newer)
    assert str(info.value) == (
        f"limited_api: {newer!r} is not a stable ABI this Python ({sys.version_info.major}."
        f"{sys.version_info.minor}) can load (3.2 up to its own version)"
    )


def test_operators_and_special_names_reach_the_modules_objects(hostile_artifact) -> None:  # type: ignore[no-untyped-def]
    with Extension(hostile_artifact, "hostile") as hostile:
        num = hostile.Num(5)
        assert isinstance(num, RemoteObject)
        assert num + 2 == 7
        assert (num < 6, num <= 5, num > 5, num >= 6) == (True, True, False, False)
        assert (-num, int(num)) == (-5, 5)
        with pytest.raises(TypeError, match="unsupported operand"):
            num - 1
        assert (hostile.__name__, hostile.__version__) == ("hostile", "1.2")
        assert hostile.Num.__name__ == "Num"
        with pytest.raises(AttributeError):
            hostile.__deepcopy__  # noqa: B018 - protocols probing the proxy do not reach the module


def test_writable_buffers_get_what_the_module_wrote(hostile_artifact) -> None:  # type: ignore[no-untyped-def]
    with Extension(hostile_artifact, "hostile") as hostile:
        raw = bytearray(8)
        hostile.fill(raw, 7)
        assert raw == b"\x07" * 8
        words = array.array("I", [1, 2])
        hostile.fill(words, 1)
        assert words.tolist() == [0x01010101, 0x01010101]
        backing = bytearray(3)
        hostile.fill(memoryview(backing), 2)
        assert backing == b"\x02\x02\x02"
        with pytest.raises(ValueError, match="filled with zeros"):
            hostile.fill(raw, 0)
        assert raw == bytes(8)  # written before the module raised
        grown = bytearray(b"ab")
        hostile.grow(grown)
        assert grown == b"ab!"
        with pytest.raises(CBuildError, match=r"hostile\.grow\(\): argument 1 changed size in the library's process"):
            hostile.grow(memoryview(bytearray(2)))
        assert hostile.echo(memoryview(b"read-only")) == (b"read-only",)
        with pytest.raises(TypeError):
            hostile.fill(b"immutable", 1)


def test_an_endless_iterator_of_the_module_streams_in_batches(hostile_artifact) -> None:  # type: ignore[no-untyped-def]
    """Iteration runs in batches in the module's process: an endless iterator is read as far as
    the loop goes (it used to be copied whole first, until the timeout), a finite one to its end."""
    with Extension(hostile_artifact, "hostile", timeout=20) as hostile:
        seen = []
        for value in hostile.Naturals():
            seen.append(value)
            if value == 2_500:
                break
        assert seen == list(range(2_501))
        assert list(hostile.Naturals(2_000)) == list(range(2_000))  # a multiple of the batch
        assert list(hostile.Naturals(7)) == list(range(7))
        assert list(hostile.Naturals(0)) == []
        assert sum(hostile.Naturals(3_001)) == 3_000 * 3_001 // 2


def test_riscv_models_on_an_extension_say_it_runs_natively_only(pytester: pytest.Pytester) -> None:
    """zkvm on code that includes Python.h: not CPython's LONG_BIT error deep in pyport.h, but what
    it means, where the module includes the header, and the native metric still measured."""
    pytester.makefile(".c", demo=DEMO_C)
    pytester.makepyfile(
        test_ext="def test_triangle(cbuild):\n"
        "    demo = cbuild.extension('demo.c', name='demo')\n"
        "    assert demo.triangle(10) == 45\n"
    )
    pytester.makefile(".toml", pyproject='[tool.instrbudget]\nmodels = ["ir-count", "zkvm"]\n')
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-json=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "instrbudget: zkvm metrics unavailable in 1 test(s):*",
            "instrbudget:   test_ext.py::test_triangle: cannot be built for riscv32: it includes CPython's headers "
            "(Python.h), which describe this host's Python, not a riscv32 one: extension modules run natively only*",
            "instrbudget:     at demo.c:2",  # its #include <Python.h>
        ]
    )
    assert "LONG_BIT" not in result.stdout.str()
    doc = json.loads((pytester.path / "r.json").read_text())["tests"]["test_ext.py::test_triangle"]
    assert doc["metrics"]["ir_instructions"]["value"] > 0
    assert set(doc["unavailable"]) == {"zk_cycles", "zk_user_cycles", "zk_paging_cycles", "zk_segments"}


BITS_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* A word of bits: & | ^ << >> ~, int(), float(), bool(), use as an index, and `i in bits`. */
typedef struct { PyObject_HEAD unsigned long v; } Bits;
static PyTypeObject BitsType;

static PyObject *make(unsigned long v) {
    Bits *b = PyObject_New(Bits, &BitsType);
    if (b) b->v = v;
    return (PyObject *)b;
}
static int value(PyObject *o, unsigned long *v) {
    if (PyObject_TypeCheck(o, &BitsType)) { *v = ((Bits *)o)->v; return 1; }
    if (PyLong_Check(o)) { *v = PyLong_AsUnsignedLong(o); return !PyErr_Occurred(); }
    return 0;
}
#define BINARY(name, expr) \
    static PyObject *name(PyObject *a, PyObject *b) { \
        unsigned long x, y; \
        if (!value(a, &x) || !value(b, &y)) Py_RETURN_NOTIMPLEMENTED; \
        return make(expr); \
    }
BINARY(b_and, x & y)
BINARY(b_or, x | y)
BINARY(b_xor, x ^ y)
BINARY(b_lshift, x << y)
BINARY(b_rshift, x >> y)
static PyObject *b_invert(PyObject *a) { return make(~((Bits *)a)->v & 0xffu); }
static PyObject *b_int(PyObject *a) { return PyLong_FromUnsignedLong(((Bits *)a)->v); }
static PyObject *b_float(PyObject *a) { return PyFloat_FromDouble((double)((Bits *)a)->v); }
static int b_bool(PyObject *a) { return ((Bits *)a)->v != 0; }
static int b_contains(PyObject *a, PyObject *i) {
    long n = PyLong_AsLong(i);
    return n == -1 && PyErr_Occurred() ? -1 : (int)((((Bits *)a)->v >> n) & 1u);
}
static PyObject *b_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
    unsigned long v = 0;
    if (!PyArg_ParseTuple(args, "k", &v)) return NULL;
    return make(v);
}
static PyNumberMethods number = {
    .nb_and = b_and, .nb_or = b_or, .nb_xor = b_xor, .nb_lshift = b_lshift, .nb_rshift = b_rshift,
    .nb_invert = b_invert, .nb_int = b_int, .nb_float = b_float, .nb_bool = b_bool, .nb_index = b_int,
};
static PySequenceMethods sequence = {.sq_contains = b_contains};
static PyTypeObject BitsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bits.Bits", .tp_basicsize = sizeof(Bits), .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = b_new, .tp_as_number = &number, .tp_as_sequence = &sequence,
};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "bits", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_bits(void) {
    if (PyType_Ready(&BitsType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddObjectRef(m, "Bits", (PyObject *)&BitsType) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
"""


def test_operators_on_the_modules_objects(builder: Builder, tmp_path: Path) -> None:
    source = tmp_path / "bits.c"
    source.write_text(BITS_C)
    artifact = builder.build([source], options=extension_options(BuildOptions()), kind="library")
    with Extension(artifact, "bits") as bits:
        a, b = bits.Bits(0b1100), bits.Bits(0b1010)
        assert (int(a & b), int(a | b), int(a ^ b), int(a << 1), int(a >> 2)) == (8, 14, 6, 24, 3)
        assert (int(3 & a), int(1 | a), int(0xF ^ a), int(1 << bits.Bits(3))) == (0, 13, 3, 8)  # reflected
        assert int(~a) == 0b11110011
        c = a
        c &= b  # in place: the type has no in-place slot, so Python makes a new object
        assert (int(c), int(a)) == (8, 12)
        assert (float(a), bool(a), bool(bits.Bits(0))) == (12.0, True, False)
        assert (hex(a), [10, 20, 30, 40][bits.Bits(2)]) == ("0xc", 30)  # __index__
        assert (2 in a, 0 in a) == (True, False)
        # What the type does not support says so, as Python would.
        with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for @: 'bits.Bits' and 'bits.Bits'"):
            a @ b
        with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for divmod\(\): 'bits.Bits' and 'int'"):
            divmod(a, 2)
        with pytest.raises(TypeError, match=r"bad operand type for abs\(\): 'bits.Bits'"):
            abs(a)
        with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \*\*"):
            a**2
