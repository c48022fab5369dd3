"""Modules held back from an import: a library that imports an optional dependency only to
look at it, where the caller knows it will not need it.

:func:`held_back` makes ``import <name>`` (and of its submodules) fail with
``ImportError`` inside a ``with`` block, as if the module were not installed; once the
block ends they import again as usual. Two libraries chronoray uses pay for such a look at
import time: pyarrow imports pandas before its first array (:mod:`vertex.arrow_pandas`),
and numba's ``numba.np.arraymath`` imports ``scipy.linalg`` (0.3 s of CPU) to check
whether BLAS is there (:func:`shards.temporal._import_numba`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from vertex.annotations import mark_module_api

__all__ = ["held_back"]


class _Refuse:
    """A meta path finder under which importing one of ``names`` fails."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.split(".", 1)[0] in self.names:
            raise ImportError(f"{name} held back from this import by chronoray")


@contextmanager
def held_back(*names: str) -> Iterator[None]:
    """Inside the block, ``import`` of the top-level modules ``names`` (and their
    submodules) fails, unless one is imported already (then it is there as before)."""
    finder = _Refuse(tuple(n for n in names if n not in sys.modules))
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


mark_module_api(globals())
