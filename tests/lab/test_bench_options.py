"""`python -m litellm_kvwarm.lab.bench` arguments → the run's options (no processes)."""

from __future__ import annotations

import pytest

from litellm_kvwarm.lab.bench.__main__ import bench_options, build_parser


def _options(*argv: str):
    parser = build_parser()
    return bench_options(parser, parser.parse_args(list(argv)), list(argv))


def test_think_time_reaches_the_replay_and_defaults_to_back_to_back():
    assert _options().replay.think_time_s == 0.0
    options = _options("--think-time", "6", "--quick")
    assert options.replay.think_time_s == 6.0
    assert options.replay.max_tokens == _options().replay.max_tokens  # nothing else of the replay moved
    assert options.command == "python -m litellm_kvwarm.lab.bench --think-time 6 --quick"


def test_a_negative_think_time_is_refused(capsys):
    with pytest.raises(SystemExit):
        _options("--think-time", "-1")
    assert "--think-time must be >= 0" in capsys.readouterr().err


def test_the_vllm_scale_replays_only():
    options = _options("--scale", "vllm", "--think-time", "3")
    assert options.arms == ("a", "b", "c", "d", "e") and options.throughput is None and options.interference is None
    assert not options.cost and options.replay.think_time_s == 3.0
