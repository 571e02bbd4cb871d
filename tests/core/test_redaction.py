"""Redaction: a planted secret never survives, whatever surrounds it (hypothesis)."""

from __future__ import annotations

import string

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from acp_agent.failures.protocol import FailureKind, FailureObservation, baseline_error_data, baseline_error_message
from acp_agent.failures.redaction import MASK, MAX_LENGTH, Redactor, redact, secret_env_values

secret_text = st.text(alphabet=string.ascii_letters + string.digits + "-_.", min_size=8, max_size=40)
noise = st.text(max_size=200)


def test_secret_env_names() -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-123456", "GITHUB_TOKEN": "ghp_abcdef", "DB_PASSWORD": "hunter22",
           "X_CREDENTIALS": "creds-1234", "AWS_SECRET": "aws-secret-1", "PATH": "/usr/bin", "SHORT_KEY": "ab"}
    assert secret_env_values(env) == {"sk-ant-123456", "ghp_abcdef", "hunter22", "creds-1234", "aws-secret-1"}


@settings(max_examples=200)
@given(secret=secret_text, before=noise, after=noise)
def test_env_and_held_secrets_never_survive(secret: str, before: str, after: str) -> None:
    redactor = Redactor.from_environment({"VENDOR_API_KEY": secret})
    assert secret not in redactor(before + secret + after)
    held = Redactor()
    held.add(secret)
    assert secret not in held(before + secret + after)


@settings(max_examples=200)
@given(token=secret_text, before=noise, after=noise)
def test_bearer_tokens_never_survive(token: str, before: str, after: str) -> None:
    assume(token not in before + after)
    assert token not in redact(f"{before} Authorization: Bearer {token} {after}")


@settings(max_examples=200)
@given(user=st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=10), password=secret_text,
       before=noise)
def test_url_userinfo_never_survives(user: str, password: str, before: str) -> None:
    assume(password not in before)
    assert password not in redact(f"{before} https://{user}:{password}@api.example.test/v1")


@settings(max_examples=200)
@given(name=st.sampled_from(["api_key", "key", "token", "access_token", "API_KEY"]), value=secret_text)
def test_query_parameters_never_survive(name: str, value: str) -> None:
    assert value not in redact(f"GET https://x.test/v1/models?alt=1&{name}={value}&z=2")


@settings(max_examples=100)
@given(secret=secret_text, before=noise, after=noise)
def test_failure_data_and_messages_are_redacted(secret: str, before: str, after: str) -> None:
    redactor = Redactor.from_environment({"MY_TOKEN": secret})
    observation = FailureObservation(FailureKind.PROVIDER_ERROR, "server_error", before + secret + after,
                                     native_data={"raw": [before + secret, {"nested": secret + after}]})
    assert secret not in baseline_error_message(observation, redactor)
    assert secret not in repr(baseline_error_data(observation, redactor))
    title, details = observation.presented_title(redactor)
    assert secret not in title + (details or "")


def test_bounded() -> None:
    assert len(redact("x" * 10_000)) == MAX_LENGTH


@settings(max_examples=100)
@given(secret=secret_text)
def test_failure_data_keys_are_redacted_too(secret: str) -> None:
    """A provider's native data can carry a secret as an object key, at the top or nested."""
    redactor = Redactor.from_environment({"MY_TOKEN": secret})
    observation = FailureObservation(FailureKind.PROVIDER_ERROR, "server_error", "failed",
                                     native_data={secret: "top", "nested": {f"header {secret}": [{secret: 1}]}})
    data = baseline_error_data(observation, redactor)
    assert secret not in repr(data)
    assert data["nested"] == {f"header {MASK}": [{MASK: 1}]}
    assert data[MASK] == "top"
    assert redactor.data({secret: {secret: secret}}) == {MASK: {MASK: MASK}}
