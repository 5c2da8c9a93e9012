"""Trust: nothing listens beyond this machine, TLS to a remote scheduler, names stay in the store.

The listening test starts the real embedded cluster through ``dask_client`` and reads the
LISTEN sockets of this process and of its worker processes from the kernel (psutil), so it fails if
any Dask server binds a non-loopback address or if ``cluster.dashboard=false`` still serves HTTP.
"""

from __future__ import annotations

import ipaddress
import shutil
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from distributed import LocalCluster
from distributed.security import Security
from omegaconf import DictConfig, OmegaConf

from esbench.config.schema import ClusterConfig, ClusterSecurityConfig
from esbench.runtime.cluster import ClusterError, dask_client, security_from_config
from esbench.tracking.store import RunStore
from esbench.utils.paths import check_path_component
from tests.conftest import SMALL, esbench


def _listening(skip: frozenset[int] = frozenset()) -> dict[int, set[tuple[str, int]]]:
    """pid -> (ip, port) of every LISTEN socket of this process and its descendants but ``skip``."""
    me = psutil.Process()
    out: dict[int, set[tuple[str, int]]] = {}
    for proc in (me, *me.children(recursive=True)):
        if proc.pid in skip:
            continue
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        out[proc.pid] = {(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN}
    return out


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def _local_cfg(dashboard: bool) -> DictConfig:
    return OmegaConf.structured(ClusterConfig(n_workers=1, dashboard=dashboard, monitor_interval_s=2.0))


@pytest.mark.parametrize("dashboard", [True, False], ids=["dashboard", "no-dashboard"])
def test_local_cluster_listens_on_loopback_only(dashboard: bool) -> None:
    me = psutil.Process().pid
    older_children = frozenset(p.pid for p in psutil.Process().children(recursive=True))
    before = _listening()[me]
    with dask_client(_local_cfg(dashboard), quiet=True) as client:
        listening = _listening(skip=older_children)
        info = client.scheduler_info(n_workers=-1)
        worker_comm = {_port(addr) for addr in info["workers"]}
        nanny = {_port(w["nanny"]) for w in info["workers"].values()}
        worker_http = set(client.run(lambda dask_worker: dask_worker.http_server.port).values())
        link = client.dashboard_link

        assert len(listening) >= 2  # this process and its worker process
        for pid, socks in listening.items():
            for ip, port in socks:
                assert ipaddress.ip_address(ip).is_loopback, f"pid {pid} listens on {ip}:{port}"

        driver = {port for _, port in listening[me] - before}
        children = {port for pid, socks in listening.items() if pid != me for _, port in socks}
        assert children == worker_comm | worker_http  # a worker: its comm and its health/metrics
        served = driver - {_port(info["address"])} - nanny
        if dashboard:
            (dash,) = served  # exactly one more: the dashboard, on 127.0.0.1
            assert link == f"http://127.0.0.1:{dash}/status"
            with urllib.request.urlopen(link, timeout=10) as page:
                assert page.status == 200
            for ip in _other_local_ips():  # not reachable through the machine's other addresses
                with pytest.raises(OSError):
                    socket.create_connection((ip, dash), timeout=2).close()
        else:
            assert served == set()  # no HTTP server in the scheduler at all
            assert not link
            assert "dashboard" not in info["services"]


def _other_local_ips() -> list[str]:
    """This machine's non-loopback IPv4 addresses."""
    return [
        a.address
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family == socket.AF_INET and not ipaddress.ip_address(a.address).is_loopback
    ]


# --- TLS to a remote scheduler (cluster=address) --------------------------------------------------


def _address_cfg(address: str, **security: Any) -> DictConfig:
    sec = ClusterSecurityConfig(**security)
    return OmegaConf.structured(
        ClusterConfig(kind="address", address=address, connect_timeout_s=5.0, security=sec)
    )


def _self_signed(directory: Path, name: str) -> tuple[str, str]:
    """(cert, key) of a self-signed EC certificate made with the openssl command line; the
    certificate is its own CA, as in Dask's TLS examples."""
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", f"/CN={name}"],
        check=True, capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """A real scheduler and worker that speak only mutual TLS on 127.0.0.1: (address, cert, key)."""
    assert shutil.which("openssl"), "the openssl command line makes the test certificates"
    cert, key = _self_signed(tmp_path_factory.mktemp("tls"), "esbench-test-ca")
    files = dict(tls_ca_file=cert, tls_scheduler_cert=cert, tls_scheduler_key=key)
    files |= dict(tls_worker_cert=cert, tls_worker_key=key, tls_client_cert=cert, tls_client_key=key)
    security = Security(require_encryption=True, **files)
    with LocalCluster(
        n_workers=1,
        processes=False,
        protocol="tls://",
        host="127.0.0.1",
        dashboard_address=None,
        security=security,
    ) as cluster:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
        yield cluster.scheduler_address, cert, key


def test_tls_config_maps_onto_dask_security(tmp_path: Path) -> None:
    ca, cert, key = (tmp_path / n for n in ("ca.pem", "cert.pem", "key.pem"))
    for p in (ca, cert, key):
        p.write_text("-----BEGIN CERTIFICATE-----\n")
    sec = security_from_config(
        _address_cfg("tls://h:8786", tls_ca_file=str(ca), tls_client_cert=str(cert), tls_client_key=str(key))
    )
    assert isinstance(sec, Security) and sec.require_encryption
    tls = sec.get_tls_config_for_role("client")
    assert (tls["ca_file"], tls["cert"], tls["key"]) == (str(ca), str(cert), str(key))
    assert security_from_config(_address_cfg("tcp://h:8786")) is None  # no TLS asked: Dask's own config
    with pytest.raises(
        ClusterError, match=r"^cluster\.security\.tls_client_key='/nope\.pem': no readable file"
    ):
        security_from_config(
            _address_cfg(
                "tls://h:8786", tls_ca_file=str(ca), tls_client_cert=str(cert), tls_client_key="/nope.pem"
            )
        )
    with pytest.raises(ClusterError, match=r"^cluster\.address='tcp://h:8786' is not encrypted"):
        security_from_config(_address_cfg("tcp://h:8786", require_encryption=True))
    with pytest.raises(ClusterError, match=r"^cluster\.address='tls://h:8786' needs certificates"):
        security_from_config(_address_cfg("tls://h:8786"))


def test_client_reaches_a_tls_scheduler_with_its_certificate(tls_cluster: tuple[str, str, str]) -> None:
    address, cert, key = tls_cluster
    cfg = _address_cfg(address, tls_ca_file=cert, tls_client_cert=cert, tls_client_key=key)
    with dask_client(cfg, quiet=True) as client:
        assert client.submit(lambda x: x + 1, 41).result() == 42
        assert client.scheduler.address.startswith("tls://")


def test_tls_scheduler_refuses_a_client_from_another_ca(
    tls_cluster: tuple[str, str, str], tmp_path: Path
) -> None:
    address, _, _ = tls_cluster
    other_cert, other_key = _self_signed(tmp_path, "intruder")
    cfg = _address_cfg(address, tls_ca_file=other_cert, tls_client_cert=other_cert, tls_client_key=other_key)
    cfg.connect_timeout_s = 2.0
    with pytest.raises(ClusterError, match="the TLS handshake failed"), dask_client(cfg, quiet=True):
        pass


# --- names that become directories ----------------------------------------------------------------

BAD_NAMES = ["..", "../x", "a/b", "/abs", "a\\b", ".hidden", "", "-rf", "x..y", "a b", "é", "a\nb", "x" * 129]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_unsafe_names_are_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^experiment=.* is not a safe directory name; allowed: "):
        check_path_component("experiment", name)
    with pytest.raises(ValueError, match="run_id="):
        RunStore(tmp_path, "ok", name)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "name", ["default", "table1", "openai_es-halfcheetah-v5-s0-1a2b3c4d", "a.b+c=d", "_x"]
)
def test_plain_names_are_accepted(name: str) -> None:
    assert check_path_component("run_id", name) == name


