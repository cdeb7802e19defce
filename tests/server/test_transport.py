"""server/transport.py's WebSocket on a real loopback socket, without the rest of the server."""

from __future__ import annotations

import trio

from server.transport import WebSocket
from tests.server.raw_ws import TEXT, frame, request


class Steps(trio.abc.Instrument):
    """Counts the steps of one task (a step begins each time it resumes after a yield)."""

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        """One more step when it is our task's."""
        if task is self.task:
            self.count += 1


async def test_messages_from_one_read_are_handed_out_one_per_turn_of_the_run_queue() -> None:
    """A client that packs many requests into one TCP segment does not hold the loop for
    all of them: `receive` yields before each message after the first of a read."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server_side = await listeners[0].accept()
    head = request(port)
    await client.send_all(head)
    ws = WebSocket(server_side, await server_side.receive_some(65536), 1 << 20)
    await ws.accept()
    assert b" 101 " in await client.receive_some(65536)
    await client.send_all(b"".join(frame(TEXT, f'"{k}"'.encode()) for k in range(4)))

    me = trio.lowlevel.current_task()
    steps = Steps(me)
    trio.lowlevel.add_instrument(steps)
    try:
        await trio.sleep(0.05)  # the four frames are in the socket's buffer
        seen = []
        for _ in range(4):
            before = steps.count
            message = await ws.receive()
            seen.append((message["text"], steps.count - before))
    finally:
        trio.lowlevel.remove_instrument(steps)
    assert [text for text, _ in seen] == ['"0"', '"1"', '"2"', '"3"']
    assert all(yielded >= 1 for _, yielded in seen), seen  # every receive let others run
    await client.aclose()
    await ws.abort()
    for listener in listeners:
        await listener.aclose()
