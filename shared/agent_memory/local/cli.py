"""`agent-memory`: run the service locally."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading


def _serve(args: argparse.Namespace) -> int:
    from .runtime import start_local

    service = start_local(port=args.port)
    print(json.dumps({"url": service.url, "operator_key": service.operator_key}), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    service.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agent-memory", description="Agent memory, locally.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve every route of template.yaml on 127.0.0.1")
    serve.add_argument("--port", type=int, default=3000)
    serve.set_defaults(func=_serve)
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
