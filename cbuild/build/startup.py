"""Static constructors and destructors where the C library runs them: ``.init_array`` and ``.fini_array``.

clang lists a module's constructors (C++ globals' initialisers, ``__attribute__((constructor))``)
in ``@llvm.global_ctors`` and its destructors in ``@llvm.global_dtors``. LLVM's code generator puts
them in ``.init_array``/``.fini_array`` only where the target machine says so, which clang's does
and llvmlite's cannot: there they go to the old ``.ctors``/``.dtors`` sections, which neither glibc
nor musl runs without GCC's start-up files, so a program's globals were never initialised. Each
entry becomes a pointer in the section of its priority (``.init_array.101``; the default, 65535,
in ``.init_array``), in the list's order, in the group of the variable it initialises where that
has one (a C++ inline variable's copies in other units are then dropped with their entries), kept
by ``@llvm.compiler.used``.
"""

from __future__ import annotations

import re

from cbuild.errors import InstrumentError

_NAME = r'@(?:"(?:[^"\\]|\\.)*"|[-\w$.]+)'
_LIST = re.compile(r"^@llvm\.global_(ctors|dtors) = appending global \[\d+ x \{ i32, ptr, ptr \}\] \[(.*)\]$", re.M)
_ENTRY = re.compile(rf"\{{ i32, ptr, ptr \}} \{{ i32 (\d+), ptr ({_NAME}), ptr (null|{_NAME}) \}}")
_USED = re.compile(
    r'^@llvm\.compiler\.used = appending global \[(\d+) x ptr\] \[(.*)\], section "llvm\.metadata"$', re.M
)
#: The default priority, whose entries go in the unsuffixed section.
_DEFAULT = 65535


#: A global in a comdat: its name, and the group's where it names one (else the group is its own).
_GROUPED = re.compile(rf"^({_NAME}) = [^\n]*?, comdat(?:\((\$(?:[-\w.$]+|\"[^\"]*\"))\))?", re.M)


def _comdats(text: str) -> dict[str, str]:
    """The comdat group of each global of ``text`` that has one, read in one pass."""
    return {m.group(1): m.group(2) or "$" + m.group(1)[1:] for m in _GROUPED.finditer(text)}


def place_structors(text: str) -> str:
    """``text`` (a module's IR) with its constructor and destructor lists as section entries."""
    added: list[str] = []
    groups: dict[str, str] | None = None  # read once, where an entry names a variable
    lines: list[str] = []
    for found in _LIST.finditer(text):
        kind, body = found.groups()
        entries = _ENTRY.findall(body)
        if len(_ENTRY.sub("", body).replace(",", "").split()) != 0:
            raise InstrumentError(f"cannot read @llvm.global_{kind}: {found.group(0)[:300]}")
        section = ".init_array" if kind == "ctors" else ".fini_array"
        for i, (priority, function, key) in enumerate(entries):
            name = f"@__instrbudget.{kind}.{i}"
            suffix = "" if int(priority) == _DEFAULT else f".{int(priority)}"
            if key != "null" and groups is None:
                groups = _comdats(text)
            group = groups.get(key) if key != "null" and groups is not None else None
            where = f", comdat({group})" if group is not None else ""
            lines.append(f'{name} = private global ptr {function}, section "{section}{suffix}"{where}')
            added.append(name)
    text = _LIST.sub("", text)
    if "@llvm.global_ctors = " in text or "@llvm.global_dtors = " in text:  # left in .ctors: never run
        raise InstrumentError("cannot read the module's @llvm.global_ctors or @llvm.global_dtors")
    if not added:
        return text
    used = _USED.search(text)
    if used is None:
        values = ", ".join(f"ptr {name}" for name in added)
        lines.append(f'@llvm.compiler.used = appending global [{len(added)} x ptr] [{values}], section "llvm.metadata"')
    else:
        count, values = int(used.group(1)) + len(added), used.group(2) + "".join(f", ptr {name}" for name in added)
        text = _USED.sub(lambda _: "", text)
        lines.append(f'@llvm.compiler.used = appending global [{count} x ptr] [{values}], section "llvm.metadata"')
    return text + "\n" + "\n".join(lines) + "\n"
