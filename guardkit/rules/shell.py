"""Shell commands as the program and arguments they run, or a refusal to judge them.

A rule over a shell command (the ``x-shell`` keyword) is only as good as the split it sees. The
string is split with ``shlex`` (POSIX rules), but only when ``shlex`` and ``sh`` agree on the
words: anything ``sh`` would read differently or that runs more than one program is refused with
``CannotJudge`` instead of being guessed at:

* control operators and redirections (``;``, ``&``, ``|``, ``&&``, ``||``, ``<``, ``>``, ``(``,
  ``)``), newlines and unclosed quotes;
* expansions ``shlex`` leaves as text: ``$VAR``, ``${...}``, ``$(...)`` and backticks (outside
  single quotes), globs (``*``, ``?``, ``[``), brace lists, a leading ``~``, ``#`` comments;
* control, format (zero-width, bidirectional) and non-ASCII space characters, which ``sh``
  treats as parts of words while a person reading the approval does not;
* variable assignments (``LD_PRELOAD=x git status``), which change what any program does.

Wrappers that only run their arguments are unwrapped to the program they run: ``env`` (without
assignments), ``command``, ``exec``, ``nohup``, ``builtin``, ``time``, ``busybox`` and
``sh``/``bash``/``dash``/``zsh``/``ksh -c STRING`` (whose string is judged the same way).
Programs known to run another command that is not unwrapped (``sudo``, ``xargs``, ``timeout``,
``nice``, ``find -exec``...) are refused, so a rule about ``rm`` is not sidestepped by
``sudo rm``. Interpreters (``python -c``, ``awk``) are programs like any other: an allow-list of
programs is the rule to write, a deny-list of programs is leaky.
"""

from __future__ import annotations

import shlex
import unicodedata

__all__ = ["CannotJudge", "command_argv"]

_OPERATORS = {
    ";": "the control operator ';'",
    "&": "the control operator '&' or '&&'",
    "|": "a pipe '|' or '||'",
    "<": "a redirection",
    ">": "a redirection",
    "(": "a subshell",
    ")": "a subshell",
    "$": "a '$' expansion or substitution",
    "`": "a backtick substitution",
    "*": "a glob",
    "?": "a glob",
    "[": "a glob",
}
_WORD_START = {"~": "a '~' expansion", "#": "a comment", "!": "a '!'"}
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
_PLAIN_WRAPPERS = {"command": "-p", "exec": "", "nohup": "", "builtin": "", "time": "-p"}
#: Programs that run another command given in their arguments, which guardkit does not unwrap.
_RUNNERS = frozenset(
    {
        "sudo", "doas", "su", "runuser", "pkexec", "xargs", "nice", "ionice", "timeout",
        "stdbuf", "setsid", "chroot", "taskset", "flock", "watch", "strace", "ltrace",
        "nsenter", "unshare", "script", "unbuffer", "chrt", "firejail", "systemd-run",
        "eval", "source", ".", "parallel", "fakeroot", "proot",
    }
)  # fmt: skip
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_MAX_DEPTH = 4


class CannotJudge(Exception):
    """A value a rule's helper keyword cannot judge exactly (the rule then refuses the call)."""


def _check_characters(command: str) -> None:
    for ch in command:
        if ch in " \t" or (ch.isascii() and ch.isprintable()):
            continue
        if ch in "\n\r":
            raise CannotJudge("a newline (it starts another command)")
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Zl", "Zp", "Zs", "Co", "Cn", "Cs"):
            raise CannotJudge(f"the invisible or control character U+{ord(ch):04X}")


def _quoted(command: str, i: int, quote: str) -> tuple[str | None, int]:
    """One character inside quotes: the quote still open after it, and where it ends."""
    ch = command[i]
    if ch == quote:
        return None, i
    if quote == '"':
        if ch in "$`":
            raise CannotJudge(_OPERATORS[ch] + " inside double quotes")
        if ch == "\\":
            if command[i + 1 : i + 2] in ("$", "`"):
                raise CannotJudge("an escaped '$' or backtick inside double quotes")
            return quote, i + 1
    return quote, i


