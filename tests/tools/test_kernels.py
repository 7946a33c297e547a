"""tools/kernels.py: a message that raised no wake-up is still received, within one slice."""

import asyncio
import time
from queue import Empty

import pytest
import zmq
import zmq.asyncio
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.session import Session

from tools import kernels


@pytest.fixture(autouse=True)
def short_slices(monkeypatch):
    monkeypatch.setattr(kernels, "POLL_SLICE", 0.25)  # the same logic, a shorter test


async def _queued_without_a_wake_up(channel_class, timeout):
    """Seconds until ``channel_class.get_msg(timeout)`` returns a reply that arrived while its poll
    was already waiting, after something else read the socket's events (the edge is gone)."""
    ctx = zmq.asyncio.Context()
    kernel, client = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    port = kernel.bind_to_random_port("tcp://127.0.0.1")
    client.connect(f"tcp://127.0.0.1:{port}")
    session = Session()
    try:
        await asyncio.sleep(0.2)  # connected
        channel = channel_class(client, session)
        waiting = asyncio.ensure_future(channel.get_msg(timeout=timeout))
        await asyncio.sleep(0.05)  # its poll now sleeps on the socket's descriptor
        session.send(zmq.Socket.shadow(kernel.underlying), "execute_reply", {"status": "ok"})
        time.sleep(0.2)  # the reply arrives while the event loop is not running
        zmq.Socket.shadow(client.underlying).get(zmq.EVENTS)  # and the edge is consumed elsewhere
        start = time.monotonic()
        msg = await waiting
        assert msg["msg_type"] == "execute_reply"
        return time.monotonic() - start
    finally:
        kernel.close(linger=0)
        client.close(linger=0)
        ctx.term()


def test_a_reply_whose_wake_up_was_missed_arrives_within_one_slice():
    assert asyncio.run(_queued_without_a_wake_up(kernels.SlicedPollChannel, 30)) < kernels.POLL_SLICE + 0.5


def test_jupyter_clients_own_channel_sleeps_until_its_timeout_there():
    """What the slices are for: if this starts failing, jupyter_client waits correctly and
    tools/kernels.py can go (its docstring says why it exists)."""
    assert asyncio.run(_queued_without_a_wake_up(AsyncZMQSocketChannel, 1.5)) > 1.0  # 1.25 s of it left


def test_no_message_is_still_empty_after_the_timeout():
    async def wait():
        ctx = zmq.asyncio.Context()
        sock = ctx.socket(zmq.PAIR)
        sock.bind_to_random_port("tcp://127.0.0.1")
        try:
            start = time.monotonic()
            with pytest.raises(Empty):
                await kernels.SlicedPollChannel(sock, Session()).get_msg(timeout=0.6)
            return time.monotonic() - start
        finally:
            sock.close(linger=0)
            ctx.term()

    assert 0.55 < asyncio.run(wait()) < 1.2


def test_the_manager_hands_out_clients_with_sliced_channels():
    manager = kernels.SteadyKernelManager()
    manager.client_class = "jupyter_client.asynchronous.AsyncKernelClient"  # the default, said again
    client = manager.client()
    assert isinstance(client, kernels.SteadyKernelClient)
    for name in ("shell", "iopub", "stdin", "control"):
        assert getattr(client, f"{name}_channel_class") is kernels.SlicedPollChannel
    made = kernels.notebook_client({"cells": [], "metadata": {}})
    assert made.kernel_manager_class is kernels.SteadyKernelManager
