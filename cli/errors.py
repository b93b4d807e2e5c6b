"""How the CLI fails: one line on stderr, ``lamarck: <reason>: <message>``, and an exit code.

The same shape as an MCP tool's error and the SDK's ``str(LamarckError)``, with one reason
code per state (no node running is ``node_not_running`` everywhere).

Exit codes: 2 for usage and configuration errors (the command line or the config must
change), 1 for everything else (the node, the store, a key file, the network). A traceback
is never shown: an operator needs the reason, and a script needs the exit code.
"""

from __future__ import annotations

import errno
import importlib
import sys
from collections.abc import Sequence
from typing import Any

import grpc
import typer
import typer.core
from typer.core import TyperGroup

from lamarck.errors import ConfigError, LamarckError

__all__ = [
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "LamarckGroup",
    "exit_code_for",
    "report",
]

# The click that typer runs on: typer >= 0.20 vendors its own copy (``typer._click``), whose
# exception classes are not those of the separately installed ``click``.
_click: Any = getattr(typer.core, "_click", None) or importlib.import_module("click")

EXIT_FAILURE = 1
EXIT_USAGE = 2

# ConfigError also carries operational refusals (a node already runs, none runs): those are
# not fixed by changing the command line, so they exit 1 like other failures.
_OPERATIONAL_CONFIG_REASONS = frozenset(
    {
        "already_running",
        "node_running",
        "node_not_running",
        "fleet_not_running",
        "not_started",
        "not_serving",
    }
)


def exit_code_for(error: LamarckError) -> int:
    """2 for a configuration error the operator must fix in flags or config, else 1."""
    if isinstance(error, ConfigError) and error.reason not in _OPERATIONAL_CONFIG_REASONS:
        return EXIT_USAGE
    return EXIT_FAILURE


def _one_line(text: str) -> str:
    # A multi-line message (pydantic, gRPC details) would break `2>&1 | tail -1` in scripts.
    return " ".join(text.split())


def report(reason: str, message: str) -> None:
    """Write ``lamarck: <reason>: <message>`` as one line on stderr."""
    message = _one_line(message)
    prefix = f"{reason}: "
    # LamarckError.__str__ already starts with the reason; do not say it twice.
    if message.startswith(prefix):
        message = message[len(prefix) :]
    typer.echo(f"lamarck: {reason}: {message}", err=True)


def _rpc_reason(err: grpc.RpcError) -> tuple[str, str]:
    code: Any = err.code() if hasattr(err, "code") else None
    details: Any = err.details() if hasattr(err, "details") else None
    name = code.name.lower() if isinstance(code, grpc.StatusCode) else "rpc_error"
    return name, str(details or name)


class LamarckGroup(TyperGroup):
    """The root command group: turns every failure into one line and an exit code."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command; on failure print one line on stderr and exit 1 or 2."""
        code = self._run(args, prog_name, complete_var, windows_expand_args, extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(
        self,
        args: Sequence[str] | None,
        prog_name: str | None,
        complete_var: str | None,
        windows_expand_args: bool,
        extra: dict[str, Any],
    ) -> int:
        try:
            # Non-standalone: click hands us its exceptions instead of printing a usage box.
            rv = super().main(
                args,
                prog_name,
                complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
        except _click.exceptions.NoArgsIsHelpError as e:
            # `lamarck` or `lamarck keys` alone: show the help, as a person expects.
            typer.echo(e.ctx.get_help() if e.ctx is not None else e.format_message())
            return EXIT_USAGE
        except _click.exceptions.UsageError as e:
            report("usage", e.format_message())
            return EXIT_USAGE
        except _click.exceptions.ClickException as e:
            report("usage", e.format_message())
            code: int = e.exit_code
            return code
        except typer.Abort:
            report("aborted", "interrupted")
            return EXIT_FAILURE
        except LamarckError as e:
            report(e.reason, str(e))
            return exit_code_for(e)
        except grpc.RpcError as e:
            # The SDK translates lamarck errors; this is a transport failure it let through.
            reason, message = _rpc_reason(e)
            report(reason, message)
            return EXIT_FAILURE
        except OSError as e:
            if e.errno == errno.EPIPE:
                return EXIT_FAILURE  # `lamarck ... | head`: the reader left, nothing to say
            report("os_error", f"{e.strerror or e}: {e.filename}" if e.filename else str(e))
            return EXIT_FAILURE
        except Exception as e:
            # Last resort: a bug must still not print a traceback at an operator.
            report("internal", f"{type(e).__name__}: {e}")
            return EXIT_FAILURE
        # An explicit typer.Exit(code) returns its code; a normal command returns None.
        return int(rv) if isinstance(rv, int) else 0