def test_clear_never_deletes_outside_the_store(tmp_path: Path) -> None:
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "thesis.tex").write_text("keep me")
    root = tmp_path / "runs"
    (root / "exp").mkdir(parents=True)
    (root / "exp" / "linked").symlink_to(outside)  # a run directory that points elsewhere
    with pytest.raises(ValueError, match="outside the results store"):
        RunStore(root, "exp", "linked").clear()
    assert (outside / "thesis.tex").read_text() == "keep me"

    store = RunStore(root, "exp", "run")
    (store.dir / "sub").mkdir(parents=True)
    (store.dir / "sub" / "a.txt").write_text("x")
    (store.dir / "to-outside").symlink_to(outside)  # removed as a link, never followed
    store.clear()
    assert list(store.dir.iterdir()) == [] and (outside / "thesis.tex").exists()


@pytest.mark.parametrize("override", ["experiment=../escaped", "run_id=../../escaped"])
def test_cli_refuses_unsafe_names_before_any_work(override: str, tmp_path: Path) -> None:
    results = tmp_path / "store" / "runs"
    proc = esbench("run", *SMALL, "env=inverted_pendulum", f"results_dir={results}", override, check=False)
    key, _, value = override.partition("=")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"esbench: error: {key}={value!r} is not a safe directory name"
    )
    assert "allowed:" in lines[0]
    assert list(tmp_path.rglob("*")) == []  # nothing created, inside the store or beside it
