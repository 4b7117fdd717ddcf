"""A fake Hugging Face hub on 127.0.0.1 serving one model repository from a directory.

It answers what ``huggingface_hub.snapshot_download`` asks (the revision, the file tree, then
``HEAD``/``GET`` of each file under ``/<repo>/resolve/<sha>/``), so tests drive the real
download code through ``HF_ENDPOINT``. Every request path is kept in ``requests``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["FakeHub"]

SHA = "0123456789abcdef0123456789abcdef01234567"


class FakeHub:
    def __init__(self, repo: str, directory: Path) -> None:
        self.repo = repo
        self.files = {str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()}
        self.requests: list[str] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeHub:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.hub = self  # type: ignore[attr-defined]
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def answer(self, path: str) -> tuple[int, bytes, dict[str, str]]:
        as_json = {"Content-Type": "application/json"}
        if path == f"/api/models/{self.repo}/revision/main":
            siblings = [{"rfilename": name} for name in self.files]
            return 200, json.dumps({"id": self.repo, "sha": SHA, "siblings": siblings}).encode(), as_json
        if path.startswith(f"/api/models/{self.repo}/tree/"):
            tree = [{"type": "file", "path": name, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}
                    for name, data in self.files.items()]
            return 200, json.dumps(tree).encode(), as_json
        prefix = f"/{self.repo}/resolve/"
        name = path[len(prefix):].partition("/")[2] if path.startswith(prefix) else ""
        if name in self.files:
            data = self.files[name]
            return 200, data, {"X-Repo-Commit": SHA, "ETag": f'"{hashlib.sha1(data).hexdigest()}"'}
        return 404, b'{"error": "not found"}', {"X-Error-Code": "RepoNotFound", **as_json}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, head: bool) -> None:
        hub: FakeHub = self.server.hub  # type: ignore[attr-defined]
        path = self.path.split("?", 1)[0]
        hub.requests.append(f"{self.command} {path}")
        status, body, headers = hub.answer(path)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_GET(self) -> None:
        self._reply(head=False)

    def do_HEAD(self) -> None:
        self._reply(head=True)
