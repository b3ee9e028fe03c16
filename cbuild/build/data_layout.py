"""Where a measured program's data lies: every aggregate global starts on a 32-byte boundary.

The counted ``strlen`` (``libc/string.c``) works through aligned 32-byte blocks, so what it
costs on a global depends on where the global starts within its block.
The linker puts each global after the ones before it, so adding a string literal, a region
marker (whose name is one) or a table anywhere in a program would move the others, and the
count of code that never touches the new data with them. Aligning every array and structure
to :data:`DATA_ALIGN` makes each one's cost depend on its own contents alone.
"""

from __future__ import annotations

import re

#: The boundary aggregate globals start on: the counted strlen's block.
DATA_ALIGN = 32

#: A global variable's definition with an aggregate type (array, structure or vector), its
#: strings masked (:func:`_masked`): ``@name = [linkage and attributes] global|constant TYPE
#: INIT, align N[, ...]``.
_AGGREGATE = re.compile(
    r"^@[^\s=]+ = (?!external )(?P<linkage>(?:[\w()\"]+ )*?)(?:global|constant) [\[{<%].*?"
    r", align (?P<align>\d+)(?=$|,| )"
)
#: Linkages of a definition that may not be the one the program uses.
_SHARED = {"available_externally", "linkonce", "linkonce_odr", "weak", "weak_odr", "common", "extern_weak"}
#: A quoted string of LLVM's assembly (it writes a quote inside one as ``\22``).
_QUOTED = re.compile(r'"[^"]*"')


def _masked(line: str) -> str:
    """``line`` with what its quoted strings hold (a ``c"..."`` initializer, a quoted name)
    replaced by ``_``, at the same positions."""
    return _QUOTED.sub(lambda found: '"' + "_" * (len(found.group()) - 2) + '"', line)


def aligned_data(text: str) -> str:
    """``text`` (LLVM IR) with every aggregate global defined in it aligned to :data:`DATA_ALIGN`
    at least. Globals in a named section are left as they are: code may walk a section as one
    array (``__start_``/``__stop_`` symbols), which padding between its members would break; so
    are LLVM's own (``@llvm.used``, constructors), and definitions another module's copy may
    stand for at run time (weak, ``linkonce``, common, ``available_externally``), whose alignment
    the code must not assume beyond what every copy has. What strings hold is never read as
    part of the definition."""
    out = []
    for line in text.split("\n"):
        if line.startswith("@") and not line.startswith("@llvm."):
            masked = _masked(line)
            found = _AGGREGATE.match(masked) if ' section "' not in masked else None
            if found is not None and int(found["align"]) < DATA_ALIGN and not _SHARED & set(found["linkage"].split()):
                line = line[: found.start("align")] + str(DATA_ALIGN) + line[found.end("align") :]
        out.append(line)
    return "\n".join(out)
