"""``--format json`` writes what ``json.dumps(..., indent=2, ensure_ascii=False)`` writes
(``indented_json`` builds the same text without the json module's Python encoder)."""

from __future__ import annotations

import json
import random

from gradlint.cli.output import indented_json


def _value(chance: random.Random, depth: int) -> object:
    kind = chance.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return chance.choice(["", 'a"b\\', "ü\n\t\x01", "完成", "\u2028"])
    if kind == 1:
        return chance.randrange(-5, 10 ** 6)
    if kind == 2:
        return chance.choice([None, True, False])
    if kind == 3:
        return chance.choice([1.5, float("nan"), -0.0])  # (floats go to json.dumps)
    if kind == 4:
        return chance.choice([[], {}, ()])
    if kind == 5:
        return [_value(chance, depth + 1) for _ in range(chance.randrange(4))]
    if kind == 6:
        return {str(i) + chance.choice(["", '"', "é"]): _value(chance, depth + 1)
                for i in range(chance.randrange(4))}
    return tuple(_value(chance, depth + 1) for _ in range(chance.randrange(3)))


def test_the_same_text_as_json_dumps():
    chance = random.Random(26)
    for _ in range(3000):
        value = _value(chance, 0)
        assert indented_json(value) == json.dumps(value, indent=2, ensure_ascii=False)
    assert indented_json({1: [2]}) == json.dumps({1: [2]}, indent=2)  # (non-string keys too)
