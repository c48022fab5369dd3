"""Time travel: consistent cuts, reconstruction, retrospective queries and offline
processing models. Not built yet: see the project's issues."""

__all__: list[str] = []
