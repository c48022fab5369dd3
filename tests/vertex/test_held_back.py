"""Modules held back from an import (:mod:`vertex.held_back`)."""

from __future__ import annotations

import sys

import pytest

from vertex.held_back import held_back


def test_a_held_back_module_fails_to_import_inside_the_block_only() -> None:
    name = "chronoray_test_absent_module_xyz"
    with held_back(name), pytest.raises(ImportError, match="held back"):
        __import__(f"{name}.sub")
    with pytest.raises(ModuleNotFoundError):  # after the block: the usual answer
        __import__(name)


def test_a_module_imported_already_stays_importable() -> None:
    assert "json" in sys.modules or __import__("json")
    with held_back("json"):
        import json

        assert json.dumps([1]) == "[1]"
