"""The vertex programming model: ``Vertex``, ``Context``, stream ``Update`` records."""

from vertex.model import Context, TemporalVertex, Vertex, VertexTypes
from vertex.records import Update, UpdateKind, VertexId

__all__ = ["Context", "TemporalVertex", "Update", "UpdateKind", "Vertex", "VertexId", "VertexTypes"]
