"""How the server ends: `shutdown`, `exit`, the client going away, or a signal.

Whichever way it ends, during a run or not, the server stops within a second with no
traceback, the exit code LSP asks for (0 after `shutdown`, else 1; a signal ends the
process by that signal), and no process left: the gradcheck worker is closed, and
anything a run started that outlived it is killed (the server adopts such orphans).

pygls alone gets this wrong in three ways, fixed here: its `shutdown` cancels the other
requests while iterating over the dict their callbacks remove themselves from
("dictionary changed size during iteration"); its `exit` closes stdout and raises
SystemExit, which pygls swallows (exit code 0), while the in-flight requests, cancelled
as asyncio shuts down, keep writing to the closed stdout (a traceback each, logged again
when reporting it fails); and when stdin closes nothing stops the worker.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from ..runner import adopt_orphans, kill_orphans

if TYPE_CHECKING:
    from .language_server import GradlintServer

log = logging.getLogger("gradlint.server")

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
WORKER_GRACE_S = 0.5  # for the worker to stop its runs before it is killed


class LifecycleProtocol(LanguageServerProtocol):
    """pygls' protocol with a clean `shutdown` and `exit`, and nothing written once the
    connection is over."""

    closing = False  # set once the server is ending: nothing more is sent

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):
        cancel_requests(self, keep=self.msg_id)  # before the handler: their runs end with them
        if (handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield handler, args, None
        self._shutdown = True
        return None

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args):
        server: GradlintServer = self._server  # type: ignore[assignment]
        server.lifecycle.end(0 if self._shutdown else 1)
        yield from ()

    def _send_data(self, data: Any):
        if self.closing:
            return
        try:
            super()._send_data(data)
        except (BrokenPipeError, ConnectionError):  # the client is gone
            self.closing = True
            self._server.lifecycle.end(1)  # type: ignore[attr-defined]


def cancel_requests(protocol: LanguageServerProtocol, keep: Any = None) -> None:
    """Cancel every request in flight but ``keep``. The futures of pygls' generator
    handlers go first: cancelled, they answer "cancelled" and ignore the coroutine they
    wait for, which is cancelled next (the other order makes pygls resume the generator
    with a CancelledError, a traceback)."""
    pending = [(msg_id, future) for msg_id, future in list(protocol._request_futures.items())
               if msg_id != keep and not future.done()]
    for _, future in pending:
        if not isinstance(future, asyncio.Future):
            future.cancel()
    for _, future in pending:
        if isinstance(future, asyncio.Future):
            future.cancel()


class Lifecycle:
    """Serves stdio until the connection ends, then stops everything, once."""

    def __init__(self, server: "GradlintServer") -> None:
        self.server = server
        self._ended: asyncio.Future | None = None
        self.code: int | None = None
        self.signal: int | None = None

    def end(self, code: int, by_signal: int | None = None) -> None:
        """Ask the server to stop with ``code`` (the first reason wins)."""
        if self.code is None:
            self.code, self.signal = code, by_signal
        if self._ended is not None and not self._ended.done():
            self._ended.set_result(None)

    def serve_stdio(self) -> None:
        """Serve over stdin/stdout; never returns: the process ends here."""
        server = self.server
        adopt_orphans()  # what escapes a worker that dies abruptly is adopted here, not by init
        server._stop_event = threading.Event()
        reader = StdinAsyncReader(sys.stdin.buffer, server.thread_pool)
        server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
        try:
            asyncio.run(self._serve(reader))
        except BaseException:  # a bug here must still not leave a worker behind
            log.exception("the server stopped on an internal error")
            self.code = 1 if self.code is None else self.code
        self._exit()

    async def _serve(self, reader: StdinAsyncReader) -> None:
        server = self.server
        loop = asyncio.get_running_loop()
        self._ended = loop.create_future()
        if self.code is not None:
            self._ended.set_result(None)
        for number in SIGNALS:
            loop.add_signal_handler(number, self.end, 128 + number, number)
        reading = asyncio.ensure_future(run_async(
            stop_event=server._stop_event, reader=reader, protocol=server.protocol,
            logger=logging.getLogger("pygls.server"), error_handler=server.report_server_error))
        await asyncio.wait({reading, self._ended}, return_when=asyncio.FIRST_COMPLETED)
        if self.code is None:  # stdin closed: the client is gone
            self.code = 0 if server.protocol._shutdown else 1
        server.protocol.closing = True
        server._stop_event.set()
        reading.cancel()
        await self._stop()

    async def _stop(self) -> None:
        server = self.server
        server.debouncer.cancel_all()
        cancel_requests(server.protocol)
        for task in list(server.lint_tasks):
            task.cancel()
        if server.runs is not None:
            try:
                await server.runs.close(grace=WORKER_GRACE_S)
            except Exception:
                log.exception("closing the gradcheck worker failed")
        server.linter.shutdown()

    def _exit(self) -> None:
        kill_orphans()  # anything a run started that outlived the worker
        logging.shutdown()
        for stream in (sys.stderr, sys.stdout):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        if self.signal is not None:  # end as the signal asked: the parent sees it
            signal.signal(self.signal, signal.SIG_DFL)
            os.kill(os.getpid(), self.signal)
        # os._exit: pygls' stdin reader thread may be blocked in readline for good
        os._exit(self.code if self.code is not None else 1)
