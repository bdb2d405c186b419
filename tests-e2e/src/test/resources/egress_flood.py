"""A flood of the egress proxy from inside one profiled tool pod (run by the sample agent's run_code), as the cluster's
`weather` tool did (issue 43): SLOTS connections to the proxy at once for DURATION_S seconds, each sending the start
of a CONNECT and never finishing its headers; every other one sends an unfinished header line of 1 MB. A slot whose
connection the proxy answers or closes opens another one after PAUSE_S. EgressFloodIT prepends DURATION_S and
SLOTS and reads one JSON object from stdout:

  opened               connections opened
  answers              the proxy's answers by status: 429 (a connection limit), 503 (the proxy's), 431 (headers too
                       large); any other status is counted under its code
  closed_unanswered    closed by the proxy without an answer (the header deadline)
  connect_failed       connections the proxy's address refused or did not accept within 5 s
  held_max             most connections open at once
  first_refusal        time.time() of the first 429 or 503; began, ended: the flood's own
"""
import asyncio
import json
import os
import time
import urllib.parse

PAUSE_S = 0.5
TARGET = "public.sbx.test:443"
CHUNK = b"a" * (64 << 10)

proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
stats = {"opened": 0, "answers": {}, "closed_unanswered": 0, "connect_failed": 0, "held_max": 0,
         "first_refusal": None}
held = 0


async def one(huge, end):
    """One connection: the start of a CONNECT, an unfinished header; then what the proxy does about it."""
    global held
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(proxy.hostname, proxy.port), 5)
    except (OSError, asyncio.TimeoutError):
        stats["connect_failed"] += 1
        return
    stats["opened"] += 1
    held += 1
    stats["held_max"] = max(stats["held_max"], held)
    answer = asyncio.ensure_future(reader.readline())  # read while writing: the proxy may answer mid-line
    try:
        writer.write(f"CONNECT {TARGET} HTTP/1.1\r\nHost: {TARGET}\r\nX-Flood: ".encode())
        if huge:  # an unfinished header line of 1 MB, in pieces: sent only as fast as the proxy reads it
            for _ in range(16):
                if answer.done():
                    break
                writer.write(CHUNK)
                try:
                    await asyncio.wait_for(writer.drain(), max(0.1, end - time.time()))
                except (OSError, asyncio.TimeoutError):
                    break
        line = await asyncio.wait_for(answer, max(0.1, end - time.time()))
    except asyncio.TimeoutError:
        return  # still held when the flood ends
    except OSError:
        line = b""
    finally:
        held -= 1
        writer.close()
    parts = line.split()
    if len(parts) >= 2 and parts[0].startswith(b"HTTP/"):
        status = parts[1].decode()
        stats["answers"][status] = stats["answers"].get(status, 0) + 1
        if status in ("429", "503") and stats["first_refusal"] is None:
            stats["first_refusal"] = time.time()
    else:
        stats["closed_unanswered"] += 1


async def slot(index, end):
    while time.time() < end:
        await one(index % 2 == 0, end)
        await asyncio.sleep(PAUSE_S)


async def main():
    began = time.time()
    end = began + DURATION_S
    await asyncio.gather(*(slot(i, end) for i in range(SLOTS)))
    stats["began"], stats["ended"] = began, time.time()
    print(json.dumps(stats))


asyncio.run(main())
