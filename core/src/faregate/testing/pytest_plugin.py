"""Pytest fixtures shipped with the core (entry point ``pytest11``), for Faregate's own
suite and for plugin authors:

* ``gateway`` — a gateway on SQLite (in a temp dir) served in the test's event loop,
  with every installed plugin; ``gateway.gateway`` is its internal state.
* ``admin`` — a root session on that gateway (``AdminClient``).
* ``module_gateway``, ``module_admin`` — the same, one for a whole test module, for tests that
  only read or only make changes that are refused (a test that writes uses rows of its own and
  never counts on the database being empty). Such tests run in the module's event loop: mark
  them ``@pytest.mark.asyncio(loop_scope="module")`` (or the module, with ``pytestmark``). An
  in-process gateway holds tortoise's one global context, so a module that uses these uses no
  other in-process gateway (``gateway``, ``make_gateway``) beside them.
* ``make_gateway`` — a factory for gateways with a chosen plugin set (a ``PluginSet``
  or a list of entry-point names), database or settings (stopped at teardown).
* ``mariadb_url``, ``postgres_url`` — a fresh database on the local MariaDB / PostgreSQL
  server (dropped afterwards); the test is skipped when the server is not there.

Async fixtures are function-scoped unless named ``module_…``: every test gets a fresh database. Fake upstreams
come with the plugins that speak their protocol, as their own ``pytest11`` entry points
(``fake_openai`` with faregate-adapter-openai, ``fake_anthropic`` with
faregate-adapter-anthropic), on the shared base :mod:`faregate.testing.fake_server`.
"""

from __future__ import annotations

import os
import ssl
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio

from faregate.testing.harness import AdminClient, GatewayServer

MARIADB_URL = os.environ.get("FAREGATE_TEST_MYSQL", "mysql://root:@127.0.0.1:3306/")
POSTGRES_URL = os.environ.get("FAREGATE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/")


def pytest_configure(config: pytest.Config) -> None:
    share_default_ssl_context()
    config.addinivalue_line("markers", "mariadb: needs the MariaDB server on 127.0.0.1:3306")
    config.addinivalue_line("markers", "postgres: needs the PostgreSQL server on 127.0.0.1:5432")
    config.addinivalue_line("markers", "allow_upstream_violations: the fake upstreams may receive requests that "
                                       "violate the vendor's request schema")
    config.addinivalue_line("markers", "real_password_hashing: hash passwords with the gateway's own argon2 "
                                       "parameters (other tests use argon2's profile for tests)")


