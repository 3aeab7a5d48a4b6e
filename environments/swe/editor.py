"""`str_replace_editor`: the file tool of SWE agents (SWE-agent / OpenHands schema and messages),
working inside the episode's container through its sandbox session, never on host paths.

    view         a file with line numbers (`cat -n`), optionally `view_range` [start, end] (end
                 -1: to the end); a directory: its files up to 2 levels deep, hidden ones left out
    create       a new file with `file_text` (an existing file is refused)
    str_replace  replace `old_str`, which must occur exactly once, by `new_str`
    insert       `new_str` after line `insert_line` (0: at the top)
    undo_edit    put back the file as it was before its last edit (per file, repeatable)

Reads come out through the engine's archive API, writes go in through it to a staging file that
`cat` copies over the target inside the container (so modes stay and argv limits do not matter).
Paths are resolved in the container (the agent's own symlinks are its business).
"""

from __future__ import annotations

import io
import secrets
import shlex
import tarfile
from dataclasses import dataclass, field
from typing import Any

from rlclimb.environments.sandbox import Limits

from .grading import GradingError, read_file

SNIPPET_LINES = 4
MAX_FILE_BYTES = 4 << 20
MAX_OUTPUT_CHARS = 16_000
STAGE_DIR = "/.rlclimb-editor"
_TOOL_LIMITS = Limits(wall_s=30.0, output_bytes=1 << 20)

DESCRIPTION = """Custom editing tool for viewing, creating and editing files
* State is persistent across command calls and discussions with the user
* If `path` is a file, `view` displays the result of applying `cat -n`. If `path` is a directory, `view` lists non-hidden files and directories up to 2 levels deep
* The `create` command cannot be used if the specified `path` already exists as a file
* If a `command` generates a long output, it will be truncated and marked with `<response clipped>`
* The `undo_edit` command will revert the last edit made to the file at `path`

Notes for using the `str_replace` command:
* The `old_str` parameter should match EXACTLY one or more consecutive lines from the original file. Be mindful of whitespaces!
* If the `old_str` parameter is not unique in the file, the replacement will not be performed. Make sure to include enough context in `old_str` to make it unique
* The `new_str` parameter should contain the edited lines that should replace the `old_str`"""

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "enum": ["view", "create", "str_replace", "insert", "undo_edit"],
            "description": "The commands to run. Allowed options are: `view`, `create`, `str_replace`, `insert`, `undo_edit`.",
        },
        "path": {
            "type": "string",
            "description": "Absolute path to file or directory, e.g. `/testbed/file.py` or `/testbed`.",
        },
        "file_text": {
            "type": "string",
            "description": "Required parameter of `create` command, with the content of the file to be created.",
        },
        "old_str": {
            "type": "string",
            "description": "Required parameter of `str_replace` command containing the string in `path` to replace.",
        },
        "new_str": {
            "type": "string",
            "description": "Optional parameter of `str_replace` command containing the new string (if not given, no string will be added). Required parameter of `insert` command containing the string to insert.",
        },
        "insert_line": {
            "type": "integer",
            "description": "Required parameter of `insert` command. The `new_str` will be inserted AFTER the line `insert_line` of `path`.",
        },
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "Optional parameter of `view` command when `path` points to a file. If none is given, the full file is shown. If provided, the file will be shown in the indicated line number range, e.g. [11, 12] will show lines 11 and 12. Indexing at 1 to start. Setting `[start_line, -1]` shows all lines from `start_line` to the end of the file.",
        },
    },
    "required": ["command", "path"],
}


class ToolError(Exception):
    """A command the agent got wrong: its message is the observation."""


