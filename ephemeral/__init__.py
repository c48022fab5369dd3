"""Live computations on the evolving graph (ephemeral computations, notification streams,
secondary indexes). Not built yet: see the project's issues."""

__all__: list[str] = []
