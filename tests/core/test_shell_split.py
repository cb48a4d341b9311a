"""Shell-command splitting on an adversarial corpus: judged exactly as sh runs it, or refused."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from guardkit.rules.shell import CannotJudge, command_argv

SPLIT = [
    ("git status", ["git", "status"]),
    ("  git   status  ", ["git", "status"]),
    ("git\tstatus", ["git", "status"]),
    ("git commit -m 'fix; rm -rf /'", ["git", "commit", "-m", "fix; rm -rf /"]),
    ('git commit -m "a && b | c"', ["git", "commit", "-m", "a && b | c"]),
    ("echo '$(id)' '`id`' '$HOME'", ["echo", "$(id)", "`id`", "$HOME"]),
    ("echo a\\;b", ["echo", "a;b"]),
    ("echo \\$HOME", ["echo", "$HOME"]),
    ('echo "it\'s" \'say "hi"\'', ["echo", "it's", 'say "hi"']),
    ('echo "a\\"b" "c\\\\d"', ["echo", 'a"b', "c\\d"]),
    ("echo ''", ["echo", ""]),
    ("echo a=b", ["echo", "a=b"]),
    ("env rm -rf /", ["rm", "-rf", "/"]),
    ("/usr/bin/env -i -u PATH rm -rf /", ["rm", "-rf", "/"]),
    ("env -- ls", ["ls"]),
    ("sh -c 'rm -rf /'", ["rm", "-rf", "/"]),
    ('bash -c "rm -rf /tmp/x"', ["rm", "-rf", "/tmp/x"]),
    ("/bin/dash -ec 'ls -la'", ["ls", "-la"]),
    ("bash -x -c 'ls'", ["ls"]),
    ("env sh -c 'env bash -c \"ls\"'", ["ls"]),
    ("command -p ls", ["ls"]),
    ("exec rm x", ["rm", "x"]),
    ("nohup rm x", ["rm", "x"]),
    ("busybox rm x", ["rm", "x"]),
    ("busybox sh -c 'rm x'", ["rm", "x"]),
    ("sh script.sh", ["sh", "script.sh"]),
    ("env", ["env"]),
    ("find . -name '*.py'", ["find", ".", "-name", "*.py"]),
    # Lookalikes are words like any other: sh runs no program of full-width letters, nor splits
    # at a full-width semicolon.
    ("\uff52\uff4d -rf /", ["\uff52\uff4d", "-rf", "/"]),
    ("git status\uff1brm", ["git", "status\uff1brm"]),
    ("git status\u037erm", ["git", "status\u037erm"]),  # Greek question mark
    ("rm\u0430 x", ["rm\u0430", "x"]),  # Cyrillic a
]

REFUSED = [
    ("git status; rm -rf /", "';'"),
    ("git status && rm", "'&'"),
    ("git status || rm", "'|'"),
    ("git status & rm", "'&'"),
    ("cat x | sh", "pipe"),
    ("echo x > /etc/passwd", "redirection"),
    ("cat < /etc/shadow", "redirection"),
    ("(rm x)", "subshell"),
    ("echo $(rm x)", "'$'"),
    ("echo `rm x`", "backtick"),
    ("echo $HOME", "'$'"),
    ("echo ${HOME}", "'$'"),
    ('echo "$(rm x)"', "inside double quotes"),
    ('echo "`rm x`"', "inside double quotes"),
    ('echo "\\$HOME"', "escaped"),
    ("git status\nrm -rf /", "newline"),
    ("git status\r\nrm", "newline"),
    ("git status\u2028rm", "U+2028"),
    ("r\u200bm -rf /", "U+200B"),
    ("rm\u00a0-rf /", "U+00A0"),
    ("git status\u202e", "U+202E"),
    ("git\x00status", "U+0000"),
    ("git\x0bstatus", "U+000B"),
    ("ls *", "glob"),
    ("rm -rf /tm?", "glob"),
    ("rm [a-z]", "glob"),
    ("echo {a,b}", "brace"),
    ("cat ~/.ssh/id_rsa", "'~'"),
    ("ls # ; rm", "comment"),
    ("echo 'unclosed", "unclosed"),
    ('echo "unclosed', "unclosed"),
    ("echo x\\", "trailing backslash"),
    ("", "empty"),
    ("   ", "empty"),
    ("LD_PRELOAD=/tmp/x.so git status", "assignment"),
    ("env GIT_SSH_COMMAND=evil git fetch", "assignment"),
    ("env -S 'rm -rf /'", "option"),
    ("sudo rm -rf /", "sudo"),
    ("/usr/bin/sudo -u root rm", "sudo"),
    ("xargs rm < list", "redirection"),
    ("xargs rm", "xargs"),
    ("timeout 5 rm x", "timeout"),
    ("nice -n 5 rm x", "nice"),
    ("eval 'rm x'", "eval"),
    ("find / -exec rm {} \\;", "find -exec"),
    ("sh -c 'ls; rm x'", "';'"),
    ("bash -c", "without a command"),
    ("bash --rcfile x -c ls", "option"),
    ("sh -o errexit -c ls", "option"),
    ("env sh -c 'sudo rm'", "sudo"),
    ("exec exec exec exec exec ls", "nested"),
]


@pytest.mark.parametrize(("command", "argv"), SPLIT)
def test_split(command: str, argv: list[str]) -> None:
    assert command_argv(command) == argv


@pytest.mark.parametrize(("command", "words"), REFUSED)
def test_refused(command: str, words: str) -> None:
    with pytest.raises(CannotJudge) as caught:
        command_argv(command)
    assert words in str(caught.value), str(caught.value)


def test_an_argv_list_is_unwrapped_and_checked_too() -> None:
    assert command_argv(["env", "sh", "-c", "rm -rf /"]) == ["rm", "-rf", "/"]
    with pytest.raises(CannotJudge):
        command_argv(["sh", "-c", "ls; rm x"])
    with pytest.raises(CannotJudge):
        command_argv(["r\u200bm", "x"])
    with pytest.raises(CannotJudge):
        command_argv([])


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")
@pytest.mark.parametrize(
    ("command", "argv"), [(c, a) for c, a in SPLIT if c.split() and c.split()[0] == a[0]]
)
def test_the_split_is_what_sh_runs(command: str, argv: list[str]) -> None:
    """Where no wrapper is unwrapped, sh itself hands the program exactly these words."""
    script = 'for a in "$@"; do printf "%s\\0" "$a"; done'
    done = subprocess.run(
        ["sh", "-c", f"set -f; set -- {command}; {script}"],
        capture_output=True,
        check=True,
        timeout=10,
    )
    words = done.stdout.decode().split("\0")[:-1]
    assert words == argv
