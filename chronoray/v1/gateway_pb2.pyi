from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UpdateKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UPDATE_KIND_UNSPECIFIED: _ClassVar[UpdateKind]
    ADD_VERTEX: _ClassVar[UpdateKind]
    REMOVE_VERTEX: _ClassVar[UpdateKind]
    ADD_EDGE: _ClassVar[UpdateKind]
    UPDATE_EDGE: _ClassVar[UpdateKind]
    REMOVE_EDGE: _ClassVar[UpdateKind]
    MESSAGE: _ClassVar[UpdateKind]

class Direction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DIRECTION_UNSPECIFIED: _ClassVar[Direction]
    OUT: _ClassVar[Direction]
    IN: _ClassVar[Direction]
UPDATE_KIND_UNSPECIFIED: UpdateKind
ADD_VERTEX: UpdateKind
REMOVE_VERTEX: UpdateKind
ADD_EDGE: UpdateKind
UPDATE_EDGE: UpdateKind
REMOVE_EDGE: UpdateKind
MESSAGE: UpdateKind
DIRECTION_UNSPECIFIED: Direction
OUT: Direction
IN: Direction

class VertexId(_message.Message):
    __slots__ = ("int", "str")
    INT_FIELD_NUMBER: _ClassVar[int]
    STR_FIELD_NUMBER: _ClassVar[int]
    int: int
    str: str
    def __init__(self, int: _Optional[int] = ..., str: _Optional[str] = ...) -> None: ...

class Value(_message.Message):
    __slots__ = ("null", "bool", "int", "float", "str", "bytes", "list", "map", "repr")
    NULL_FIELD_NUMBER: _ClassVar[int]
    BOOL_FIELD_NUMBER: _ClassVar[int]
    INT_FIELD_NUMBER: _ClassVar[int]
    FLOAT_FIELD_NUMBER: _ClassVar[int]
    STR_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    LIST_FIELD_NUMBER: _ClassVar[int]
    MAP_FIELD_NUMBER: _ClassVar[int]
    REPR_FIELD_NUMBER: _ClassVar[int]
    null: bool
    bool: bool
    int: int
    float: float
    str: str
    bytes: bytes
    list: ValueList
    map: ValueMap
    repr: str
    def __init__(self, null: _Optional[bool] = ..., bool: _Optional[bool] = ..., int: _Optional[int] = ..., float: _Optional[float] = ..., str: _Optional[str] = ..., bytes: _Optional[bytes] = ..., list: _Optional[_Union[ValueList, _Mapping]] = ..., map: _Optional[_Union[ValueMap, _Mapping]] = ..., repr: _Optional[str] = ...) -> None: ...

class ValueList(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Value]
    def __init__(self, items: _Optional[_Iterable[_Union[Value, _Mapping]]] = ...) -> None: ...

class ValueMap(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[ValueEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[ValueEntry, _Mapping]]] = ...) -> None: ...

