#!/usr/bin/env python3
"""A minimal OpenAI-compatible Chat Completions server for bench/run.sh (section 4).

tests/fake_llm/server.py is the scriptable fake the tests use; it runs a thread per
connection and records every request, which costs several milliseconds of CPU per
call under the GIL and would make a 20 ms benchmark measure the fake, not orch.
This one is single-threaded asyncio: it answers every POST .../chat/completions
after --delay-ms with the completion "ok" and usage {prompt_tokens: 10,
completion_tokens: 2}, keeps connections alive (HTTP/1.1), and checks only that a
Bearer key was sent. Real HTTP on 127.0.0.1; nothing else.

    bench/llm_server.py --port-file FILE [--delay-ms 20]
"""
import argparse
import asyncio
import json

REPLY = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
}


def response(status, body):
    data = json.dumps(body).encode()
    head = "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (
        status, "OK" if status == 200 else "Error", len(data))
    return head.encode() + data


async def serve(reader, writer, delay):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            length = int(headers.get("content-length", "0"))
            body = await reader.readexactly(length) if length else b""
            if method != "POST" or not path.endswith("/chat/completions"):
                writer.write(response(404, {"error": {"message": "not found"}}))
            elif not headers.get("authorization", "").startswith("Bearer "):
                writer.write(response(401, {"error": {"message": "no key"}}))
            else:
                json.loads(body)  # a request that is not JSON drops the connection
                await asyncio.sleep(delay)
                writer.write(response(200, REPLY))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--delay-ms", type=float, default=20)
    args = parser.parse_args()
    server = await asyncio.start_server(lambda r, w: serve(r, w, args.delay_ms / 1000), "127.0.0.1", 0,
                                        backlog=256)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    import os
    os.replace(args.port_file + ".tmp", args.port_file)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
