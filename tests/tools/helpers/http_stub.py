"""A loopback HTTP server for the scenario scripts: ``serve(answer)`` -> its port.

``answer(path)`` returns ``(status, headers, body)`` for each GET.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable
from typing import Any

Answer = Callable[[str], tuple[int, dict[str, str], bytes]]


def serve(answer: Answer) -> int:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, headers, body = answer(self.path)
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return int(server.server_address[1])
