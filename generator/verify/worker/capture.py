"""What a cell writes to stdout and stderr, capped: the head and the tail are kept."""

from __future__ import annotations

OUTPUT_CAP = 64 * 1024  # bytes kept per stream: the first and the last half of it


class Capture:
    """Keeps the head and the tail of a stream, and how much was dropped in between."""

    def __init__(self):
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = OUTPUT_CAP // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > OUTPUT_CAP:
                del self.tail[: len(self.tail) - OUTPUT_CAP // 2]

    @property
    def cut(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        if self.cut:
            dropped = self.total - len(self.head) - len(self.tail)
            middle = f"\n[... {dropped} bytes of output cut ...]\n".encode()
            data = bytes(self.head) + middle + bytes(self.tail)
        else:
            data = bytes(self.head) + bytes(self.tail)
        return data.decode("utf-8", errors="replace")
