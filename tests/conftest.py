import os

import pytest

from rlclimb.pipelines.scripted_server import ScriptedServer


@pytest.fixture
def llm_server():
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray (2 CPUs) whose workers can import the test modules (their actor classes)."""
    import ray

    tests = os.path.dirname(os.path.abspath(__file__))
    ray.init(address="local", num_cpus=2, include_dashboard=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}})
    try:
        yield ray
    finally:
        ray.shutdown()


BUCKET = "rlclimb-test"


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """A moto S3 server on a free port; AWS_* variables point boto/s3fs (and subprocesses) at it.
    One for the session: moto keeps its buckets per process, and the storage layer caches its
    filesystems (with the endpoint they were made for)."""
    s3fs = pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    fs.mkdir(BUCKET)
    try:
        yield fs
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()
