"""One Ray actor class per Python class, made once per process.

``ray.remote(cls)`` makes a new ``ActorClass`` each time, and Ray exports every new one to
the cluster on its first ``.remote()``: it pickles the class, disassembles its code to name
it (~0.1 s per class) and stores it in the GCS. A graph starts four kinds of actors, so
wrapping them anew per graph cost ~0.5 s of the driver's CPU per graph. :func:`actor_class`
wraps each class once; Ray itself exports a cached class again when the process joins
another cluster or job (``ActorClass`` remembers where it was exported), so the cache is
safe across ``ray.shutdown()``/``ray.init()``."""

from __future__ import annotations

from functools import cache
from typing import Any

import ray

from vertex.annotations import mark_module_api

__all__ = ["actor_class"]


@cache
def actor_class(cls: type) -> Any:
    """``ray.remote(cls)``, made once per process (options are given per actor with
    ``.options(...)``, which does not re-export the class)."""
    return ray.remote(cls)


mark_module_api(globals())
