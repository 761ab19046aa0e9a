"""Logging to the client (window/logMessage); stderr gets warnings, stdout nothing."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from .language_server import GradlintServer


class ClientLogHandler(logging.Handler):
    _LEVELS = {logging.ERROR: types.MessageType.Error, logging.WARNING: types.MessageType.Warning,
               logging.INFO: types.MessageType.Info}

    def __init__(self, ls: GradlintServer):
        super().__init__(logging.INFO)
        self.ls = ls

    def emit(self, record: logging.LogRecord) -> None:
        try:
            kind = self._LEVELS.get(record.levelno, types.MessageType.Log)
            self.ls.window_log_message(types.LogMessageParams(kind, self.format(record)))
        except Exception:  # never let logging break the server
            pass


def attach_client_logging(ls: GradlintServer) -> None:
    logger = logging.getLogger("gradlint")
    if not any(isinstance(h, ClientLogHandler) for h in logger.handlers):
        logger.addHandler(ClientLogHandler(ls))
