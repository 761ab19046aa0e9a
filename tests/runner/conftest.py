import pytest_asyncio

from _runner_util import FIXTURES, PYTHON
from gradlint.runner import WorkerClient

# the fixture modules are code under test, not tests
collect_ignore = ["fixtures"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client():
    """One warm worker per test module (starting one imports torch: seconds)."""
    c = WorkerClient(PYTHON, FIXTURES, max_parallel=2)
    await c.start()
    try:
        yield c
    finally:
        await c.close()
