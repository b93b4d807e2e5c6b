"""Structured logs: JSON lines when stderr is not a terminal, readable text when it is."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["JsonFormatter", "configure_logging", "logs_are_json"]

# Attributes every LogRecord has; anything else was passed through ``extra=`` and is kept.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, and any ``extra=`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as a JSON line."""
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value if isinstance(value, str | int | float | bool) else str(value)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure_logging(fmt: Literal["auto", "json", "text"] = "auto", level: str = "INFO") -> None:
    """Install one stderr handler on the root logger (idempotent)."""
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter()
        if use_json
        else logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def logs_are_json() -> bool:
    """Whether the root logger writes JSON lines (then every line a node prints is JSON)."""
    return any(isinstance(h.formatter, JsonFormatter) for h in logging.getLogger().handlers)
