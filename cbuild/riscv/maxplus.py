"""Square matrices over the max-plus semiring: ``+`` is ``max``, ``x`` is ``+``, Null is -inf.

Matrices of pipeline states are the identity in most rows (an instruction changes
the release times of the few resources it uses), so a matrix stores only the rows
that differ from the identity, each as a mapping column -> entry without Null
entries. A product then costs O(rows changed x entries), not O(n^3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: The Null element: no dependence. ``max(x, NULL) == x`` and ``x + NULL == NULL``.
NULL = float("-inf")

Row = dict[int, float]


class Matrix:
    """An n x n max-plus matrix; rows not stored are identity rows."""

    __slots__ = ("n", "rows")

    def __init__(self, n: int, rows: Mapping[int, Mapping[int, float]] | None = None) -> None:
        self.n = n
        self.rows: dict[int, Row] = {}
        for i, row in (rows or {}).items():
            if not 0 <= i < n:
                raise IndexError(f"row {i} outside a {n}x{n} matrix")
            clean = {j: v for j, v in row.items() if v != NULL}
            if any(not 0 <= j < n for j in clean):
                raise IndexError(f"a column of row {i} lies outside a {n}x{n} matrix")
            if clean != {i: 0}:
                self.rows[i] = clean

    @classmethod
    def identity(cls, n: int) -> Matrix:
        """The neutral element: 0 on the diagonal, Null elsewhere."""
        return cls(n)

    @classmethod
    def from_dense(cls, rows: Sequence[Sequence[float]]) -> Matrix:
        """A matrix from a list of rows (use :data:`NULL` for -inf)."""
        n = len(rows)
        if any(len(r) != n for r in rows):
            raise ValueError("a max-plus matrix must be square")
        return cls(n, {i: dict(enumerate(r)) for i, r in enumerate(rows)})

    def row(self, i: int) -> Mapping[int, float]:
        """Row ``i`` as column -> entry (Null entries left out)."""
        return self.rows.get(i, {i: 0})

    def dense(self) -> list[list[float]]:
        """All n x n entries."""
        out = []
        for i in range(self.n):
            row = self.row(i)
            out.append([row.get(j, NULL) for j in range(self.n)])
        return out

    def __matmul__(self, other: Matrix) -> Matrix:
        """Max-plus product: ``(a @ b)[i][j] = max_k a[i][k] + b[k][j]``; ``(a @ b) v == a (b v)``."""
        if self.n != other.n:
            raise ValueError(f"cannot multiply {self.n}x{self.n} by {other.n}x{other.n}")
        rows: dict[int, Row] = dict(other.rows)
        for i, row in self.rows.items():
            out: Row = {}
            for k, a in row.items():
                for j, b in other.row(k).items():
                    v = a + b
                    if v > out.get(j, NULL):
                        out[j] = v
            rows[i] = out
        return Matrix(self.n, rows)

    def apply(self, vector: Sequence[float]) -> list[float]:
        """The product with a column vector: the state after the step this matrix describes."""
        if len(vector) != self.n:
            raise ValueError(f"a {self.n}x{self.n} matrix needs a vector of {self.n}, not {len(vector)}")
        out = list(vector)
        for i, row in self.rows.items():
            out[i] = max((v + vector[j] for j, v in row.items()), default=NULL)
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Matrix) and self.n == other.n and self.rows == other.rows

    def __hash__(self) -> int:
        return hash((self.n, tuple(sorted((i, tuple(sorted(r.items()))) for i, r in self.rows.items()))))

    def __repr__(self) -> str:
        return f"Matrix({self.n}, {self.rows!r})"
