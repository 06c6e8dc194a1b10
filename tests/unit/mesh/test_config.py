"""Configuration from the environment fails at start-up naming the variable."""

import pytest

from mesh.runtime.config import ConfigError, ServiceConfig


def test_defaults_come_from_the_topology() -> None:
    cfg = ServiceConfig.from_env("recommendation", {})
    assert cfg.listen_addr == "127.0.0.1:50053"
    assert cfg.dependencies == {"profile": "127.0.0.1:50052"}
    assert cfg.admin_addr.startswith("127.0.0.1:")


def test_gateway_has_three_dependencies() -> None:
    cfg = ServiceConfig.from_env("gateway", {"PAYMENT_ADDR": "toxiproxy:26054"})
    assert set(cfg.dependencies) == {"payment", "profile", "recommendation"}
    assert cfg.dependencies["payment"] == "toxiproxy:26054"


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"LISTEN_ADDR": "nonsense"}, "LISTEN_ADDR"),
        ({"PROFILE_ADDR": "host:notaport"}, "PROFILE_ADDR"),
        ({"SHUTDOWN_GRACE_S": "-1"}, "SHUTDOWN_GRACE_S"),
        ({"MAX_MESSAGE_BYTES": "lots"}, "MAX_MESSAGE_BYTES"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigError, match=var):
        ServiceConfig.from_env("recommendation", env)
