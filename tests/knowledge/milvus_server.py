"""A real Milvus standalone server for tests: the `milvus` package's `milvus-server` (Milvus
2.3.5 with embedded etcd and local storage), started on free ports, stopped with its children.

    server = MilvusServerProcess(data_dir)
    uri = server.start()      # "http://127.0.0.1:PORT", answering, or an error with the log tail
    ...
    server.stop()             # the wrapper and the milvus binary it runs, both gone

Ports: every port milvus-server takes from its config template is given a free one (the wrapper
treats a given port as the first to try and moves up past a busy one, so the proxy's real port is
read back from the config it wrote); the embedded etcd's client and peer ports come from an etcd
config file, as etcd's peer port (2380) is not in the template. Milvus 2.3.5 listens with ":PORT",
on every interface, and has no setting to narrow that; its components are told to advertise
127.0.0.1 so they reach each other over loopback.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

# The wrapper's configurable ports (milvus/data/config.yaml.template, keys ending in _port).
TEMPLATE_PORTS = (
    "etcd_port",
    "root_coord_port",
    "proxy_port",
    "proxy_internal_port",
    "query_coord_port",
    "query_node_port",
    "index_coord_port",
    "index_node_port",
    "data_coord_port",
    "data_node_port",
)
# Components whose advertised address defaults to the machine's first non-loopback address.
COMPONENTS = ("ROOTCOORD", "PROXY", "QUERYCOORD", "QUERYNODE", "INDEXCOORD", "INDEXNODE", "DATACOORD", "DATANODE")


class MilvusServerError(RuntimeError):
    """The server exited or did not answer in time (the message holds its log's tail)."""


def free_ports(count: int) -> list[int]:
    """Ports free on every interface (Milvus binds ":PORT"), all distinct: each is held open
    until all are chosen."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("", 0))
            ports.append(sock.getsockname()[1])
        return ports


class MilvusServerProcess:
    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.proc: subprocess.Popen | None = None
        self.uri: str | None = None
        self.started_in_s: float | None = None

    def start(self, timeout_s: float = 120) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        ports = dict(zip(TEMPLATE_PORTS, free_ports(len(TEMPLATE_PORTS) + 1), strict=False))
        etcd_peer = free_ports(1)[0]
        while etcd_peer in ports.values():
            etcd_peer = free_ports(1)[0]
        etcd_config = self.data_dir / "embed-etcd.yaml"
        client_url, peer_url = f"http://127.0.0.1:{ports['etcd_port']}", f"http://127.0.0.1:{etcd_peer}"
        etcd_config.write_text(
            f"listen-client-urls: {client_url}\nadvertise-client-urls: {client_url}\n"
            f"listen-peer-urls: {peer_url}\ninitial-advertise-peer-urls: {peer_url}\n"
            f"initial-cluster: default={peer_url}\n",
            encoding="utf-8",
        )
        # Milvus reads any setting from the environment too (etcd.config.path <- ETCD_CONFIG_PATH).
        env = {
            **os.environ,
            "ETCD_CONFIG_PATH": str(etcd_config),
            "PYTHONUNBUFFERED": "1",
            **{f"{component}_IP": "127.0.0.1" for component in COMPONENTS},
        }
        args = [f"--{key.replace('_', '-')}={port}" for key, port in ports.items()]
        log = open(self.data_dir / "milvus-server.log", "w", encoding="utf-8")
        started = time.monotonic()
        # Its own session: stop() signals the wrapper and the milvus binary it started as one group.
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "import milvus; milvus.main()", "--data", str(self.data_dir), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        log.close()
        try:
            self.uri = f"http://127.0.0.1:{self._proxy_port(started + timeout_s)}"
            self._wait_until_it_answers(started + timeout_s)
        except BaseException:
            self.stop()
            raise
        self.started_in_s = time.monotonic() - started
        return self.uri

    def _proxy_port(self, deadline: float) -> int:
        """The proxy's port as the wrapper wrote it into its config (it may have moved up)."""
        config = self.data_dir / "configs" / "milvus.yaml"
        while time.monotonic() < deadline:
            self._check_alive()
            if config.is_file():
                found = re.search(r"^proxy:\n(?:  .*\n|\s*\n)*?  port: (\d+)", config.read_text(encoding="utf-8"), re.M)
                if found:
                    return int(found.group(1))
            time.sleep(0.2)
        raise MilvusServerError(f"milvus-server wrote no config in time\n{self.log_tail()}")

    def _wait_until_it_answers(self, deadline: float) -> None:
        from pymilvus import MilvusClient, MilvusException

        last = None
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                client = MilvusClient(self.uri, timeout=5)
                try:
                    client.list_collections()
                    return
                finally:
                    client.close()
            except MilvusException as exc:
                last = exc
            time.sleep(1)
        raise MilvusServerError(f"Milvus at {self.uri} did not answer in time ({last})\n{self.log_tail()}")

    def _check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise MilvusServerError(f"milvus-server exited with {self.proc.returncode}\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        texts = []
        for name in ("milvus-server.log", "logs/milvus-stderr.log"):
            path = self.data_dir / name
            if path.is_file():
                texts.append(f"--- {path}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(texts)

    def stop(self, grace_s: float = 5) -> None:
        """SIGTERM to the whole group, SIGKILL to what is left after grace_s (Milvus with data
        takes over 20 s to stop gracefully, and a test server's data is thrown away); returns once
        no process of the group is alive."""
        if self.proc is None:
            return
        group = self.proc.pid
        try:
            os.killpg(group, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + grace_s
        while group_members(group) and time.monotonic() < deadline:
            self.proc.poll()  # reap the wrapper: a zombie still counts as a member
            time.sleep(0.2)
        if group_members(group):
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while group_members(group) and time.monotonic() < deadline:
            time.sleep(0.2)  # the binary, orphaned by the wrapper's exit, is reaped by init
        left = group_members(group)
        self.proc = None
        if left:
            raise MilvusServerError(f"processes of milvus-server's group {group} still alive: {left}")

    def remove_data(self) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)


def group_members(group: int) -> list[int]:
    """Live (not zombie) processes in a process group, read from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after its last ")"
        fields = text[text.rindex(")") + 2 :].split()
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members