class ValueEntry(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: Value
    value: Value
    def __init__(self, key: _Optional[_Union[Value, _Mapping]] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...

class Time(_message.Message):
    __slots__ = ("int", "float")
    INT_FIELD_NUMBER: _ClassVar[int]
    FLOAT_FIELD_NUMBER: _ClassVar[int]
    int: int
    float: float
    def __init__(self, int: _Optional[int] = ..., float: _Optional[float] = ...) -> None: ...

class UpdateRecord(_message.Message):
    __slots__ = ("offset", "kind", "vertex", "dst", "ts", "props", "vertex_type")
    class PropsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    VERTEX_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    TS_FIELD_NUMBER: _ClassVar[int]
    PROPS_FIELD_NUMBER: _ClassVar[int]
    VERTEX_TYPE_FIELD_NUMBER: _ClassVar[int]
    offset: int
    kind: UpdateKind
    vertex: VertexId
    dst: VertexId
    ts: Time
    props: _containers.MessageMap[str, Value]
    vertex_type: str
    def __init__(self, offset: _Optional[int] = ..., kind: _Optional[_Union[UpdateKind, str]] = ..., vertex: _Optional[_Union[VertexId, _Mapping]] = ..., dst: _Optional[_Union[VertexId, _Mapping]] = ..., ts: _Optional[_Union[Time, _Mapping]] = ..., props: _Optional[_Mapping[str, Value]] = ..., vertex_type: _Optional[str] = ...) -> None: ...

class IngestOpen(_message.Message):
    __slots__ = ("source",)
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    source: str
    def __init__(self, source: _Optional[str] = ...) -> None: ...

class IngestBatch(_message.Message):
    __slots__ = ("records", "arrow_ipc")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[UpdateRecord]
    arrow_ipc: bytes
    def __init__(self, records: _Optional[_Iterable[_Union[UpdateRecord, _Mapping]]] = ..., arrow_ipc: _Optional[bytes] = ...) -> None: ...

class IngestRequest(_message.Message):
    __slots__ = ("open", "batch")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    open: IngestOpen
    batch: IngestBatch
    def __init__(self, open: _Optional[_Union[IngestOpen, _Mapping]] = ..., batch: _Optional[_Union[IngestBatch, _Mapping]] = ...) -> None: ...

class IngestOpened(_message.Message):
    __slots__ = ("source", "resume_after")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    RESUME_AFTER_FIELD_NUMBER: _ClassVar[int]
    source: str
    resume_after: int
    def __init__(self, source: _Optional[str] = ..., resume_after: _Optional[int] = ...) -> None: ...

class IngestAck(_message.Message):
    __slots__ = ("batch", "through_offset", "records", "skipped")
    BATCH_FIELD_NUMBER: _ClassVar[int]
    THROUGH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    batch: int
    through_offset: int
    records: int
    skipped: int
    def __init__(self, batch: _Optional[int] = ..., through_offset: _Optional[int] = ..., records: _Optional[int] = ..., skipped: _Optional[int] = ...) -> None: ...

class IngestResponse(_message.Message):
    __slots__ = ("opened", "ack")
    OPENED_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    opened: IngestOpened
    ack: IngestAck
    def __init__(self, opened: _Optional[_Union[IngestOpened, _Mapping]] = ..., ack: _Optional[_Union[IngestAck, _Mapping]] = ...) -> None: ...

class Cut(_message.Message):
    __slots__ = ("at", "clock")
    AT_FIELD_NUMBER: _ClassVar[int]
    CLOCK_FIELD_NUMBER: _ClassVar[int]
    at: float
    clock: ClockCut
    def __init__(self, at: _Optional[float] = ..., clock: _Optional[_Union[ClockCut, _Mapping]] = ...) -> None: ...

class ClockCut(_message.Message):
    __slots__ = ("clocks",)
    CLOCKS_FIELD_NUMBER: _ClassVar[int]
    clocks: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, clocks: _Optional[_Iterable[int]] = ...) -> None: ...

class StatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ShardStats(_message.Message):
    __slots__ = ("shard", "vertices", "edges", "worker_clock", "errors", "restarted", "applied")
    class AppliedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    SHARD_FIELD_NUMBER: _ClassVar[int]
    VERTICES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    WORKER_CLOCK_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    RESTARTED_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    shard: int
    vertices: int
    edges: int
    worker_clock: int
    errors: int
    restarted: bool
    applied: _containers.ScalarMap[str, int]
    def __init__(self, shard: _Optional[int] = ..., vertices: _Optional[int] = ..., edges: _Optional[int] = ..., worker_clock: _Optional[int] = ..., errors: _Optional[int] = ..., restarted: _Optional[bool] = ..., applied: _Optional[_Mapping[str, int]] = ...) -> None: ...

class GatewayStats(_message.Message):
    __slots__ = ("ingest_streams", "subscriptions", "batches", "records", "held_records", "held_records_max", "arrow_records")
    INGEST_STREAMS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    HELD_RECORDS_FIELD_NUMBER: _ClassVar[int]
    HELD_RECORDS_MAX_FIELD_NUMBER: _ClassVar[int]
    ARROW_RECORDS_FIELD_NUMBER: _ClassVar[int]
    ingest_streams: int
    subscriptions: int
    batches: int
    records: int
    held_records: int
    held_records_max: int
    arrow_records: int
    def __init__(self, ingest_streams: _Optional[int] = ..., subscriptions: _Optional[int] = ..., batches: _Optional[int] = ..., records: _Optional[int] = ..., held_records: _Optional[int] = ..., held_records_max: _Optional[int] = ..., arrow_records: _Optional[int] = ...) -> None: ...

class StatsReply(_message.Message):
    __slots__ = ("vertices", "edges", "shards", "graph", "gateway")
    VERTICES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    GRAPH_FIELD_NUMBER: _ClassVar[int]
    GATEWAY_FIELD_NUMBER: _ClassVar[int]
    vertices: int
    edges: int
    shards: _containers.RepeatedCompositeFieldContainer[ShardStats]
    graph: str
    gateway: GatewayStats
    def __init__(self, vertices: _Optional[int] = ..., edges: _Optional[int] = ..., shards: _Optional[_Iterable[_Union[ShardStats, _Mapping]]] = ..., graph: _Optional[str] = ..., gateway: _Optional[_Union[GatewayStats, _Mapping]] = ...) -> None: ...

class VertexRequest(_message.Message):
    __slots__ = ("vertex", "cut")
    VERTEX_FIELD_NUMBER: _ClassVar[int]
    CUT_FIELD_NUMBER: _ClassVar[int]
    vertex: VertexId
    cut: Cut
    def __init__(self, vertex: _Optional[_Union[VertexId, _Mapping]] = ..., cut: _Optional[_Union[Cut, _Mapping]] = ...) -> None: ...

class Edge(_message.Message):
    __slots__ = ("vertex", "props")
    class PropsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    VERTEX_FIELD_NUMBER: _ClassVar[int]
    PROPS_FIELD_NUMBER: _ClassVar[int]
    vertex: VertexId
    props: _containers.MessageMap[str, Value]
    def __init__(self, vertex: _Optional[_Union[VertexId, _Mapping]] = ..., props: _Optional[_Mapping[str, Value]] = ...) -> None: ...

class VertexReply(_message.Message):
    __slots__ = ("vertex", "type", "clock", "time", "state", "out_edges", "in_edges")
    class StateEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    VERTEX_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CLOCK_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    OUT_EDGES_FIELD_NUMBER: _ClassVar[int]
    IN_EDGES_FIELD_NUMBER: _ClassVar[int]
    vertex: VertexId
    type: str
    clock: int
    time: Time
    state: _containers.MessageMap[str, Value]
    out_edges: _containers.RepeatedCompositeFieldContainer[Edge]
    in_edges: _containers.RepeatedCompositeFieldContainer[Edge]
    def __init__(self, vertex: _Optional[_Union[VertexId, _Mapping]] = ..., type: _Optional[str] = ..., clock: _Optional[int] = ..., time: _Optional[_Union[Time, _Mapping]] = ..., state: _Optional[_Mapping[str, Value]] = ..., out_edges: _Optional[_Iterable[_Union[Edge, _Mapping]]] = ..., in_edges: _Optional[_Iterable[_Union[Edge, _Mapping]]] = ...) -> None: ...

class EdgesRequest(_message.Message):
    __slots__ = ("vertex", "direction", "cut")
    VERTEX_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    CUT_FIELD_NUMBER: _ClassVar[int]
    vertex: VertexId
    direction: Direction
    cut: Cut
    def __init__(self, vertex: _Optional[_Union[VertexId, _Mapping]] = ..., direction: _Optional[_Union[Direction, str]] = ..., cut: _Optional[_Union[Cut, _Mapping]] = ...) -> None: ...

class EdgesReply(_message.Message):
    __slots__ = ("edges",)
    EDGES_FIELD_NUMBER: _ClassVar[int]
    edges: _containers.RepeatedCompositeFieldContainer[Edge]
    def __init__(self, edges: _Optional[_Iterable[_Union[Edge, _Mapping]]] = ...) -> None: ...

class HistoryRequest(_message.Message):
    __slots__ = ("vertex", "t0", "t1")
    VERTEX_FIELD_NUMBER: _ClassVar[int]
    T0_FIELD_NUMBER: _ClassVar[int]
    T1_FIELD_NUMBER: _ClassVar[int]
    vertex: VertexId
    t0: float
    t1: float
    def __init__(self, vertex: _Optional[_Union[VertexId, _Mapping]] = ..., t0: _Optional[float] = ..., t1: _Optional[float] = ...) -> None: ...

class HistoryState(_message.Message):
    __slots__ = ("wc", "clock", "time", "deleted", "type", "state", "out_edges", "in_edges")
    class StateEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    WC_FIELD_NUMBER: _ClassVar[int]
    CLOCK_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    OUT_EDGES_FIELD_NUMBER: _ClassVar[int]
    IN_EDGES_FIELD_NUMBER: _ClassVar[int]
    wc: int
    clock: int
    time: Time
    deleted: bool
    type: str
    state: _containers.MessageMap[str, Value]
    out_edges: int
    in_edges: int
    def __init__(self, wc: _Optional[int] = ..., clock: _Optional[int] = ..., time: _Optional[_Union[Time, _Mapping]] = ..., deleted: _Optional[bool] = ..., type: _Optional[str] = ..., state: _Optional[_Mapping[str, Value]] = ..., out_edges: _Optional[int] = ..., in_edges: _Optional[int] = ...) -> None: ...

class HistoryReply(_message.Message):
    __slots__ = ("states",)
    STATES_FIELD_NUMBER: _ClassVar[int]
    states: _containers.RepeatedCompositeFieldContainer[HistoryState]
    def __init__(self, states: _Optional[_Iterable[_Union[HistoryState, _Mapping]]] = ...) -> None: ...

class Window(_message.Message):
    __slots__ = ("t0", "t1")
    T0_FIELD_NUMBER: _ClassVar[int]
    T1_FIELD_NUMBER: _ClassVar[int]
    t0: float
    t1: float
    def __init__(self, t0: _Optional[float] = ..., t1: _Optional[float] = ...) -> None: ...

class SnapshotCut(_message.Message):
    __slots__ = ("at", "clock", "window")
    AT_FIELD_NUMBER: _ClassVar[int]
    CLOCK_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    at: float
    clock: ClockCut
    window: Window
    def __init__(self, at: _Optional[float] = ..., clock: _Optional[_Union[ClockCut, _Mapping]] = ..., window: _Optional[_Union[Window, _Mapping]] = ...) -> None: ...

class SnapshotRequest(_message.Message):
    __slots__ = ("cut",)
    CUT_FIELD_NUMBER: _ClassVar[int]
    cut: SnapshotCut
    def __init__(self, cut: _Optional[_Union[SnapshotCut, _Mapping]] = ...) -> None: ...

class SnapshotMeta(_message.Message):
    __slots__ = ("kind", "at", "cut", "vertices", "edges", "build_seconds", "replayed", "window")
    KIND_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    CUT_FIELD_NUMBER: _ClassVar[int]
    VERTICES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    BUILD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    kind: str
    at: float
    cut: _containers.RepeatedScalarFieldContainer[int]
    vertices: int
    edges: int
    build_seconds: float
    replayed: int
    window: Window
    def __init__(self, kind: _Optional[str] = ..., at: _Optional[float] = ..., cut: _Optional[_Iterable[int]] = ..., vertices: _Optional[int] = ..., edges: _Optional[int] = ..., build_seconds: _Optional[float] = ..., replayed: _Optional[int] = ..., window: _Optional[_Union[Window, _Mapping]] = ...) -> None: ...

class SnapshotReply(_message.Message):
    __slots__ = ("meta", "vertices_path", "edges_path")
    META_FIELD_NUMBER: _ClassVar[int]
    VERTICES_PATH_FIELD_NUMBER: _ClassVar[int]
    EDGES_PATH_FIELD_NUMBER: _ClassVar[int]
    meta: SnapshotMeta
    vertices_path: str
    edges_path: str
    def __init__(self, meta: _Optional[_Union[SnapshotMeta, _Mapping]] = ..., vertices_path: _Optional[str] = ..., edges_path: _Optional[str] = ...) -> None: ...

class AnalyzeRequest(_message.Message):
    __slots__ = ("name", "cut", "times", "buckets", "params", "top")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CUT_FIELD_NUMBER: _ClassVar[int]
    TIMES_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    TOP_FIELD_NUMBER: _ClassVar[int]
    name: str
    cut: SnapshotCut
    times: _containers.RepeatedScalarFieldContainer[float]
    buckets: int
    params: _containers.MessageMap[str, Value]
    top: int
    def __init__(self, name: _Optional[str] = ..., cut: _Optional[_Union[SnapshotCut, _Mapping]] = ..., times: _Optional[_Iterable[float]] = ..., buckets: _Optional[int] = ..., params: _Optional[_Mapping[str, Value]] = ..., top: _Optional[int] = ...) -> None: ...

class Row(_message.Message):
    __slots__ = ("cells",)
    CELLS_FIELD_NUMBER: _ClassVar[int]
    cells: _containers.RepeatedCompositeFieldContainer[Value]
    def __init__(self, cells: _Optional[_Iterable[_Union[Value, _Mapping]]] = ...) -> None: ...

class AnalyzeReply(_message.Message):
    __slots__ = ("name", "description", "info", "columns", "top", "paths", "seconds")
    class InfoEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    TOP_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    info: _containers.MessageMap[str, Value]
    columns: _containers.RepeatedScalarFieldContainer[str]
    top: _containers.RepeatedCompositeFieldContainer[Row]
    paths: _containers.RepeatedScalarFieldContainer[str]
    seconds: float
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., info: _Optional[_Mapping[str, Value]] = ..., columns: _Optional[_Iterable[str]] = ..., top: _Optional[_Iterable[_Union[Row, _Mapping]]] = ..., paths: _Optional[_Iterable[str]] = ..., seconds: _Optional[float] = ...) -> None: ...

