from __future__ import annotations

from shop.aws_config import TOTAL_ATTEMPTS, client_config


def test_deployed_defaults_fit_inside_the_function_timeout(monkeypatch):
    monkeypatch.delenv("DYNAMODB_CONNECT_TIMEOUT", raising=False)
    monkeypatch.delenv("DYNAMODB_READ_TIMEOUT", raising=False)
    config = client_config()
    assert config.retries == {"mode": "standard", "total_max_attempts": TOTAL_ATTEMPTS}
    worst_case = TOTAL_ATTEMPTS * (config.connect_timeout + config.read_timeout)
    assert worst_case < 10, "the API functions' timeout is 10 s; the handler must still answer 503"


def test_timeouts_can_be_widened_for_a_slow_local_store(monkeypatch):
    monkeypatch.setenv("DYNAMODB_CONNECT_TIMEOUT", "5")
    monkeypatch.setenv("DYNAMODB_READ_TIMEOUT", "15")
    config = client_config()
    assert (config.connect_timeout, config.read_timeout) == (5, 15)
