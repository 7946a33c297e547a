"""Run notebooks with nbclient without stalling on a missed socket wake-up.

The tools here that run a notebook through nbclient (``make execute``, ``make zh``, ``make
claims``, nbgrader's autograding, the student-edition tests) wait for the kernel's messages with
jupyter_client's asyncio channels. Such a channel learns that a message has arrived from its
socket's file descriptor, which ZeroMQ signals on an edge: once something else has read the
socket's events, a message already queued raises no new edge, and ``get_msg(timeout)`` sleeps
until its timeout although the message is there (tests/tools/test_kernels.py shows it). nbclient
waits for a cell's reply with the cell's whole timeout, so such a wait lasts that long (600 s for
nbgrader and ``make execute``, 1,800 s for ``make claims``); then the poll ends, finds the reply,
and the run goes on as if nothing had happened. Stalls that look like this were seen twice on the
2-core development machine: in nbgrader's autograding of 01, which went on after 600 s and
passed, and in ``make claims`` waiting for the reply to 14's explorer cell, each time with the
kernel idle and the client asleep in that wait (docs/performance.md). What consumed the edge there
was not found. nbclient issue #312 (a cell with ipywidgets "sometimes blocks") reports the same
symptom. The pinned ipykernel 7.4.0 already sends its shell replies through its own stream (the
kernel's side of a similar trouble, ipykernel pull request #1529).

:class:`SteadyKernelClient` waits in slices of :data:`POLL_SLICE` seconds: each new wait first
asks the socket whether a message is queued, so a missed edge costs at most one slice. Three ways
to use it:

* :func:`notebook_client` for an ``nbclient.NotebookClient`` made here;
* ``--ExecutePreprocessor.kernel_manager_class=tools.kernels.SteadyKernelManager`` for nbconvert,
  with the repository on ``PYTHONPATH`` (``make execute``);
* ``c.AsyncKernelManager.client_class = "steady_kernel.SteadyKernelClient"`` where the kernel
  manager's class is fixed, as nbgrader's ``Execute`` fixes it (tools/course.py copies this file
  beside the course's ``nbgrader_config.py`` as ``steady_kernel.py``).

This module imports jupyter_client and traitlets (and nbclient inside :func:`notebook_client`),
all of which nbgrader's own environment has. ``make compat`` keeps nbconvert's own client: the
repository on ``PYTHONPATH`` would put attnlib's source there too, and ``make compat`` checks that
a notebook installs attnlib where it is missing. nbval, which ``make test`` runs, uses
jupyter_client's blocking client, whose poll asks the socket itself.
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from traitlets import Type

__all__ = ["POLL_SLICE", "SlicedPollChannel", "SteadyKernelClient", "SteadyKernelManager", "notebook_client"]

POLL_SLICE = 1.0  # seconds: the longest a queued message can wait unnoticed


class SlicedPollChannel(AsyncZMQSocketChannel):
    """An asyncio channel whose ``get_msg`` waits in slices of :data:`POLL_SLICE` seconds.

    The same results as jupyter_client's channel: a message, or ``queue.Empty`` once ``timeout``
    seconds (None: never) have passed without one. Only the waiting differs: each slice starts a
    new poll, and a new poll reads the socket's events before it sleeps on the descriptor.
    """

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_SLICE if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await super().get_msg(timeout=min(POLL_SLICE, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise


class SteadyKernelClient(AsyncKernelClient):
    """jupyter_client's asyncio kernel client with :class:`SlicedPollChannel` on its shell, IOPub,
    stdin and control channels (the heartbeat keeps its own thread)."""

    shell_channel_class = Type(SlicedPollChannel)  # type: ignore[assignment]
    iopub_channel_class = Type(SlicedPollChannel)  # type: ignore[assignment]
    stdin_channel_class = Type(SlicedPollChannel)  # type: ignore[assignment]
    control_channel_class = Type(SlicedPollChannel)  # type: ignore[assignment]


class SteadyKernelManager(AsyncKernelManager):
    """The asyncio kernel manager nbclient uses by default, handing out :class:`SteadyKernelClient` s
    whatever its ``client_class`` says (jupyter_client's asyncio client by default)."""

    def client(self, **kwargs: Any) -> SteadyKernelClient:
        self.client_factory = SteadyKernelClient
        return super().client(**kwargs)


def notebook_client(nb: Any, **kwargs: Any):
    """``nbclient.NotebookClient(nb, **kwargs)`` with :class:`SteadyKernelManager`."""
    from nbclient import NotebookClient

    return NotebookClient(nb, kernel_manager_class=SteadyKernelManager, **kwargs)
