"""Where code is: a binary's functions and source lines (its symbol table and DWARF line
tables), and :class:`Frame`, the place a stop or an error names (``spin (spin.c:5)``).

Used by native stops (:mod:`cbuild.run.stops`) and by the RISC-V executor's messages alike.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elftools.elf.elffile import ELFFile


@dataclass(frozen=True)
class Frame:
    """A place in the measured code."""

    function: str
    file: str
    line: int

    def __str__(self) -> str:
        name = Path(self.file).name if self.file else "?"
        return f"{self.function} ({name}:{self.line})" if self.line else f"{self.function} ({name}, no source line)"


class Symbols:
    """Functions and source lines of a binary's addresses (symbol table and DWARF line tables).

    Line tables are decoded per compilation unit, only for the units holding addresses asked for
    (found through ``.debug_aranges`` where the binary has it).
    """

    def __init__(self, path: Path) -> None:
        self._file = path.open("rb")
        self.elf = ELFFile(self._file)
        loads = [seg for seg in self.elf.iter_segments() if seg["p_type"] == "PT_LOAD"]
        self.link_base = min((seg["p_vaddr"] - seg["p_offset"] for seg in loads), default=0)
        symtab = self.elf.get_section_by_name(".symtab") or self.elf.get_section_by_name(".dynsym")
        found = []
        if symtab is not None:
            for sym in symtab.iter_symbols():  # type: ignore[attr-defined]
                if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"] > 0:
                    found.append((sym["st_value"], sym["st_value"] + sym["st_size"], sym.name))
        found.sort()
        self.starts: list[int] = [start for start, _, _ in found]
        self.functions: list[tuple[int, str]] = [(end, str(name)) for _, end, name in found]
        self.dwarf = self.elf.get_dwarf_info() if self.elf.has_dwarf_info() else None
        self.aranges = self.dwarf.get_aranges() if self.dwarf is not None else None
        self._units: dict[int, tuple[list[int], list[tuple[str, int] | None]]] = {}

    def _rows(self, cu: Any) -> tuple[list[int], list[tuple[str, int] | None]]:
        if cu.cu_offset in self._units:
            return self._units[cu.cu_offset]
        rows: list[tuple[int, tuple[str, int] | None]] = []
        program = self.dwarf.line_program_for_CU(cu) if self.dwarf is not None else None
        if program is not None:
            comp_dir = cu.get_top_DIE().attributes.get("DW_AT_comp_dir")
            names = _file_names(program.header, comp_dir.value.decode(errors="replace") if comp_dir else "")
            for entry in program.get_entries():
                state = entry.state
                if state is None:
                    continue
                place = None if state.end_sequence else (names.get(state.file, "?"), state.line)
                rows.append((state.address, place))
        rows.sort(key=lambda r: (r[0], r[1] is not None))
        unit = ([address for address, _ in rows], [place for _, place in rows])
        self._units[cu.cu_offset] = unit
        return unit

    def function(self, address: int) -> str | None:
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0 or address >= self.functions[i][0]:
            return None
        return self.functions[i][1]

    def before(self, address: int, *, within: int) -> tuple[str, int] | None:
        """The function that ends at most ``within`` bytes before ``address`` (which lies in no
        function), and its end."""
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0 or not 0 <= address - self.functions[i][0] < within:
            return None
        end, name = self.functions[i]
        return name, end

    def defining_unit(self, name: str) -> str | None:
        """The source file (its compilation unit's name) whose debug information has a function
        ``name``: one the binary may not export (static, inline), or that was inlined away."""
        if self.dwarf is None:
            return None
        wanted = name.encode()
        for cu in self.dwarf.iter_CUs():
            for die in cu.iter_DIEs():
                attribute = die.attributes.get("DW_AT_name") if die.tag == "DW_TAG_subprogram" else None
                if attribute is not None and attribute.value == wanted:
                    unit = cu.get_top_DIE().attributes.get("DW_AT_name")
                    return unit.value.decode(errors="replace") if unit is not None else "?"
        return None

    def place(self, address: int) -> tuple[str, int] | None:
        if self.dwarf is None:
            return None
        offset = self.aranges.cu_offset_at_addr(address) if self.aranges is not None else None
        units = [self.dwarf.get_CU_at(offset)] if offset is not None else list(self.dwarf.iter_CUs())
        for cu in units:
            addresses, places = self._rows(cu)
            i = bisect.bisect_right(addresses, address) - 1
            if i >= 0 and places[i] is not None:
                return places[i]
        return None


def _file_names(header: Any, comp_dir: str) -> dict[int, str]:
    """A line program's file numbers -> paths (DWARF 5 numbers files and folders from 0, earlier from 1)."""
    version = header["version"]
    dirs = [d.decode(errors="replace") for d in header["include_directory"]]
    out = {}
    for n, entry in enumerate(header["file_entry"]):
        name = entry.name.decode(errors="replace")
        d = entry.dir_index if version >= 5 else entry.dir_index - 1
        folder = dirs[d] if 0 <= d < len(dirs) else comp_dir
        out[n if version >= 5 else n + 1] = name if name.startswith("/") else str(Path(comp_dir, folder, name))
    return out


@functools.lru_cache(maxsize=8)
def symbols(path: Path, mtime_ns: int) -> Symbols:
    """The binary at ``path`` read once per modification time (``mtime_ns``)."""
    return Symbols(path)