class Position(_message.Message):
    __slots__ = ("start", "after", "since")
    START_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    start: _containers.RepeatedScalarFieldContainer[int]
    after: _containers.RepeatedScalarFieldContainer[int]
    since: float
    def __init__(self, start: _Optional[_Iterable[int]] = ..., after: _Optional[_Iterable[int]] = ..., since: _Optional[float] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("types", "ids", "predicate", "since", "buffer", "resume")
    TYPES_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    PREDICATE_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    BUFFER_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    types: _containers.RepeatedScalarFieldContainer[str]
    ids: _containers.RepeatedCompositeFieldContainer[VertexId]
    predicate: str
    since: float
    buffer: int
    resume: Position
    def __init__(self, types: _Optional[_Iterable[str]] = ..., ids: _Optional[_Iterable[_Union[VertexId, _Mapping]]] = ..., predicate: _Optional[str] = ..., since: _Optional[float] = ..., buffer: _Optional[int] = ..., resume: _Optional[_Union[Position, _Mapping]] = ...) -> None: ...

class Notification(_message.Message):
    __slots__ = ("vertex", "type", "clock", "time", "shard", "wc", "created", "deleted", "old_state", "state")
    class OldStateEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    class StateEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    VERTEX_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CLOCK_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    WC_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    OLD_STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    vertex: VertexId
    type: str
    clock: int
    time: Time
    shard: int
    wc: int
    created: bool
    deleted: bool
    old_state: _containers.MessageMap[str, Value]
    state: _containers.MessageMap[str, Value]
    def __init__(self, vertex: _Optional[_Union[VertexId, _Mapping]] = ..., type: _Optional[str] = ..., clock: _Optional[int] = ..., time: _Optional[_Union[Time, _Mapping]] = ..., shard: _Optional[int] = ..., wc: _Optional[int] = ..., created: _Optional[bool] = ..., deleted: _Optional[bool] = ..., old_state: _Optional[_Mapping[str, Value]] = ..., state: _Optional[_Mapping[str, Value]] = ...) -> None: ...

class Lagged(_message.Message):
    __slots__ = ("shard", "missed")
    SHARD_FIELD_NUMBER: _ClassVar[int]
    MISSED_FIELD_NUMBER: _ClassVar[int]
    shard: int
    missed: int
    def __init__(self, shard: _Optional[int] = ..., missed: _Optional[int] = ...) -> None: ...

class SubscribeEvent(_message.Message):
    __slots__ = ("started", "notification", "lagged")
    STARTED_FIELD_NUMBER: _ClassVar[int]
    NOTIFICATION_FIELD_NUMBER: _ClassVar[int]
    LAGGED_FIELD_NUMBER: _ClassVar[int]
    started: Position
    notification: Notification
    lagged: Lagged
    def __init__(self, started: _Optional[_Union[Position, _Mapping]] = ..., notification: _Optional[_Union[Notification, _Mapping]] = ..., lagged: _Optional[_Union[Lagged, _Mapping]] = ...) -> None: ...