def _unquoted(command: str, i: int, word_start: bool) -> tuple[str | None, bool, int]:
    """One character outside quotes: the quote it opens, whether a word starts next, its end."""
    ch = command[i]
    if ch == "\\":
        if i + 1 >= len(command):
            raise CannotJudge("a trailing backslash")
        return None, False, i + 1
    if ch in "'\"":
        return ch, False, i
    if ch in " \t":
        return None, True, i
    if ch in _OPERATORS:
        raise CannotJudge(_OPERATORS[ch])
    if ch == "{" and not (word_start and command[i : i + 2] == "{}"):
        raise CannotJudge("a brace expansion")
    if word_start and ch in _WORD_START:
        raise CannotJudge(_WORD_START[ch])
    return None, False, i


def _scan(command: str) -> None:
    """Refuse what ``sh`` reads differently from ``shlex`` (see the module docstring)."""
    quote: str | None = None
    word_start = True
    i = 0
    while i < len(command):
        if quote is not None:
            quote, i = _quoted(command, i, quote)
        else:
            quote, word_start, i = _unquoted(command, i, word_start)
        i += 1
    if quote is not None:
        raise CannotJudge("an unclosed quote")


def _split(command: str) -> list[str]:
    _check_characters(command)
    _scan(command)
    argv = shlex.split(command, posix=True)
    if not argv:
        raise CannotJudge("an empty command")
    return argv


def _is_assignment(word: str) -> bool:
    name, sep, _ = word.partition("=")
    return bool(sep) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def _unwrap_env(argv: list[str]) -> list[str]:
    i = 1
    while i < len(argv):
        word = argv[i]
        if word in ("-i", "-", "--ignore-environment"):
            i += 1
        elif word == "-u" and i + 1 < len(argv):
            i += 2
        elif word.startswith("--unset="):
            i += 1
        elif word == "--":
            i += 1
            break
        elif word.startswith("-"):
            raise CannotJudge(f"'env {word}' (an option guardkit does not unwrap)")
        else:
            break
    rest = argv[i:]
    if rest and _is_assignment(rest[0]):
        raise CannotJudge(f"the variable assignment {rest[0].split('=')[0]}= (env)")
    return rest or argv


def _unwrap_shell(argv: list[str], depth: int) -> list[str]:
    i, script = 1, False
    while i < len(argv) and argv[i][:1] in ("-", "+") and argv[i] not in ("-", "--"):
        word = argv[i]
        if word.startswith("--") or "o" in word[1:]:
            raise CannotJudge(f"'{argv[0]} {word}' (an option guardkit does not unwrap)")
        script = script or "c" in word[1:]
        i += 1
    if not script:
        return argv
    if i >= len(argv):
        raise CannotJudge(f"'{argv[0]} -c' without a command")
    return _effective(_split(argv[i]), depth + 1)


def _effective(argv: list[str], depth: int) -> list[str]:
    if depth > _MAX_DEPTH:
        raise CannotJudge("wrappers nested too deeply")
    if _is_assignment(argv[0]):
        raise CannotJudge(f"the variable assignment {argv[0].split('=')[0]}=")
    program = argv[0].rsplit("/", 1)[-1]
    if program in _RUNNERS:
        raise CannotJudge(f"'{program}' (it runs another command guardkit does not unwrap)")
    if program == "env":
        rest = _unwrap_env(argv)
        return argv if rest is argv else _effective(rest, depth + 1)
    if program in _SHELLS:
        return _unwrap_shell(argv, depth)
    if program == "find" and _FIND_RUNS.intersection(argv):
        raise CannotJudge("'find -exec' (it runs another command guardkit does not unwrap)")
    if program == "busybox" and len(argv) > 1:
        return _effective(argv[1:], depth + 1)
    if program in _PLAIN_WRAPPERS and len(argv) > 1:
        rest = argv[1:]
        if rest[0] == _PLAIN_WRAPPERS[program]:
            rest = rest[1:]
        if rest and rest[0].startswith("-"):
            raise CannotJudge(f"'{program} {rest[0]}' (an option guardkit does not unwrap)")
        return _effective(rest, depth + 1) if rest else argv
    return argv


def command_argv(command: str | list[str]) -> list[str]:
    """The program and arguments ``command`` runs, wrappers unwrapped; ``CannotJudge`` if unsure.

    A list is taken as an argv already split (each word still checked for hidden characters).

    >>> command_argv("env git status --short")
    ['git', 'status', '--short']
    """
    if isinstance(command, str):
        return _effective(_split(command), 0)
    if not command:
        raise CannotJudge("an empty command")
    for word in command:
        _check_characters(word)
    return _effective(list(command), 0)
