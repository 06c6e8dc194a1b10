"""Forward LISTEN_PORT on every address to 127.0.0.1:TARGET_PORT, in the network namespace it
is started in. The rehearsal starts it with `nsenter --net=/proc/PID/ns/net` inside a mesh
container's namespace, so the runner on the host can reach that service's loopback-only admin
port (fault injection, policy swaps) and metrics port (counters) through the container's address
on the rehearsal's own podman network. Rehearsal-only: the compose file keeps both private.
Stdlib only.

    python3 netns_forward.py LISTEN_PORT TARGET_PORT
"""

from __future__ import annotations

import asyncio
import contextlib
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()


async def main(listen_port: int, target_port: int) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "0.0.0.0", listen_port)
    print(f"forwarding :{listen_port} -> 127.0.0.1:{target_port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
