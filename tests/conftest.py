import pytest

from rlclimb.pipelines.scripted_server import ScriptedServer


@pytest.fixture
def llm_server():
    with ScriptedServer() as server:
        yield server
