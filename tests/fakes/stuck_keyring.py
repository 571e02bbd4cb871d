"""A keyring backend whose service never answers, as a locked keyring waiting for a person to
unlock it: an agent started with `PYTHON_KEYRING_BACKEND=tests.fakes.stuck_keyring.StuckKeyring`
(and the repository on `PYTHONPATH`) gets it from `keyring.get_keyring()`."""

from __future__ import annotations

import threading

from keyring.backend import KeyringBackend


class StuckKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        threading.Event().wait()  # never set
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        threading.Event().wait()

    def delete_password(self, service: str, username: str) -> None:
        threading.Event().wait()