def _clip(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return (
        text[:limit]
        + "\n<response clipped><NOTE>To save on context only part of this file has been shown to you. "
        "Use `grep -n` to find the line numbers of what you are looking for.</NOTE>"
    )


def _numbered(text: str, start: int = 1) -> str:
    return "\n".join(f"{i:6}\t{line}" for i, line in enumerate(text.split("\n"), start))


@dataclass
class StrReplaceEditor:
    session: Any  # a DockerSession from grading.open_container
    name: str = "str_replace_editor"
    description: str = DESCRIPTION
    parameters: dict[str, Any] = field(default_factory=lambda: PARAMETERS)
    history: dict[str, list[str]] = field(default_factory=dict)

    def __call__(
        self,
        command: str,
        path: str,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        view_range: list[int] | None = None,
    ) -> str:
        try:
            return _clip(
                self._run(command, path, file_text, old_str, new_str, insert_line, view_range)
            )
        except ToolError as e:
            return f"ERROR:\n{e}"

    # ---- commands ------------------------------------------------------------------------------
    def _run(self, command, path, file_text, old_str, new_str, insert_line, view_range) -> str:
        if not isinstance(path, str) or not path.startswith("/"):
            raise ToolError(
                f"The path {path} is not an absolute path, it should start with `/`. "
                f"Maybe you meant /testbed/{str(path).lstrip('./')}?"
            )
        kind = self._kind(path)
        if command == "create":
            if file_text is None:
                raise ToolError("Parameter `file_text` is required for command: create.")
            if kind != "missing":
                raise ToolError(
                    f"File already exists at: {path}. Cannot overwrite files using command `create`."
                )
            self._write(path, file_text, create=True)
            self.history.setdefault(path, []).append(None)  # undo of a create removes the file
            return f"File created successfully at: {path}"
        if kind == "missing":
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        if command == "view":
            return self._view(path, kind, view_range)
        if kind == "dir":
            raise ToolError(
                f"The path {path} is a directory and only the `view` command can be used on directories."
            )
        if kind != "file":
            raise ToolError(f"The path {path} is not a regular file.")
        if command == "str_replace":
            return self._str_replace(path, old_str, new_str)
        if command == "insert":
            return self._insert(path, insert_line, new_str)
        if command == "undo_edit":
            return self._undo(path)
        raise ToolError(
            f"Unrecognized command {command}. The allowed commands for the {self.name} tool are: "
            "view, create, str_replace, insert, undo_edit"
        )

    def _view(self, path: str, kind: str, view_range: list[int] | None) -> str:
        if kind == "dir":
            if view_range:
                raise ToolError(
                    "The `view_range` parameter is not allowed when `path` points to a directory."
                )
            q = shlex.quote(path)
            r = self.session.run(
                f"find {q} -maxdepth 2 -not -path '*/.*' | sort", limits=_TOOL_LIMITS
            )
            return (
                f"Here's the files and directories up to 2 levels deep in {path}, excluding hidden items:\n"
                + r.stdout
            )
        text = self._read(path)
        lines = text.split("\n")
        start = 1
        if view_range:
            if len(view_range) != 2 or not all(isinstance(i, int) for i in view_range):
                raise ToolError("Invalid `view_range`. It should be a list of two integers.")
            start, end = view_range
            if not 1 <= start <= len(lines):
                raise ToolError(
                    f"Invalid `view_range`: {view_range}. Its first element `{start}` should be "
                    f"within the range of lines of the file: [1, {len(lines)}]"
                )
            if end == -1:
                end = len(lines)
            if end < start or end > len(lines):
                raise ToolError(
                    f"Invalid `view_range`: {view_range}. Its second element `{end}` should be "
                    f"-1 or within [{start}, {len(lines)}]"
                )
            text = "\n".join(lines[start - 1 : end])
        return f"Here's the result of running `cat -n` on {path}:\n{_numbered(text, start)}\n"

    def _str_replace(self, path: str, old_str: str | None, new_str: str | None) -> str:
        if old_str is None:
            raise ToolError("Parameter `old_str` is required for command: str_replace.")
        text = self._read(path)
        new_str = new_str or ""
        count = text.count(old_str)
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."
            )
        if count > 1:
            at = [text[:i].count("\n") + 1 for i in _find_all(text, old_str)]
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in "
                f"lines {at}. Please ensure it is unique."
            )
        new_text = text.replace(old_str, new_str, 1)
        self._write(path, new_text)
        self.history.setdefault(path, []).append(text)
        line = text.split(old_str)[0].count("\n")
        return self._edited(path, new_text, line, new_str.count("\n"))

    def _insert(self, path: str, insert_line: int | None, new_str: str | None) -> str:
        if new_str is None:
            raise ToolError("Parameter `new_str` is required for command: insert.")
        text = self._read(path)
        lines = text.split("\n")
        if not isinstance(insert_line, int) or not 0 <= insert_line <= len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {insert_line}. It should be within the range "
                f"of lines of the file: [0, {len(lines)}]"
            )
        new_lines = new_str.split("\n")
        new_text = "\n".join(lines[:insert_line] + new_lines + lines[insert_line:])
        self._write(path, new_text)
        self.history.setdefault(path, []).append(text)
        return self._edited(path, new_text, insert_line, len(new_lines) - 1)

    def _undo(self, path: str) -> str:
        if not self.history.get(path):
            raise ToolError(f"No edit history found for {path}.")
        previous = self.history[path].pop()
        if previous is None:
            self.session.run(["rm", "-f", "--", path], limits=_TOOL_LIMITS)
            return f"Last edit to {path} undone successfully (the file it created is removed)."
        self._write(path, previous)
        return f"Last edit to {path} undone successfully. Here's the result of running `cat -n` on {path}:\n{_numbered(previous)}\n"

    def _edited(self, path: str, text: str, first_line: int, added: int) -> str:
        lines = text.split("\n")
        start = max(0, first_line - SNIPPET_LINES)
        end = min(len(lines), first_line + added + SNIPPET_LINES + 1)
        snippet = "\n".join(lines[start:end])
        return (
            f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet "
            f"of {path}:\n{_numbered(snippet, start + 1)}\n"
            "Review the changes and make sure they are as expected. Edit the file again if necessary."
        )

    # ---- container I/O -------------------------------------------------------------------------
    def _kind(self, path: str) -> str:
        q = shlex.quote(path)
        r = self.session.run(
            f"if [ -d {q} ]; then echo dir; elif [ -f {q} ]; then echo file; "
            f"elif [ -e {q} ] || [ -L {q} ]; then echo other; else echo missing; fi",
            limits=_TOOL_LIMITS,
        )
        return r.stdout.strip() or "missing"

    def _resolved(self, path: str) -> str:
        r = self.session.run(["readlink", "-f", "--", path], limits=_TOOL_LIMITS)
        return r.stdout.strip() or path

    def _read(self, path: str) -> str:
        try:
            data = read_file(self.session, self._resolved(path), MAX_FILE_BYTES)
        except GradingError as e:
            raise ToolError(f"cannot read {path}: {e}") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path} is not a UTF-8 text file; use bash to look at it.") from None

    def _write(self, path: str, text: str, create: bool = False) -> None:
        from rlclimb.environments.sandbox.docker_backend import client

        stage = f"edit-{secrets.token_hex(8)}"
        data = text.encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            d = tarfile.TarInfo(STAGE_DIR.strip("/"))
            d.type, d.mode = tarfile.DIRTYPE, 0o700
            tar.addfile(d)
            info = tarfile.TarInfo(f"{STAGE_DIR.strip('/')}/{stage}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        client().api.put_archive(self.session.cid, "/", buf.getvalue())
        src, q = shlex.quote(f"{STAGE_DIR}/{stage}"), shlex.quote(path)
        mkdir = f'mkdir -p -- "$(dirname -- {q})" && ' if create else ""
        r = self.session.run(
            f"{mkdir}cat {src} > {q}; rc=$?; rm -f {src}; exit $rc", limits=_TOOL_LIMITS
        )
        if not r.ok:
            raise ToolError(f"cannot write {path}: {(r.stderr or r.detail).strip()}")


def _find_all(text: str, sub: str):
    i = text.find(sub)
    while i != -1:
        yield i
        i = text.find(sub, i + 1)
