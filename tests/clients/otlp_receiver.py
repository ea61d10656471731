"""An OTLP/HTTP trace receiver for tests/it/otel.rs, decoding with the official protobuf
definitions (the `opentelemetry-proto` package that tests/clients/setup.sh installs).

Listens on 127.0.0.1 (port 0: the kernel's choice), prints `listening PORT`, then one JSON line
per span received on POST /v1/traces: its name, kind, ids in hex, attributes, status, links and
its resource's attributes. A body that does not decode is a line `{"error": ...}` and a 400, so
the test sees it. Exits when its stdin closes (the test's end).
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

lock = threading.Lock()


def emit(value):
    with lock:
        sys.stdout.write(json.dumps(value, sort_keys=True) + "\n")
        sys.stdout.flush()


def any_value(value):
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def attributes(pairs):
    return {pair.key: any_value(pair.value) for pair in pairs}


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path != "/v1/traces":
            emit({"error": f"POST to {self.path}"})
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("Content-Type") != "application/x-protobuf":
            emit({"error": f"content type {self.headers.get('Content-Type')}"})
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception as error:  # noqa: BLE001 - any decoding failure is the test's
            emit({"error": f"undecodable body: {error}"})
            self.send_response(400)
            self.end_headers()
            return
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    emit(
                        {
                            "name": span.name,
                            "kind": Span.SpanKind.Name(span.kind),
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "trace_state": span.trace_state,
                            "attributes": attributes(span.attributes),
                            "status": Status.StatusCode.Name(span.status.code),
                            "status_message": span.status.message,
                            "links": [
                                {"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()}
                                for link in span.links
                            ],
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                            "flags": span.flags,
                            "scope": scope_spans.scope.name,
                            "scope_version": scope_spans.scope.version,
                            "resource": resource,
                        }
                    )
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    emit({"listening": server.server_address[1]})
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
