"""Joining a Ray cluster, and checking that its nodes share the run directory.

A run directory at a URL (s3://...) needs no mount: workers commit to the store, the driver
fetches each reported commit from it (commit.fetch_commit), and the probe goes through the store.

Workers commit their shards straight into the run directory, so every node must see the same
files at the same path (an NFS/Lustre/EFS mount, or a FUSE-mounted bucket). Ray cannot tell
us; a worker writing to its own local disk would lose its shards without a word. So the
executor probes each node before a run and checks every commit a worker reports: a shard the
driver cannot see fails the run loudly, naming the path and the fix.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

from .. import storage
from ..readers import InputError
from .commit import fetch_commit

SHARED_STORAGE_FIX = (
    "the run directory must be on storage every Ray node mounts at the same path "
    "(NFS, Lustre, EFS, a FUSE-mounted bucket) or at a URL every node can reach (s3://...); "
    "put --out there, or run with --engine local"
)


class CommitNotVisible(InputError):
    """A worker committed a shard that the driver does not see: the run dir is not shared."""


def _ray():
    try:
        import ray
    except ImportError:
        raise InputError("the ray engine needs Ray: pip install 'rlclimb[ray]'") from None
    return ray


def connect(address: str | None, workers: int) -> bool:
    """Join the cluster at `address` (else RAY_ADDRESS), or start a local Ray with `workers`
    CPUs. Returns whether we started Ray (then we shut it down). A cluster decides its own
    resources: ray.init refuses num_cpus/num_gpus when connecting to one."""
    ray = _ray()
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    # Worker logs go to the driver's stderr (prefixed with the worker's pid and node).
    kwargs = {"log_to_driver": True, "configure_logging": False}
    if address:
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError) as e:
            raise InputError(f"cannot connect to the Ray cluster at {address}: {str(e).splitlines()[0]}") from None
    else:
        # "local": a new instance, even when another one on this machine left its address behind
        ray.init(address="local", num_cpus=max(workers, 1), include_dashboard=False, **kwargs)
    return True


def cluster_cpus() -> int:
    """CPUs of the whole cluster: the default number of shards in flight."""
    return max(1, int(_ray().cluster_resources().get("CPU", 1)))


def _probe(path: str, token: str, reply: str) -> dict:
    """On one node: read what the driver wrote, write a reply the driver must see."""
    seen = None
    try:
        seen = storage.read_text(path)
        storage.write_text(reply, token)
    except OSError:
        pass
    return {"node": socket.gethostname(), "ip": _node_ip(), "seen": seen == token}


def _node_ip() -> str:
    try:
        import ray

        return ray.util.get_node_ip_address()
    except Exception:
        return "?"


def check_shared_storage(run_dir: Path) -> None:
    """Every alive node reads a file the driver wrote in the run directory and writes one back;
    raise CommitNotVisible naming the first node that does not share it."""
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe_dir = storage.url_of(run_dir) + "/tmp"  # a run at a URL: probe the store itself
    if not storage.is_url(probe_dir):
        Path(probe_dir).mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    path = f"{probe_dir}/storage-probe-{token}"
    storage.write_text(path, token)
    probe = ray.remote(num_cpus=0)(_probe)
    refs, replies = [], []
    try:
        for node in ray.nodes():
            if not node.get("Alive"):
                continue
            reply = f"{path}.{node['NodeID'][:12]}"
            replies.append(reply)
            strategy = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            refs.append((node, reply, probe.options(scheduling_strategy=strategy).remote(str(path), token, str(reply))))
        for node, reply, ref in refs:
            r = ray.get(ref, timeout=300)
            where = f"Ray node {node.get('NodeManagerAddress', r['ip'])} ({r['node']})"
            if not r["seen"]:
                raise CommitNotVisible(f"{where} cannot read {path}, which the driver wrote: {SHARED_STORAGE_FIX}")
            if not storage.exists(reply):
                raise CommitNotVisible(f"the driver cannot see {reply}, which {where} wrote: {SHARED_STORAGE_FIX}")
    finally:
        for f in [path, *replies]:
            storage.remove(f)


def check_commit(seg_dir: Path, i: int, node: str) -> None:
    """A worker said it committed shard i: its marker must be visible here, or we would lose it."""
    fetch_commit(Path(seg_dir), i)  # a run at a URL: the worker committed to the store
    marker = Path(seg_dir) / f"part-{i:05d}.done.json"
    if not marker.exists():
        raise CommitNotVisible(
            f"shard {i} was committed by a worker on {node}, but {marker} is not visible to the driver "
            f"(nothing was lost yet: rerun once fixed, committed shards are kept): {SHARED_STORAGE_FIX}"
        )
