"""The project's copies of two SNAP temporal networks (see ``README.md`` next to this file).

>>> collegemsg_path().name, bitcoinotc_path().name
('collegemsg.txt', 'bitcoinotc.csv')
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["bitcoinotc_path", "collegemsg_path"]

_HERE = Path(__file__).resolve().parent


def collegemsg_path() -> Path:
    """SNAP CollegeMsg: ``SRC DST UNIXTS`` lines, 59,835 edges over 1,899 vertices."""
    return _HERE / "collegemsg.txt"


def bitcoinotc_path() -> Path:
    """SNAP soc-sign-bitcoin-otc: ``SRC,DST,RATING,TIME`` lines, 35,592 rated edges."""
    return _HERE / "bitcoinotc.csv"