def share_default_ssl_context() -> None:
    """Every ``httpx`` client (an ``openai`` or ``anthropic`` SDK client too) made with the
    default verification loads a CA bundle (certifi's, or ``SSL_CERT_FILE``'s) into a new SSL
    context: about 20 ms of CPU, and the suite makes thousands of clients (a test's own, the
    admin client, the start-up poll), nearly all for plain-HTTP loopback servers. In a test
    process the clients made the default way under the same ``SSL_CERT_FILE`` /
    ``SSL_CERT_DIR`` share one context; a client given its own ``verify`` or a certificate
    still gets a context of its own."""
    from httpx._transports import default as transports

    create = transports.create_ssl_context  # type: ignore[attr-defined]  # httpx imports it there
    if getattr(create, "shared_default", None) is not None:
        return
    shared: dict[tuple[bool, str, str], ssl.SSLContext] = {}

    def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
        if verify is not True or cert is not None:
            return create(verify=verify, cert=cert, trust_env=trust_env)
        environ = (os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", "")) if trust_env else ("", "")
        key = (trust_env, *environ)
        if key not in shared:
            shared[key] = create(verify=verify, cert=cert, trust_env=trust_env)
        return shared[key]

    create_ssl_context.shared_default = shared  # type: ignore[attr-defined]
    transports.create_ssl_context = create_ssl_context  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def cheap_password_hashing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2 with the gateway's parameters costs tens of milliseconds of CPU and 64 MiB a call by
    design: a test's root set-up and login (the ``admin`` fixture) spent about 0.5 s of CPU on it.
    In-process gateways hash with argon2's own profile for tests unless a test is marked
    ``real_password_hashing``; a gateway process (``GatewayProcess``) hashes as in production."""
    if request.node.get_closest_marker("real_password_hashing"):
        return
    _hash_cheaply(monkeypatch)


def _hash_cheaply(monkeypatch: pytest.MonkeyPatch) -> None:
    from argon2 import PasswordHasher, profiles

    from faregate.security import passwords

    monkeypatch.setattr(passwords, "_hasher", PasswordHasher.from_parameters(profiles.CHEAPEST))


@pytest_asyncio.fixture
async def make_gateway(tmp_path: Any) -> AsyncIterator[Callable[..., Awaitable[GatewayServer]]]:
    servers: list[GatewayServer] = []

    async def factory(*, db_url: str = "", plugins: Any = None, settings: dict[str, Any] | None = None,
                      data_dir: str | None = None) -> GatewayServer:
        directory = data_dir or str(tmp_path / f"gw{len(servers)}")
        if isinstance(plugins, list | tuple):  # entry-point names: load only these
            from faregate.plugins import load_plugins

            plugins = load_plugins(allow=list(plugins))
        server = GatewayServer(directory, db_url=db_url, plugins=plugins, settings=settings)
        await server.start()
        servers.append(server)
        return server

    yield factory
    for server in reversed(servers):
        await server.stop()


@pytest_asyncio.fixture
async def gateway(make_gateway: Callable[..., Awaitable[GatewayServer]]) -> GatewayServer:
    return await make_gateway()


@pytest_asyncio.fixture
async def admin(gateway: GatewayServer) -> AsyncIterator[AdminClient]:
    client = AdminClient(gateway.base_url)
    await client.setup_root()
    yield client
    await client.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayServer]:
    """One gateway (every installed plugin, SQLite) for all the tests of a module that use it: a
    gateway's build, start and stop cost about 0.3 s of CPU, more than most tests that use one.
    It hashes passwords with argon2's profile for tests (a module-scoped fixture starts before
    the function-scoped ``cheap_password_hashing``)."""
    with pytest.MonkeyPatch.context() as patch:
        _hash_cheaply(patch)
        server = GatewayServer(str(tmp_path_factory.mktemp("module_gateway")))
        await server.start()
        try:
            yield server
        finally:
            await server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_admin(module_gateway: GatewayServer) -> AsyncIterator[AdminClient]:
    """A root session on ``module_gateway``, shared by the module's tests like the gateway."""
    client = AdminClient(module_gateway.base_url)
    with pytest.MonkeyPatch.context() as patch:
        _hash_cheaply(patch)
        await client.setup_root()
    yield client
    await client.close()


def unique_db_name(prefix: str = "faregate_test") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@pytest_asyncio.fixture
async def mariadb_url() -> AsyncIterator[str]:
    """A fresh, uniquely named MariaDB/MySQL database (dropped afterwards); skips when
    the server or the ``faregate-storage-mysql`` plugin is missing."""
    from urllib.parse import unquote, urlsplit

    aiomysql = pytest.importorskip("aiomysql")
    pytest.importorskip("faregate_storage_mysql")
    parts = urlsplit(MARIADB_URL)
    import pymysql

    try:
        conn = await aiomysql.connect(host=parts.hostname or "127.0.0.1", port=parts.port or 3306,
                                      user=unquote(parts.username or "root"),
                                      password=unquote(parts.password or ""), autocommit=True, connect_timeout=5)
    except pymysql.err.OperationalError as exc:  # pragma: no cover - depends on the machine
        if exc.args[0] != 2003:  # only "can't connect" means no server; anything else is a failure
            raise
        pytest.skip(f"no MariaDB server: {exc}")
    name = unique_db_name()
    try:
        async with conn.cursor() as cur:
            await cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        yield f"{parts.scheme}://{parts.netloc}/{name}?maxsize=20"
    finally:
        async with conn.cursor() as cur:
            await cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        conn.close()


@pytest_asyncio.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A fresh, uniquely named PostgreSQL database (dropped afterwards); skips when the
    server or the ``faregate-storage-postgres`` plugin is missing."""
    from urllib.parse import unquote, urlsplit

    asyncpg = pytest.importorskip("asyncpg")
    pytest.importorskip("faregate_storage_postgres")
    parts = urlsplit(POSTGRES_URL)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5432
    try:
        conn = await asyncpg.connect(host=host, port=port, user=unquote(parts.username or "postgres"),
                                     password=unquote(parts.password) if parts.password else None,
                                     database="postgres", timeout=5)
    except OSError as exc:  # pragma: no cover - depends on the machine: refused or unreachable, no server
        pytest.skip(f"no PostgreSQL server at {host}:{port}: {exc}")
    name = unique_db_name()
    try:
        await conn.execute(f'CREATE DATABASE "{name}" ENCODING \'UTF8\' TEMPLATE template0')
        yield f"{parts.scheme}://{parts.netloc}/{name}?maxsize=20"
    finally:
        # FORCE: a test that failed half-way may have left connections open
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()
