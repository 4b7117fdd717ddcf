"""A larger fuzz run of the HTTP API: schemathesis against the OpenAPI spec of a live
``kenning serve`` on 127.0.0.1 (fresh SQLite file, admin key). Fails on any server error (5xx)
or any answer the spec does not describe.

    python benchmarks/fuzz_api.py --max-examples 200
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from load_server import start_server  # same directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=200, help="Examples per operation.")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--phases", default=None,
                        help="schemathesis phases, e.g. fuzzing (default: all of them).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, base, key = start_server(str(Path(tmp) / "fuzz.db"))
        try:
            code = subprocess.call([
                sys.executable, "-m", "schemathesis.cli", "run", f"{base}/openapi.json",
                "--header", f"Authorization: Bearer {key}",
                "--checks", "not_a_server_error,status_code_conformance,content_type_conformance",
                "--max-examples", str(args.max_examples), "--workers", str(args.workers),
                *(["--phases", args.phases] if args.phases else []),
            ])
        finally:
            proc.terminate()
            proc.wait(10)
    raise SystemExit(code)


if __name__ == "__main__":
    main()
