"""chronoray's network API, version 1: ``gateway.proto`` and the Python modules protoc
generated from it (``gateway_pb2``: messages, ``gateway_pb2_grpc``: the ``Gateway``
service's stub and servicer). The generated modules are checked in; after a change to the
``.proto``, regenerate them from the repository's root with::

    .venv/bin/python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. \\
        --grpc_python_out=. chronoray/v1/gateway.proto

(grpcio-tools 1.85.1, a dev dependency; ``tests/gateway/test_proto.py`` fails when the
checked-in modules differ from what that command writes). The proto package is
``chronoray.v1``: a change that breaks clients gets a new version beside it.
"""
