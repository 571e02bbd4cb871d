"""Client-minted UUIDv7 ids (RFC 9562) for MSP `commandId`s and new session ids.

Strictly increasing within one minter, also for ids minted in the same millisecond (a 12-bit
sequence in `rand_a`), so a host can order commands by id as well as by arrival.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable

from attrs import define


@define
class UuidV7Minter:
    clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000
    last_ms: int = -1
    sequence: int = 0

    def __call__(self) -> str:
        now = self.clock_ms()
        if now <= self.last_ms:
            now = self.last_ms
            self.sequence += 1
            if self.sequence > 0x0FFF:
                now += 1
                self.sequence = 0
        else:
            self.sequence = 0
        self.last_ms = now
        raw = bytearray(secrets.token_bytes(16))
        raw[0:6] = now.to_bytes(6, "big")
        raw[6] = 0x70 | (self.sequence >> 8)
        raw[7] = self.sequence & 0xFF
        raw[8] = (raw[8] & 0x3F) | 0x80
        return str(uuid.UUID(bytes=bytes(raw)))


mint = UuidV7Minter()


def is_uuid7(value: str) -> bool:
    try:
        parsed = uuid.UUID(value)
    except (TypeError, ValueError):
        return False
    return parsed.version == 7 and parsed.variant == uuid.RFC_4122 and str(parsed) == value
