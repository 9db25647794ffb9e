"""Java source text: literals, comments, names and imports the exported test is written with."""

from __future__ import annotations

import re
from typing import Iterable

__all__ = ["INDENT", "java_string", "comment", "java_long", "millis", "class_name", "IMPORTS", "imports", "indented"]

INDENT = "    "


def java_string(value: str | None) -> str:
    """A Java string literal (ASCII only, so the file compiles under any source encoding), or ``null``."""
    if value is None:
        return "null"
    escaped = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = []
    for char in value:
        if char in escaped:
            out.append(escaped[char])
        elif " " <= char <= "~":
            out.append(char)
        else:
            encoded = char.encode("utf-16-be")
            out.extend(f"\\u{encoded[i] << 8 | encoded[i + 1]:04x}" for i in range(0, len(encoded), 2))
    return '"' + "".join(out) + '"'


def comment(value: str) -> str:
    """Text safe in a ``//`` comment: printable ASCII, backslashes doubled (javac reads ``\\u`` even there)."""
    return "".join(char if " " <= char <= "~" else "?" for char in value).replace("\\", "\\\\")


def java_long(value: int) -> str:
    return f"{value}L"


def millis(value: int) -> str:
    return f"Duration.ofMillis({value})"


def class_name(text: str) -> str:
    """A Java class name for a scenario: its words in CamelCase, ``Test`` at the end (``002_1_stream`` gives
    ``Join002_1StreamTest``)."""
    words = [word for word in re.split(r"[^0-9A-Za-z]+", text) if word]
    name = ""
    for word in words:
        if name and name[-1].isdigit() and word[0].isdigit():
            name += "_"
        name += word[0].upper() + word[1:]
    if not name or name[0].isdigit():
        name = "Join" + name
    return name if name.endswith("Test") else name + "Test"


IMPORTS = {
    name.rsplit(".", 1)[-1]: name
    for name in (
        "java.time.Duration",
        "java.nio.file.Path",
        "java.util.ArrayList",
        "java.util.Arrays",
        "java.util.List",
        "java.util.Properties",
        "java.util.function.Function",
        "org.apache.kafka.common.serialization.Serdes",
        "org.apache.kafka.common.serialization.StringDeserializer",
        "org.apache.kafka.common.serialization.StringSerializer",
        "org.apache.kafka.common.utils.Bytes",
        "org.apache.kafka.streams.StreamsBuilder",
        "org.apache.kafka.streams.kstream.Windowed",
        "org.apache.kafka.streams.kstream.TimeWindows",
        "org.apache.kafka.streams.kstream.SessionWindows",
        "org.apache.kafka.streams.kstream.SlidingWindows",
        "org.apache.kafka.streams.kstream.EmitStrategy",
        "org.apache.kafka.streams.kstream.Suppressed",
        "org.apache.kafka.streams.kstream.Grouped",
        "org.apache.kafka.streams.KeyValue",
        "org.apache.kafka.streams.StreamsConfig",
        "org.apache.kafka.streams.TestInputTopic",
        "org.apache.kafka.streams.TestOutputTopic",
        "org.apache.kafka.streams.TopologyTestDriver",
        "org.apache.kafka.streams.kstream.Consumed",
        "org.apache.kafka.streams.kstream.JoinWindows",
        "org.apache.kafka.streams.kstream.Joined",
        "org.apache.kafka.streams.kstream.KStream",
        "org.apache.kafka.streams.kstream.KTable",
        "org.apache.kafka.streams.kstream.GlobalKTable",
        "org.apache.kafka.streams.kstream.KeyValueMapper",
        "org.apache.kafka.streams.kstream.Materialized",
        "org.apache.kafka.streams.kstream.Produced",
        "org.apache.kafka.streams.kstream.StreamJoined",
        "org.apache.kafka.streams.kstream.ValueJoiner",
        "org.apache.kafka.streams.state.KeyValueStore",
        "org.apache.kafka.streams.state.Stores",
        "org.apache.kafka.streams.test.TestRecord",
        "org.junit.jupiter.api.Test",
        "org.junit.jupiter.api.io.TempDir",
    )
}


def imports(body: str) -> list[str]:
    """The imports the body uses, sorted (java.*, then the others), and JUnit's assertEquals."""
    used = sorted(IMPORTS[name] for name in IMPORTS if re.search(rf"\b{name}\b", body))
    java = [name for name in used if name.startswith("java.")]
    others = [name for name in used if not name.startswith("java.")]
    lines = [f"import {name};" for name in java]
    lines += [""] + [f"import {name};" for name in others]
    lines += ["", "import static org.junit.jupiter.api.Assertions.assertEquals;"]
    return lines


def indented(lines: Iterable[str], depth: int) -> list[str]:
    return [INDENT * depth + line if line else "" for line in "\n".join(lines).split("\n")]
